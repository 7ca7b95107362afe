"""Measurement in isolated workers without a GPU (fake tasks): verdicts for passes, hangs and crashes, named tasks only."""

import pytest
from cake.compiler.v1 import artifact_pb2

from runtime import measure
from runtime.testing import fake_measure

COMPILED = artifact_pb2.CompiledKernel(target="sm_90a", ir_hash="ab" * 32, cubin=b"\x7fELF fake")


@pytest.fixture(scope="module")
def measurer():
    m = fake_measure.measurer(time_limit_s=2.0)
    yield m
    m.close()


def test_a_passing_kernel_comes_back_with_its_timing_and_machine(measurer):
    m = measurer.measure(COMPILED, "gemm_bf16", timing={"reps": 7})
    assert (m.passed, m.failure_kind) == (True, "")
    assert m.timing["median_ms"] == 1.5 and m.timing["reps"] == 7 and m.timing["shape"] == {"M": 256, "N": 256, "K": 64}
    assert m.environment == fake_measure.ENVIRONMENT and not m.worker_replaced


def test_a_hang_is_a_timeout_verdict_and_the_worker_is_replaced(measurer):
    m = measurer.measure(COMPILED, "hang", time_limit_s=1.0)
    assert (m.passed, m.failure_kind, m.worker_replaced) == (False, "timeout", True)
    assert measurer.measure(COMPILED, "gemm_bf16").passed  # the next job gets a new worker


def test_only_registered_tasks_run(measurer):
    with pytest.raises(measure.UnknownTask, match="unknown task 'os:system'; this server measures: gemm_bf16, hang"):
        measurer.measure(COMPILED, "os:system")


def test_a_crash_is_a_verdict(measurer):
    m = measure.measurement(measurer.pool.run(measure.pool_.Job("runtime.testing.fake_tasks:abort", {}, "x", 5.0)))
    assert (m.passed, m.failure_kind) == (False, "crash")
