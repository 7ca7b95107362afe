"""Tactics as data: the file loads, every tactic yields a valid child or says why not, genomes stay canonical."""

import random

import pytest

from agent import genome as genome_mod
from agent import tactics
from agent.learn import knowledge
from agent.ir_edit import NotApplicable
from compiler.ir.text import parse_kernel, print_kernel
from compiler.verify import has_errors, verify

FIXED = {"d": 128, "dtype": "bf16"}
SEED = genome_mod.Genome("kmeans_assign_sm90a", {"block_k": 128, "stages": 3, "consumers": 2}, {})
TACTICS, VERSION = tactics.load(knowledge.PACKAGE_DIR, SEED.family)


def _subject(g=SEED):
    return tactics.Subject(genome_mod.materialize(g, FIXED), g)


def test_the_knowledge_file_loads_with_a_version():
    assert VERSION >= 1
    assert {"stages_up", "rebalance_registers", "defer_lane_reduction", "drop_rewrite"} <= set(TACTICS)


@pytest.mark.parametrize("name", sorted(TACTICS))
def test_every_tactic_gives_a_printable_child_or_not_applicable(name):
    try:
        child = tactics.apply(TACTICS[name], _subject(), FIXED, random.Random(0))
    except NotApplicable:
        return
    assert parse_kernel(print_kernel(child.kernel)).kernel == child.kernel
    assert child.genome != SEED
    assert genome_mod.materialize(child.genome, FIXED) == child.kernel


def test_param_tactics_step_along_the_family_space():
    child = tactics.apply(TACTICS["stages_up"], _subject(), FIXED, random.Random(0))
    assert child.genome.params["stages"] == 4
    assert not has_errors(verify(child.kernel))
    top = genome_mod.Genome(SEED.family, dict(SEED.params, block_k=256), {})
    with pytest.raises(NotApplicable, match="cannot step"):
        tactics.apply(TACTICS["block_k_up"], _subject(top), FIXED, random.Random(0))


def test_selectors_and_deltas_resolve_to_concrete_args():
    child = tactics.apply(TACTICS["consumer_registers_down"], _subject(), FIXED, random.Random(0))
    assert child.genome.rewrites == {"registers:mma": {"role": "mma", "value": 224}}
    child = tactics.apply(TACTICS["swizzle_ring_64b"], _subject(), FIXED, random.Random(0))
    assert child.genome.rewrites == {"swizzle:sCols": {"region": "sCols", "mode": "64b"}}


def test_register_choices_replace_each_other():
    g = SEED.with_rewrite("registers:mma", {"role": "mma", "value": 224})
    g = g.with_rewrite("rebalance_registers", {"producer": 24})
    assert list(g.rewrites) == ["rebalance_registers"]


def test_rewrites_survive_a_param_change():
    g = SEED.with_rewrite("defer_lane_reduction", {})
    child = tactics.apply(TACTICS["consumers_down"], _subject(g), FIXED, random.Random(0))
    assert child.genome.rewrites == g.rewrites and child.genome.params["consumers"] == 1


def test_ir_without_a_genome_takes_rewrites_but_not_param_moves():
    subject = tactics.Subject(_subject().kernel, None)
    child = tactics.apply(TACTICS["unroll_main_2"], subject, FIXED, random.Random(0))
    assert child.genome is None and child.kernel != subject.kernel
    with pytest.raises(NotApplicable, match="no genome"):
        tactics.apply(TACTICS["stages_up"], subject, FIXED, random.Random(0))


@pytest.mark.parametrize("bad,why", [
    ({"tactics": []}, "no tactics"),
    ({"tactics": [{"name": "a", "kind": "jump"}]}, "kind"),
    ({"tactics": [{"name": "a", "kind": "rewrite", "rewrite": "warp_speed"}]}, "unknown rewrite"),
    ({"tactics": [{"name": "a", "kind": "param", "param": "stages"}]}, "non-zero step"),
    ({"tactics": [{"name": "a", "kind": "drop", "weight": 0}]}, "positive"),
    ({"tactics": [{"name": "m", "kind": "macro", "steps": ["x", "y"]}]}, "steps must name rewrite tactics"),
    ({"tactics": [{"name": "d", "kind": "drop"}, {"name": "m", "kind": "macro", "steps": ["d", "d"]}]},
     "m: steps must name rewrite tactics of this file; not \\['d', 'd'\\]"),
    ({"tactics": [{"name": "m", "kind": "macro", "steps": ["m"]}]}, "at least two"),
])
def test_malformed_tactics_are_refused(bad, why):
    with pytest.raises(tactics.TacticError, match=why):
        tactics.from_data(bad)


def test_a_macro_is_its_steps_applied_in_order():
    doc = knowledge.Knowledge(knowledge.PACKAGE_DIR).load(knowledge.TACTICS)
    item = {"name": "m", "kind": "macro", "steps": ["persistent", "defer_lane_reduction"], "weight": 1.0}
    macro = tactics.from_data({"tactics": doc["tactics"] + [item]})["m"]
    rng = random.Random(0)
    one = tactics.apply(TACTICS["persistent"], _subject(), FIXED, rng)
    two = tactics.apply(TACTICS["defer_lane_reduction"], one, FIXED, rng)
    assert tactics.apply(macro, _subject(), FIXED, rng) == two
    assert two.genome != one.genome


def test_a_macro_whose_step_does_not_apply_does_not_apply():
    doc = knowledge.Knowledge(knowledge.PACKAGE_DIR).load(knowledge.TACTICS)
    item = {"name": "m", "kind": "macro", "steps": ["persistent", "persistent"], "weight": 1.0}
    macro = tactics.from_data({"tactics": doc["tactics"] + [item]})["m"]
    with pytest.raises(NotApplicable, match="already"):
        tactics.apply(macro, _subject(), FIXED, random.Random(0))
