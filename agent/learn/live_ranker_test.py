"""The learned ranker in a measured run: its rows from the knowledge, refits, scores, what a run keeps, the report."""

import json
import math
import os

import pytest

from agent.learn import dataset, knowledge, live_ranker, ranker
from agent.testing import knowledge_store, measured_run


def _rows(n, task="t", device="dev", run="r"):
    """Dataset rows whose time grows with feature x (and a feature y that says nothing)."""
    return [{"task": task, "run": run, "ir_hash": "%s%03d" % (run, i), "device": device, "toolchain": "tc",
             "measured_s": 1e-3 * math.exp(0.1 * i), "predicted_s": 1e-3, "features": {"x": float(i), "y": float(i % 3)}}
            for i in range(n)]


def _knowledge(tmp_path, datasets, files=None):
    base = tmp_path / "base"
    base.mkdir()
    (base / live_ranker.KNOWLEDGE).write_text(knowledge.dump({"version": 1, "changelog": [], "datasets": datasets}))
    for rel, rows in (files or {}).items():
        dataset.write(str(base / rel), rows)
    return knowledge.Knowledge(str(base), str(tmp_path / "learned"))


def test_prior_rows_are_the_listed_datasets_rows_of_the_task_and_a_missing_one_is_a_note(tmp_path):
    kb = _knowledge(tmp_path, ["a.jsonl", "gone.jsonl"], {"a.jsonl": _rows(3) + _rows(2, task="other")})
    rows, notes = live_ranker.prior_rows(kb, "t")
    assert [r["ir_hash"] for r in rows] == ["r000", "r001", "r002"]
    assert notes == ["the knowledge's ranker dataset gone.jsonl is not here"]


def test_a_malformed_ranker_file_is_refused_naming_its_field(tmp_path):
    kb = _knowledge(tmp_path, "a.jsonl")
    with pytest.raises(ValueError, match="`datasets` must be a list of paths"):
        live_ranker.prior_rows(kb, "t")


def test_the_checkouts_knowledge_lists_the_committed_h200_dataset():
    rows, notes = live_ranker.prior_rows(knowledge.Knowledge(knowledge.PACKAGE_DIR), "gemm-8192")
    assert not notes and len(rows) >= ranker.MIN_ROWS and {r["device"] for r in rows} == {"NVIDIA H200"}


def test_no_model_below_min_rows_and_a_refit_only_when_the_run_measured_more():
    lr = live_ranker.LiveRanker("t", _rows(ranker.MIN_ROWS - 2))
    run = [({"id": 100 + i, "ir_hash": "h%d" % i}, 1e-3) for i in range(1)]
    assert not lr.refit(run, "dev", lambda row: {"x": 0.0})
    assert lr.scores([{"id": 100}], lambda row: {"x": 0.0}) is None
    run.append(({"id": 101, "ir_hash": "h1"}, 2e-3))
    assert lr.refit(run, "dev", lambda row: {"x": float(row["id"] - 100)}) and lr.fits == 1 and lr.rows == ranker.MIN_ROWS
    assert lr.refit(run, "dev", lambda row: pytest.fail("refit without new measurements")) and lr.fits == 1


def test_rows_of_another_device_are_not_learned_from():
    lr = live_ranker.LiveRanker("t", _rows(40, device="elsewhere"))
    assert not lr.refit([], "dev", lambda row: {})


def test_scores_order_candidates_by_what_the_rows_taught():
    lr = live_ranker.LiveRanker("t", _rows(40))
    assert lr.refit([], "dev", None)
    rows = [{"id": i} for i in range(3)]
    scores = lr.scores(rows, lambda row: {"x": [35.0, 2.0, 20.0][row["id"]], "y": 0.0})
    assert sorted(scores, key=scores.get) == [1, 2, 0]


def test_a_measured_run_with_a_ranker_scores_its_choices_keeps_its_rows_and_reports_both_models(tmp_path):
    lr = live_ranker.LiveRanker("unused-task", [])  # no prior rows: the run's own measurements teach it
    evolver, why, store, _ = measured_run(tmp_path / "run", ranking=lr, evaluations=30)
    kept = store.meta(live_ranker.META)
    assert lr.fits >= 1 and kept["fits"] == lr.fits and kept["scores"]
    err = live_ranker.error(store)
    assert err["measured"] >= 1 and err["fits"] == lr.fits and "analytic_spearman" in err
    kb = knowledge_store(tmp_path)
    n, version = live_ranker.remember(kb, str(tmp_path / "run" / "agent.db"), evolver.port)
    assert n == store.count("candidates", "status = 'measured'") and version == 2
    rows, notes = live_ranker.prior_rows(kb, json.loads(store.run()["task"])["name"])
    assert all("benchmarks/datasets" in n for n in notes)  # (the knowledge copy in tmp_path has no ../../benchmarks)
    assert {r["ir_hash"] for r in rows} == {r["ir_hash"] for r in store.candidates("measured")}
    assert os.path.exists(os.path.join(kb.learned, "datasets", "m.jsonl"))


def test_the_fit_count_adds_up_across_sessions_of_one_run(tmp_path):
    from agent.store import Store

    store = Store(str(tmp_path / "agent.db"))
    live_ranker.record(store, {1: 0.5}, 2)
    live_ranker.record(store, {2: 0.1}, 0)  # a decision with no new fit
    live_ranker.record(store, {3: 0.2}, 1)  # a resumed session's first fit
    assert store.meta(live_ranker.META) == {"fits": 3, "scores": {"1": 0.5, "2": 0.1, "3": 0.2}}
