"""The Measure RPC end to end on CPU: real server processes, a measurer of fake worker tasks (no GPU)."""

import os

import conftest
import grpc
import pytest

from compiler.corpus import known_bad
from compiler.corpus.corpus import GOOD_DIR
from compiler.service.client import CompilerClient, CompilerServiceError
from compiler.service.local import LocalServer

SMALL = open(os.path.join(GOOD_DIR, "kmeans_finalize.cake")).read()
FAKE = "runtime.testing.fake_measure:measurer"


@pytest.fixture(scope="module")
def measuring():
    with LocalServer(compile_workers=1, measure=True, measure_backend=FAKE) as server:
        with CompilerClient(server.address, timeout=120) as cc:
            yield cc


@pytest.fixture(scope="module")
def plain():
    with LocalServer(compile_workers=1) as server:
        with CompilerClient(server.address, timeout=60) as cc:
            yield cc


def test_measure_returns_the_verdict_timing_and_machine(measuring):
    r = measuring.measure(SMALL, "gemm_bf16", shapes=[{"M": 512, "N": 512, "K": 64}], reps=9)
    assert r.measured and r.verdict.passed and r.verdict.failure_kind == ""
    assert (r.timing.median_ms, r.timing.reps, dict(r.timing.shape)) == (1.5, 9, {"M": 512, "N": 512, "K": 64})
    assert r.machine["gpu"] == "fake" and len(r.ir_hash) == 64
    tasks = measuring.list_tasks()
    assert tasks.enabled and [t.name for t in tasks.tasks] == ["gemm_bf16", "hang"]


def test_a_hanging_kernel_is_a_timeout_verdict_not_a_failed_call(measuring):
    r = measuring.measure(SMALL, "hang", time_limit_s=1.0)
    assert r.measured and not r.verdict.passed
    assert (r.verdict.failure_kind, r.verdict.worker_replaced) == ("timeout", True)
    assert not r.HasField("timing")


def test_a_kernel_that_fails_verification_is_not_measured(measuring):
    bad = next(b for b in known_bad.programs() if b.id == "CAKE-SYNC-004")
    r = measuring.measure(open(bad.path).read(), "gemm_bf16")
    assert not r.measured and bad.id in {d.id for d in r.diagnostics}


def test_unknown_tasks_and_bad_timing_are_invalid_arguments(measuring):
    with pytest.raises(CompilerServiceError) as e:
        measuring.measure(SMALL, "os:system")
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in e.value.field_violations] == ["task"]
    assert "this server measures: gemm_bf16, hang" in e.value.field_violations[0][1]
    with pytest.raises(CompilerServiceError) as e:
        measuring.measure(SMALL, "gemm_bf16", reps=-1)
    assert [f for f, _ in e.value.field_violations] == ["timing.reps"]


def test_measurement_is_off_by_default(plain):
    with pytest.raises(CompilerServiceError) as e:
        plain.measure(SMALL, "gemm_bf16")
    assert e.value.code == grpc.StatusCode.UNIMPLEMENTED and "start it with --measure on a GPU host" in str(e.value)
    assert not plain.list_tasks().enabled


def test_measure_without_a_gpu_refuses_to_start():
    if conftest.gpu_available():
        pytest.skip("this machine has a GPU: the server would start")
    with pytest.raises(RuntimeError, match="did not start"):
        LocalServer(measure=True, startup_timeout=120).start()
