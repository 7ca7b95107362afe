"""The bounded compile pool: admission, retry hints, deadlines, draining."""

import threading
import time

import pytest

from compiler.service.pool import CompilePool, Expired, QueueFull


def test_admits_workers_plus_queue_jobs_then_refuses_with_a_hint():
    pool = CompilePool(workers=1, queue=1)
    gate = threading.Event()
    running = pool.submit(gate.wait)
    queued = pool.submit(lambda: "queued")
    with pytest.raises(QueueFull) as e:
        pool.submit(lambda: "refused")
    assert e.value.pending == 2 and e.value.retry_after > 0
    gate.set()
    assert running.result(5) and queued.result(5) == "queued"
    assert pool.submit(lambda: "admitted again").result(5) == "admitted again"
    assert pool.shutdown(5)


def test_a_job_past_its_deadline_is_not_started():
    pool = CompilePool(workers=1, queue=1)
    gate = threading.Event()
    pool.submit(gate.wait)
    late = pool.submit(lambda: pytest.fail("started after its deadline"), deadline=time.monotonic() + 0.01)
    time.sleep(0.05)
    gate.set()
    with pytest.raises(Expired):
        late.result(5)
    assert pool.shutdown(5)


def test_cancelling_a_queued_job_frees_its_slot():
    pool = CompilePool(workers=1, queue=1)
    gate = threading.Event()
    pool.submit(gate.wait)
    queued = pool.submit(lambda: None)
    assert queued.cancel()
    assert pool.pending == 1
    gate.set()
    assert pool.shutdown(5)


def test_shutdown_drops_queued_jobs_and_reports_a_job_outliving_the_timeout():
    pool = CompilePool(workers=1, queue=4)
    gate = threading.Event()
    pool.submit(gate.wait)
    queued = [pool.submit(lambda: None) for _ in range(3)]
    assert not pool.shutdown(0.05)
    assert all(f.cancelled() for f in queued)
    gate.set()
    assert pool.shutdown(5)


def test_retry_hint_follows_measured_job_times():
    pool = CompilePool(workers=2, queue=0)
    for _ in range(30):
        pool.submit(lambda: None).result(5)
    gate = threading.Event()
    pool.submit(gate.wait), pool.submit(gate.wait)
    with pytest.raises(QueueFull) as e:
        pool.submit(lambda: None)
    assert e.value.retry_after == pytest.approx(0.05)  # the floor: measured jobs took no time
    gate.set()
    assert pool.shutdown(5)
