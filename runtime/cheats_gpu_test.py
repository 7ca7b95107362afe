"""The cheat suite on a GPU: every known cheat is rejected with its reason, the honest kernel
passes and is timed, and an illegal address and a hang each leave the harness running.

Everything goes through the evaluation worker pool, as the agent's evaluations do. Records
are appended to $OUT/runtime_cheats.jsonl when OUT names a directory (ci/gpu_run.sh), else
to a temporary one; every test prints its verdicts (shown by pytest -rA).
"""

import os

import pytest

from runtime import evaluate, failures, results_log
from runtime.testing import cheat_suite, gemv_contract
from runtime.timing import TimingConfig

pytestmark = pytest.mark.gpu

CHECK_LIMIT_S = 180.0  # generous: a check takes seconds; a new worker's CUDA start-up is outside it
HANG_LIMIT_S = 10.0
GEMV_BYTES = gemv_contract.TUNED["m"] * gemv_contract.TUNED["n"] * 4  # A at the tuned shape, read once per call


@pytest.fixture(scope="module")
def cubin(tmp_path_factory):
    from compiler.build.nvcc import compile_cuda
    from compiler.targets import target_for_capability
    from runtime.loader import device_attribute

    target = target_for_capability(device_attribute("COMPUTE_CAPABILITY_MAJOR"), device_attribute("COMPUTE_CAPABILITY_MINOR"))
    return compile_cuda(cheat_suite.SOURCE, target, str(tmp_path_factory.mktemp("cheats"))).cubin


@pytest.fixture(scope="module")
def results_path(tmp_path_factory):
    out = os.environ.get("OUT")
    directory = out if out and os.path.isdir(out) else str(tmp_path_factory.mktemp("results"))
    return os.path.join(directory, "runtime_cheats.jsonl")


@pytest.fixture(scope="module")
def evaluator(results_path):
    with evaluate.pool(results_path=results_path, start_timeout_s=300) as p:
        yield p


def _evaluate(evaluator, cubin, name, timing=None, limit=CHECK_LIMIT_S):
    cheat = cheat_suite.BY_NAME[name]
    record = evaluator.run(evaluate.job(cheat_suite.request(cheat, cubin, timing=timing), time_limit_s=limit))
    ev = evaluate.outcome(record)
    verdict = "passed" if ev.passed else "rejected: " + ev.failure.kind
    detail = ev.failure.message if ev.failure else ev.check["message"]
    print(
        "%-17s (%s) expected %s -> %s [worker %s, %.1f s]\n    %s"
        % (name, cheat.what, cheat.expected or "pass", verdict, record["worker_pid"], record["elapsed_s"], detail)
    )
    return ev


@pytest.mark.parametrize(
    "name", [c.name for c in cheat_suite.CHEATS if c.expected not in (failures.ILLEGAL_ADDRESS, failures.TIMEOUT)]
)
def test_each_cheat_is_rejected_with_its_reason(evaluator, cubin, name):
    cheat = cheat_suite.BY_NAME[name]
    ev = _evaluate(evaluator, cubin, name)
    if cheat.expected is None:
        assert ev.passed, "the honest kernel was rejected: %s" % (ev.failure,)
        return
    assert not ev.passed, "%s (%s) was accepted" % (name, cheat.what)
    assert ev.failure.kind == cheat.expected, "%s: expected %s, got %s: %s" % (
        name,
        cheat.expected,
        ev.failure.kind,
        ev.failure.message,
    )
    assert ev.failure.ir_hash == cheat_suite.ir_hash(cheat)


def test_honest_kernel_is_timed_with_its_environment(evaluator, cubin):
    ev = _evaluate(evaluator, cubin, "honest", timing=TimingConfig(warmup=10, reps=100))
    assert ev.passed, ev.failure
    t, env = ev.timing, ev.timing["environment"]
    print("timing:", {k: t[k] for k in ("median_ms", "p10_ms", "p90_ms", "min_ms", "max_ms", "reps", "flush_bytes")})
    print("environment:", env)
    assert t["verified"], t["verification"]
    assert 0 < t["min_ms"] <= t["p10_ms"] <= t["median_ms"] <= t["p90_ms"] <= t["max_ms"]
    assert len(t["times_ms"]) == 100 and t["flush_bytes"] >= 2 * env["l2_cache_bytes"]
    for key in ("gpu_name", "compute_capability", "cuda_driver_api", "torch", "torch_cuda", "cuda_python", "python"):
        assert env[key], "environment lacks %s: %s" % (key, env)
    # With a cold L2, A comes from HBM: a timer that missed the work would show more than any HBM delivers.
    bandwidth = GEMV_BYTES / (t["median_ms"] * 1e-3)
    print("effective bandwidth: %.0f GB/s" % (bandwidth / 1e9))
    assert bandwidth < 6e12, "median %.4f ms means %.0f GB/s: faster than HBM" % (t["median_ms"], bandwidth / 1e9)


def test_fault_and_hang_leave_the_harness_running(evaluator, cubin, results_path):
    before = len(results_log.read(results_path))
    first = _evaluate(evaluator, cubin, "honest")
    fault = _evaluate(evaluator, cubin, "illegal_address")
    after_fault = _evaluate(evaluator, cubin, "honest")
    hang = _evaluate(evaluator, cubin, "hang", limit=HANG_LIMIT_S)
    after_hang = _evaluate(evaluator, cubin, "honest")

    assert first.passed, first.failure
    assert fault.failure is not None and fault.failure.kind == failures.ILLEGAL_ADDRESS, fault.failure
    assert fault.failure.ir_hash == cheat_suite.ir_hash(cheat_suite.BY_NAME["illegal_address"])
    assert fault.record["worker_replaced"]
    assert after_fault.passed and after_fault.record["worker_pid"] != fault.record["worker_pid"], after_fault.failure
    assert hang.failure is not None and hang.failure.kind == failures.TIMEOUT, hang.failure
    assert hang.record["worker_replaced"]
    assert after_hang.passed and after_hang.record["worker_pid"] != hang.record["worker_pid"], after_hang.failure
    logged = results_log.read(results_path)[before:]
    assert [r["label"] for r in logged] == ["honest", "illegal_address", "honest", "hang", "honest"]
