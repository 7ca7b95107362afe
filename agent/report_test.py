"""The report: markdown with both plots, the best IR and its CUDA, speedups, failures and tactics."""

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
