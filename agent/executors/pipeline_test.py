"""The pipeline on the local executor: the serial loop's run at window 0, one run per seed and window, faults survived."""

import os
import time

from agent import loop
from agent.executors import testing


def test_window_0_is_the_serial_loop_in_both_modes(tmp_path):
    for mode, budget in ((loop.COST_MODEL, 30), (loop.MEASURE, 6)):
        serial, why = testing.run(str(tmp_path / mode / "serial"), mode, evaluations=budget)
        piped, why_piped = testing.run(str(tmp_path / mode / "local"), mode, "local", window=0, evaluations=budget)
        assert why == why_piped == "%d evaluations" % budget
        assert testing.rows(piped) == testing.rows(serial), mode
        assert piped.tactic_stats().keys() == serial.tactic_stats().keys()


def test_a_window_decides_the_same_whatever_the_workers_and_their_speed(tmp_path):
    one, _ = testing.run(str(tmp_path / "one"), loop.MEASURE, "local", window=1, workers=1, gpus=1, evaluations=10)
    two, _ = testing.run(str(tmp_path / "two"), loop.MEASURE, "local", window=1, workers=2, gpus=2,
                         fake_delay_s=0.05, evaluations=10)
    assert testing.rows(one) == testing.rows(two)
    assert two.count("candidates", "status = 'measured'") >= 10


def test_the_learned_ranker_decides_in_the_pipeline_as_in_the_serial_loop(tmp_path):
    from agent.learn import live_ranker

    serial, _ = testing.run(str(tmp_path / "serial"), loop.MEASURE, ranking=live_ranker.LiveRanker("t", []),
                            evaluations=24)
    piped, _ = testing.run(str(tmp_path / "local"), loop.MEASURE, "local", window=0,
                           ranking=live_ranker.LiveRanker("t", []), evaluations=24)
    assert serial.meta(live_ranker.META)["fits"] >= 1
    assert piped.meta(live_ranker.META) == serial.meta(live_ranker.META)
    assert testing.rows(piped) == testing.rows(serial)


def test_a_worker_killed_mid_run_costs_only_the_job_it_held(tmp_path):
    calm, _ = testing.run(str(tmp_path / "calm"), loop.COST_MODEL, "local", window=1, evaluations=30)
    killed = []

    def kill_workers(executor, db_path):
        # A cost-model run finishes 30 evaluations in about a second: watch closely, or the run ends first.
        while len(killed) < 2:
            time.sleep(0.01)
            if testing.finished(db_path) >= 3 * (len(killed) + 1):
                worker = executor._pools[len(killed)]._worker
                if worker is not None and worker.alive():
                    os.kill(worker.pid, 9)
                    killed.append(worker.pid)

    store, why = testing.run(str(tmp_path / "killed"), loop.COST_MODEL, "local", window=1, during=kill_workers,
                             evaluations=30)
    assert len(killed) == 2 and why == "30 evaluations"
    assert testing.rows(store) == testing.rows(calm)
