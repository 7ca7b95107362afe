"""The agent's remote evaluator against a real measuring compiler service (fake worker tasks: no GPU here)."""

import pytest

from agent.measure.remote import RemoteEvaluator
from compiler.build.driver import build
from compiler.service.client import CompilerClient
from compiler.service.local import LocalServer
from kernels.kmeans import schedules

FAKE = "runtime.testing.fake_measure:measurer"
SHAPES = {"M": 256, "N": 256, "K": 64}


@pytest.fixture(scope="module")
def client():
    with LocalServer(compile_workers=1, measure=True, measure_backend=FAKE) as server:
        with CompilerClient(server.address, timeout=120) as cc:
            yield cc


def test_a_candidate_is_measured_on_the_remote_gpu(client):
    kernel = schedules.finalize()
    compiled = build(kernel).compiled
    m = RemoteEvaluator(client, "gemm_bf16", SHAPES).measure(compiled, kernel, "unused", "c1")
    assert m.passed and m.median_s == pytest.approx(1.5e-3) and m.detail["remote"]
    assert m.detail["environment"]["gpu"] == "fake"


def test_a_remote_hang_is_a_failed_candidate(client):
    kernel = schedules.finalize()
    ev = RemoteEvaluator(client, "hang", SHAPES)
    m = ev.measure(build(kernel).compiled, kernel, "unused", "c2")
    assert (m.passed, m.kind) == (False, "timeout")


def test_an_unknown_task_is_refused_up_front(client):
    with pytest.raises(ValueError, match="does not measure task 'nope'; it has: gemm_bf16, hang"):
        RemoteEvaluator(client, "nope", SHAPES)
