"""Repair moves: diagnostics map to tactics, and repairing a rejected candidate gets back to a valid one."""

import random

from cake.compiler.v1 import diagnostics_pb2 as dpb

from agent import genome as genome_mod
from agent import seeds, tactics
from agent.learn import knowledge
from agent.repair import RepairMap
from agent.ir_edit import NotApplicable
from compiler.verify import has_errors, verify

FIXED = {"d": 128, "dtype": "bf16"}
REPAIRS = RepairMap.load(knowledge.PACKAGE_DIR)
TACTICS, _ = tactics.load(knowledge.PACKAGE_DIR, "kmeans_assign_sm90a")


def _diag(id_, message="", hint="", severity=dpb.SEVERITY_ERROR):
    return dpb.Diagnostic(id=id_, message=message, fix_hint=hint, severity=severity)


def test_ids_map_to_their_tactics_in_order_without_repeats():
    got = REPAIRS.tactics([_diag("CAKE-RES-001"), _diag("CAKE-RES-009")])
    first, then = REPAIRS.by_id["CAKE-RES-001"], REPAIRS.by_id["CAKE-RES-009"]  # the order is learned (repair_order)
    assert got == first + [t for t in then if t not in first]
    assert len(set(got)) == len(got) and "stages_down" in got and "one_block_per_sm" in got


def test_unknown_ids_fall_back_to_the_words_of_message_and_hint():
    d = _diag("CAKE-ANALYSIS-001", "kernel does not fit on one SM of sm_90a/H200: limited by registers (...)")
    assert REPAIRS.tactics([d])[0] == "rebalance_registers"
    assert REPAIRS.tactics([_diag("CAKE-LEARNED-007", hint="use fewer stages")]) == ["stages_down"]
    short = _diag("CAKE-ANALYSIS-001", "kernel does not fit on one SM of sm_90a/H200: role main needs 100 registers"
                  " per thread (live fragments and overhead) but has 96")
    assert REPAIRS.tactics([short])[0] == "rebalance_registers"


def test_warnings_ask_for_nothing():
    assert REPAIRS.tactics([_diag("CAKE-RES-001", severity=dpb.SEVERITY_WARNING)]) == []


def test_every_repair_names_a_known_tactic():
    named = set(t for ts in REPAIRS.by_id.values() for t in ts) | set(t for _, ts in REPAIRS.by_text for t in ts)
    derived = {n for f in seeds.FAMILIES.values() for n in tactics.for_family(f)}  # some family's parameter steps
    assert named <= set(tactics.load(knowledge.PACKAGE_DIR)[0]) | derived


def test_repairs_lead_from_a_rejected_candidate_back_to_a_valid_one():
    # Two blocks per SM over-commit shared memory and registers; repairs fix both within two steps.
    g = genome_mod.Genome("kmeans_assign_sm90a", {"block_k": 128, "stages": 3, "consumers": 2}, {})
    g = g.with_rewrite("min_blocks", {"n": 2})
    frontier = [tactics.Subject(genome_mod.materialize(g, FIXED), g)]
    for _ in range(2):
        nxt = []
        for s in frontier:
            diags = verify(s.kernel)
            if not has_errors(diags):
                return
            for name in REPAIRS.tactics(diags):
                try:
                    nxt.append(tactics.apply(TACTICS[name], s, FIXED, random.Random(0)))
                except NotApplicable:
                    pass
        frontier = nxt
    assert any(not has_errors(verify(s.kernel)) for s in frontier)
