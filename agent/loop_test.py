"""The loop's measurement plan: equal predictions are explored in a seeded order, not by candidate id."""

import dataclasses

from agent.testing import measured_run


def _rows(n):
    return [{"id": i, "ir_hash": "%064x" % (i * 7919), "tactic": "t"} for i in range(1, n + 1)]


def test_equal_predictions_are_planned_in_a_seeded_order_not_by_id(tmp_path, monkeypatch):
    evolver, _, store, _ = measured_run(tmp_path, evaluations=3)
    monkeypatch.setattr(store, "prediction", lambda cid: {"predicted_s": 1e-3 if cid != 5 else 5e-4})
    rows = _rows(12)
    order = [r["id"] for r, _ in evolver.plan(rows, [])]
    assert order[0] == 5  # a better prediction still comes first
    ties = order[1:]
    assert ties != sorted(ties)  # not by id
    assert ties == sorted(ties, key=lambda i: evolver.tie_order(rows[i - 1]["ir_hash"]))
    assert [r["id"] for r, _ in evolver.plan(list(reversed(rows)), [])] == order  # the order rows come in does not matter
    evolver.settings = dataclasses.replace(evolver.settings, seed=1)
    assert [r["id"] for r, _ in evolver.plan(rows, [])][1:] != ties  # another run's seed explores another order
