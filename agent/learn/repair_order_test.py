"""Learned repair order: trials counted from repaired candidates, lists reordered by success, the gate, the outer loop."""

import os

from agent.learn import gate, knowledge, outer, repair_order
from agent.store import Store
from agent.testing import knowledge_store


class _Error:
    """An error diagnostic as Store.record takes it."""

    def __init__(self, diag_id):
        self.id, self.path, self.message, self.fix_hint, self.severity = diag_id, "kernel", "m", "h", 1


def _run(root, name, children):
    """A run whose rejected parent (error CAKE-RES-005) has repair children: [(tactic, status)]."""
    os.makedirs(os.path.join(root, name))
    s = Store(os.path.join(root, name, "agent.db"))
    s.start_run(name, {"name": "t"}, {"mode_line": "x"}, "cost_model", 0)
    parent = s.insert_candidate("p-" + name, "kernel p {}", None, None, "t", "search", 0)
    s.record(parent, "invalid", None, [("verify", _Error("CAKE-RES-005"))])
    for i, (tactic, status) in enumerate(children):
        cid = s.insert_candidate("c-%s-%d" % (name, i), "kernel c {}", None, parent, "repair:" + tactic, "repair", 0)
        if status != "pending":
            s.record(cid, status, 1e-5 if status == "evaluated" else None)
    s.close()


BY_ID = {"CAKE-RES-005": ["consumer_registers_up", "rebalance_registers", "block_k_down"]}


def test_trials_count_listed_tactics_of_assessed_children_per_diagnostic(tmp_path):
    root = str(tmp_path / "runs")
    _run(root, "a", [("consumer_registers_up", "invalid")] * 3 + [("block_k_down", "evaluated"), ("block_k_down", "failed"),
                     ("block_k_down", "pending"), ("stages_down", "evaluated")])  # pending: not judged; unlisted
    ev = repair_order.outcomes(outer.run_databases([root]), BY_ID)
    assert {t: c for t, c in ev["CAKE-RES-005"].items()} == {"consumer_registers_up": [0, 3], "block_k_down": [1, 2]}


def test_a_list_is_reordered_by_smoothed_success_only_on_enough_trials():
    ev = {"CAKE-RES-005": {"consumer_registers_up": [0, 40], "block_k_down": [30, 40]}}
    (old, new, counts), = repair_order.propose(BY_ID, ev).values()
    # rebalance_registers, untried, ranks as an even chance: between block_k_down (31/42) and 1/42
    assert (old, new) == (BY_ID["CAKE-RES-005"], ["block_k_down", "rebalance_registers", "consumer_registers_up"])
    assert counts["rebalance_registers"] == [0, 0]
    assert repair_order.propose(BY_ID, {"CAKE-RES-005": {"consumer_registers_up": [0, repair_order.MIN_TRIALS - 1]}}) == {}
    assert gate.gate_repair_order(repair_order.propose(BY_ID, ev)).accepted
    assert not gate.gate_repair_order({"CAKE-RES-005": (["a", "b"], ["b", "c"], {"a": [0, 9]})}).accepted


def test_the_outer_loop_accepts_a_learned_order_once(tmp_path):
    root, kb = str(tmp_path / "runs"), knowledge_store(tmp_path)
    listed = kb.load(knowledge.REPAIRS)["by_id"]["CAKE-RES-005"]
    first, second = listed[0], listed[1]
    _run(root, "a", [(first, "invalid")] * 10 + [(second, "evaluated")] * 10)
    results = [r for r in outer.learn([root], kb, None, None, log=lambda *_: None) if r[0] == "repairs"]
    [(_, sig, verdict)] = results
    assert verdict.accepted and sig == "repairs|CAKE-RES-005|1 runs"
    now = kb.load(knowledge.REPAIRS)["by_id"]["CAKE-RES-005"]
    assert now.index(second) < now.index(first) and sorted(now) == sorted(listed)
    assert not [r for r in outer.learn([root], kb, None, None, log=lambda *_: None) if r[0] == "repairs"]
