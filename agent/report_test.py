"""The report: markdown with both plots, the best IR and its CUDA, speedups, failures and tactics."""

import json
import os

from agent import report
from agent.testing import measured_run


def test_a_measured_run_reports_plots_ir_cuda_and_peers(tmp_path):
    evolver, why, store, _ = measured_run(tmp_path, evaluations=6)
    store.set_peer("flashlib", 1e-3, {"fake": True})
    best = store.ranked(limit=1)[0]
    path = report.write(str(tmp_path), store, evolver.task, "fake GPU", why, evolver.bandit,
                        cuda="__global__ void cake_kmeans_assign_sm90a() {}", cuda_note="")
    text = open(path).read()
    for png in ("best_so_far.png", "predicted_vs_measured.png"):
        assert os.path.getsize(os.path.join(str(tmp_path), png)) > 5000
        assert "](%s)" % png in text
    assert "| best (#%d) |" % best["id"] in text and "speedup over the seed" in text
    assert "| flashlib | 1000.000 us |" in text
    assert best["ir_text"].splitlines()[0] in text and "```cuda\n__global__" in text
    assert "## Tactics" in text and "Lineage: seed" in text


def test_the_best_kernel_is_written_beside_the_report_with_its_lineage(tmp_path):
    from compiler.ir.text import parse_kernel

    evolver, why, store, _ = measured_run(tmp_path, evaluations=6)
    best = store.ranked(limit=1)[0]
    report.write(str(tmp_path), store, evolver.task, "fake GPU", why, evolver.bandit,
                 cuda="__global__ void cake_k() {}")
    cake = open(os.path.join(str(tmp_path), "best.cake")).read()
    cu = open(os.path.join(str(tmp_path), "best.cu")).read()
    steps = report.ancestry(store, best)
    assert steps[0]["tactic"] == "seed" and steps[-1]["id"] == best["id"]
    for text, mark in ((cake, "# "), (cu, "// ")):
        assert "%slineage (candidate, move, author, measured time):" % mark in text
        assert all("%s  #%d %s (" % (mark, r["id"], r["tactic"]) in text for r in steps)
    assert parse_kernel(cake).kernel == parse_kernel(best["ir_text"]).kernel  # the header is comments
    assert cu.endswith("__global__ void cake_k() {}")
    s = json.load(open(os.path.join(str(tmp_path), "summary.json")))
    assert s["best"]["files"] == {"cake": "best.cake", "cu": "best.cu"}


def test_a_cost_model_run_says_what_was_not_measured(tmp_path):
    evolver, why, store, _ = measured_run(tmp_path, evaluations=2)
    store.db.execute("UPDATE runs SET mode = 'cost_model'")
    store.db.execute("DELETE FROM measurements")
    path = report.write(str(tmp_path), store, evolver.task, "no GPU: evolving on the cost model for sm_90a", why,
                        evolver.bandit, cuda=None, cuda_note="The best candidate did not build: x",
                        peers_note="Peers were not measured: no GPU.")
    text = open(path).read()
    assert "Peers were not measured: no GPU." in text
    assert "nothing was measured (no GPU: evolving on the cost model for sm_90a)" in text
    assert "The best candidate did not build: x" in text and "predicted time" in text


def test_the_summary_holds_the_results_layout_fields(tmp_path):
    evolver, why, store, _ = measured_run(tmp_path, evaluations=6)
    store.set_peer("flashlib", 1e-3, {"fake": True})
    report.write(str(tmp_path), store, evolver.task, "fake GPU", why, evolver.bandit)
    s = json.load(open(os.path.join(str(tmp_path), "summary.json")))
    best, seed = store.ranked(limit=1)[0], store.first()
    assert s["task"]["name"] == "kmeans-assign" and s["mode"] == "measure" and s["stopped"] == why
    assert s["seed"]["median_ms"] == round(seed["fitness_s"] * 1e3, 6)
    assert s["best"]["median_ms"] == round(best["fitness_s"] * 1e3, 6) and s["best"]["lineage"][0] == "seed"
    assert s["peers"]["flashlib"]["median_ms"] == 1.0 and s["device_s"] == 3.0
    curve = s["curve"]
    assert [p["evaluation"] for p in curve] == list(range(1, 7)) and curve[-1]["device_s"] == 3.0
    assert [p["best_ms"] for p in curve] == sorted((p["best_ms"] for p in curve), reverse=True)
    assert curve[-1]["best_ms"] == s["best"]["median_ms"]


def test_every_measured_run_reports_the_cost_models_prediction_error(tmp_path):
    evolver, why, store, _ = measured_run(tmp_path, evaluations=6)
    path = report.write(str(tmp_path), store, evolver.task, "fake GPU", why, evolver.bandit)
    err = json.load(open(os.path.join(str(tmp_path), "summary.json")))["prediction_error"]
    pairs = store.predicted_and_measured()
    assert err["measured"] == len(pairs) >= 3 and err["distinct_predictions"] <= len(pairs)
    assert -1.0 <= err["spearman"] <= 1.0 and err["median_abs_log_error"] >= 0.0
    assert "Cost model against the %d measured candidates: Spearman" % len(pairs) in open(path).read()


def test_prediction_error_over_known_pairs():
    err = report.prediction_error([(1, 2e-3, 1e-3), (2, 4e-3, 2e-3), (3, 8e-3, 4e-3), (4, 0.0, 1e-3)])
    assert err["measured"] == 3 and abs(err["spearman"] - 1.0) < 1e-12 and err["distinct_predictions"] == 3
    assert abs(err["median_abs_log_error"] - 0.6931) < 1e-3  # every prediction twice the measured time
    assert report.prediction_error([]) is None


def test_a_run_with_the_learned_ranker_reports_it_beside_the_cost_model(tmp_path):
    from agent.learn import live_ranker

    evolver, why, store, _ = measured_run(tmp_path, ranking=live_ranker.LiveRanker("t", []), evaluations=30)
    text = open(report.write(str(tmp_path), store, evolver.task, "fake GPU", why, evolver.bandit)).read()
    assert "Learned ranker (refit %d times as the run measured) against the" % evolver.ranking.fits in text
    assert json.load(open(os.path.join(str(tmp_path), "summary.json")))["ranker_error"]["fits"] == evolver.ranking.fits
