"""Macro-tactics: mined from measured lineages that kept improving, gated by replay, written as tactics."""

import json
import math

import pytest

from agent import tactics as tactics_mod
from agent.learn import gate, knowledge, macros, outer
from agent.store import Store
from agent.testing import knowledge_store, small_task

REWRITES = {"persistent", "defer_lane_reduction", "elect_release", "mma_to_wgmma"}


def _run(path, mode, chains, task=None):
    """A run database whose lineages are `chains`: lists of (tactic, fitness) from a seed of fitness 1.0."""
    store = Store(str(path))
    store.start_run(path.stem, task or {"name": "t"}, {}, mode, 0)
    n = 0
    for chain in chains:
        parent = store.insert_candidate("h%d" % n, "", None, None, "seed", "search", 0)
        store.record(parent, "measured", fitness_s=1.0)
        n += 1
        for tactic, fitness in chain:
            cid = store.insert_candidate("h%d" % n, "", None, parent, tactic, "search", 1)
            store.record(cid, "measured" if fitness else "pruned", fitness_s=fitness)
            parent, n = cid, n + 1
    store.close()
    return str(path)


def test_pairs_that_improved_at_both_steps_in_enough_lineages_are_mined(tmp_path):
    good = [("persistent", 0.9), ("defer_lane_reduction", 0.8)]
    paths = [_run(tmp_path / "a.db", "measure", [good, good, [("elect_release", 0.95)] + good]),
             _run(tmp_path / "b.db", "measure", [[("persistent", 0.9), ("defer_lane_reduction", 0.95)]])]
    (cand, tasks), = macros.mine(paths, REWRITES)
    assert cand.steps == ["persistent", "defer_lane_reduction"] and cand.support == 3
    assert math.isclose(cand.gain, (1.25 * 1.25 * 0.95 / 0.8) ** (1 / 3)) and list(tasks) == ["t"]
    assert {e["run"] for e in cand.evidence} == {"a"}


def test_cost_model_runs_unmeasured_steps_repairs_and_known_macros_teach_nothing(tmp_path):
    good = [("persistent", 0.9), ("defer_lane_reduction", 0.8)]
    assert macros.mine([_run(tmp_path / "c.db", "cost_model", [good] * 3)], REWRITES) == []
    unmeasured = [("persistent", None), ("defer_lane_reduction", 0.8)]
    assert macros.mine([_run(tmp_path / "d.db", "measure", [unmeasured] * 3)], REWRITES) == []
    repaired = [("persistent", 0.9), ("repair:rebalance_registers", 0.8)]
    assert macros.mine([_run(tmp_path / "e.db", "measure", [repaired] * 3)], REWRITES) == []
    known = _run(tmp_path / "f.db", "measure", [good] * 3)
    assert macros.mine([known], REWRITES, known=[("persistent", "defer_lane_reduction")]) == []


def test_a_mined_macro_is_a_loadable_tactic_with_its_evidence(tmp_path):
    good = [("persistent", 0.9), ("defer_lane_reduction", 0.8)]
    (cand, _), = macros.mine([_run(tmp_path / "a.db", "measure", [good] * 3)], REWRITES)
    item = macros.tactic_item(cand)
    doc = knowledge.Knowledge(knowledge.PACKAGE_DIR).load(knowledge.TACTICS)
    macro = tactics_mod.from_data({"tactics": doc["tactics"] + [item]})[item["name"]]
    assert macro.kind == "macro" and [s.name for s in macro.steps] == cand.steps
    assert len(item["provenance"]["evidence"]) == 3


@pytest.mark.parametrize("with_macro,accepted,why", [
    ([[3, 2, 1, 1, 1], [3, 1, 1, 1, 1]], True, "in 2.5 of 3.5 evaluations"),
    ([[3, 2, 2, 1, 1], [3, 3, 1, 1, 1]], False, "not within 80%"),
    ([[1, 1, 1, 1, 1], [3, 3, 3, 3, 2]], False, "ends worse on 1 of 2"),
])
def test_the_replay_gate(with_macro, accepted, why):
    without = [[3, 3, 2, 1, 1], [3, 2, 1, 1, 1]]
    verdict = gate.gate_macro(without, with_macro)
    assert verdict.accepted is accepted and why in verdict.why


def test_the_outer_loop_gates_each_mined_macro_by_replaying_its_task(tmp_path, monkeypatch):
    task = small_task().to_json()
    good = [("persistent", 0.9), ("defer_lane_reduction", 0.8)]
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    _run(tmp_path / "runs" / "r1" / "agent.db", "measure", [good] * 3, task=task)
    replays = []

    def replay(t, tactics, port, repairs, evaluator=None):  # the baseline first, then with the macro
        replays.append(sorted(n for n, x in tactics.items() if x.kind == "macro"))
        return [[3, 2, 1], [3, 2, 1]] if len(replays) % 2 else [[2, 1, 1], [1, 1, 1]]

    monkeypatch.setattr(macros, "replay", replay)
    kb = knowledge_store(tmp_path)
    results = []
    outer._macro_proposals(kb, None, outer.run_databases([str(tmp_path / "runs")]), set(),
                           lambda *a: results.append(a), lambda msg: None)
    name = "persistent_then_defer_lane_reduction"
    assert replays == [[], [name]]
    (kind, sig, item, verdict, version), = results
    assert (kind, sig, verdict.accepted, version) == ("macro", "macro|%s|3 lineages" % name, True,
                                                  knowledge.read(knowledge.PACKAGE_DIR, knowledge.TACTICS)["version"] + 1)
    loaded, _ = tactics_mod.load(kb)
    assert loaded[name].kind == "macro" and item["provenance"]["gate"]["evaluations_with"] == [2, 1]


def test_a_macro_refused_on_the_same_evidence_is_not_replayed_again(tmp_path, monkeypatch):
    good = [("persistent", 0.9), ("defer_lane_reduction", 0.8)]
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    path = _run(tmp_path / "runs" / "r1" / "agent.db", "measure", [good] * 3, task=small_task().to_json())
    store = Store(path)
    store.add_proposal("macro", "macro|persistent_then_defer_lane_reduction|3 lineages", {}, "refused", {}, None)
    store.close()
    monkeypatch.setattr(macros, "replay", lambda *a: pytest.fail("replayed a refused macro"))
    results = []
    refused = outer._collect([path])[4]
    outer._macro_proposals(knowledge_store(tmp_path), None, [path], refused, lambda *a: results.append(a),
                           lambda msg: None)
    assert results == []
