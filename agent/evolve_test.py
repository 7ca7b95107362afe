"""End to end: `evolve` on the cost model through either compiler port, and the GPU path with a fake evaluator."""

import os

import pytest

from agent import evolve
from agent.store import Store
from agent.testing import knowledge_copy, measured_run, small_task


@pytest.mark.parametrize("port", ["in-process", "grpc"])
def test_evolve_on_the_cost_model_prints_its_report(tmp_path, capsys, port):
    run_dir = str(tmp_path / "runs" / "r")
    code = evolve.main(["--run-dir", run_dir, "--knowledge-dir", knowledge_copy(tmp_path), "--gpu", "off",
                        "--compiler", port, "--plain", "--evaluations", "12"])
    out = capsys.readouterr().out
    assert code == 0
    assert "no GPU (--gpu off): evolving on the cost model for sm_90a" in out
    assert "compiler: %s" % ("grpc" if port == "grpc" else "in-process") in out
    assert "report: %s" % os.path.join(run_dir, "report.md") in out
    s = Store(os.path.join(run_dir, "agent.db"))
    assert s.count("candidates", "fitness_s IS NOT NULL") >= 12
    best, seed = s.ranked(limit=1)[0], s.first()
    assert best["fitness_s"] <= seed["fitness_s"]
    assert s.run()["status"] == "finished"


def test_the_gpu_path_measures_the_best_predicted_and_prunes_the_rest(tmp_path):
    evolver, why, store, evaluator = measured_run(tmp_path, evaluations=6)
    assert why == "6 evaluations"
    measured = store.candidates("measured")
    assert len(measured) == evaluator.calls == 6
    assert store.candidates("pruned"), "the cost model ranked some children out"
    for row in measured:
        m, p = store.measurement(row["id"]), store.prediction(row["id"])
        assert abs(m["median_s"] - 1.3 * p["predicted_s"]) < 1e-12 and row["fitness_s"] == m["median_s"]
    assert len(store.predicted_and_measured()) == 6 and store.meta("device_s") == 3.0


def test_runtime_failures_are_recorded_and_credited(tmp_path):
    seed = small_task()
    from agent.genome import Genome, materialize

    seed_kernel = materialize(Genome(seed.family, seed.seed_params, {}), seed.fixed)
    _, why, store, evaluator = measured_run(tmp_path, fail_when=lambda k: k != seed_kernel, evaluations=0,
                                             wall_s=20.0, stale_generations=2)
    fails = [f for f in store.failures() if f["stage"] == "runtime"]
    assert len(fails) == evaluator.calls - 1 >= 2
    assert fails[0]["signature"] == "runtime|wrong_result|-|case # (fake): labels disagree on #% of points"
    assert {store.candidate(f["candidate_id"])["status"] for f in fails} == {"failed"}
    assert all(n > 0 and total < 0 for n, total in store.tactic_stats().values())
