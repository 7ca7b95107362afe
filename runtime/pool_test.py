"""The worker pool with misbehaving tasks: hangs, aborts, exceptions and poisoned contexts.

Real spawned processes, no GPU: runtime/testing/fake_tasks.py stands in for kernels.
"""

import pytest

from runtime import failures, pool, results_log

T = "runtime.testing.fake_tasks:"


def job(task, payload=None, limit=30.0, ir_hash="hash-" + "0" * 8):
    return pool.Job(task=T + task, payload=payload, ir_hash=ir_hash, time_limit_s=limit, label=task)


@pytest.fixture
def results(tmp_path):
    return str(tmp_path / "results.jsonl")


@pytest.fixture
def workers(results):
    with pool.WorkerPool(results_path=results, start_timeout_s=60) as p:
        yield p


def test_ok_job_returns_result_and_is_logged(workers, results):
    rec = workers.run(job("echo", {"x": 1}))
    assert rec["ok"] and rec["result"]["payload"] == {"x": 1} and rec["failure"] is None
    assert rec["result"]["pid"] == rec["worker_pid"] and not rec["worker_replaced"]
    assert results_log.read(results) == [rec]


def test_exception_is_reported_and_worker_survives(workers):
    rec = workers.run(job("raise_value_error", "grid=0", ir_hash="abc"))
    assert not rec["ok"]
    assert rec["failure"] == {"kind": failures.EXCEPTION, "message": "ValueError: bad launch configuration: grid=0", "ir_hash": "abc"}
    assert "raise_value_error" in rec["traceback"]
    assert workers.run(job("echo"))["worker_pid"] == rec["worker_pid"]


def test_hang_is_killed_at_the_time_limit_and_replaced(workers, results):
    first = workers.run(job("echo"))
    rec = workers.run(job("sleep_forever", limit=1.5, ir_hash="hang1"))
    assert rec["failure"]["kind"] == failures.TIMEOUT and rec["failure"]["ir_hash"] == "hang1"
    assert "1.5 s time limit" in rec["failure"]["message"] and rec["worker_replaced"]
    assert 1.5 <= rec["elapsed_s"] < 10
    after = workers.run(job("echo"))
    assert after["ok"] and after["worker_pid"] != first["worker_pid"]
    assert [r["label"] for r in results_log.read(results)] == ["echo", "sleep_forever", "echo"]


@pytest.mark.parametrize("task, words", [("abort", "killed by SIGABRT"), ("exit_silently", "exited with status 0")])
def test_crash_is_reported_and_replaced(workers, task, words):
    rec = workers.run(job(task))
    assert rec["failure"]["kind"] == failures.CRASH and words in rec["failure"]["message"]
    assert rec["worker_replaced"]
    assert workers.run(job("echo"))["ok"]


def test_poisoned_context_reports_then_replaces_worker(workers):
    rec = workers.run(job("raise_illegal_address"))
    assert rec["failure"]["kind"] == failures.ILLEGAL_ADDRESS and rec["worker_replaced"]
    after = workers.run(job("echo"))
    assert after["ok"] and after["worker_pid"] != rec["worker_pid"]


def test_unpicklable_result_is_an_exception_not_a_crash(workers):
    rec = workers.run(job("unpicklable"))
    assert rec["failure"]["kind"] == failures.EXCEPTION and not rec["worker_replaced"]


def test_workers_are_recycled_after_max_jobs(results):
    with pool.WorkerPool(results_path=results, max_jobs_per_worker=2) as p:
        pids = [p.run(job("echo"))["worker_pid"] for _ in range(3)]
        assert pids[0] == pids[1] != pids[2] and p.workers_started == 2


def test_a_worker_started_ahead_runs_the_first_job_and_none_is_recycled_without_a_limit(results):
    with pool.WorkerPool(results_path=results, max_jobs_per_worker=None) as p:
        p.start()
        assert p.workers_started == 1
        pids = {p.run(job("echo"))["worker_pid"] for _ in range(3)}
        assert len(pids) == 1 and p.workers_started == 1


def test_initializer_failure_is_raised_in_the_parent():
    with pool.WorkerPool(initializer=T + "fail_to_start") as p:
        with pytest.raises(pool.WorkerStartError, match="no GPU in this worker"):
            p.run(job("echo"))
        with pytest.raises(pool.WorkerStartError, match="no GPU in this worker"):
            p.start()


def test_describe_exit():
    assert pool.describe_exit(-9) == "killed by SIGKILL"
    assert pool.describe_exit(3) == "exited with status 3"
    assert pool.describe_exit(None) == "still running"


def test_a_real_check_result_crosses_the_process_boundary(workers, results):
    rec = workers.run(job("check_gemv_on_cpu", 1234, limit=120))
    assert rec["ok"], rec["failure"]
    assert rec["result"]["passed"] and rec["result"]["seed"] == 1234 and len(rec["result"]["cases"]) == 30
    assert results_log.read(results)[-1]["result"]["cases"][29]["seed"] == 1234 + 29
