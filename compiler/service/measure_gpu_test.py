"""On a GPU: the Measure RPC of a real `--measure` server checks and times the corpus GEMM (sm_90a).

The server measures with the default backend (kernels/tasks.py: the runtime's oracle and
timer in an isolated worker). The result row (results layout) and the machine record are
printed: ci/gpu_run.sh's log keeps them (pytest -rA).
"""

import json
import os

import pytest
from google.protobuf import json_format

from compiler.corpus.corpus import GOOD_DIR
from compiler.service.client import CompilerClient
from compiler.service.local import LocalServer


@pytest.mark.sm_90a
def test_measure_rpc_returns_a_checked_timing_for_the_corpus_gemm():
    program = open(os.path.join(GOOD_DIR, "gemm_sm90a.cake")).read()
    with LocalServer(compile_workers=1, measure=True, startup_timeout=300) as server:
        with CompilerClient(server.address, timeout=900) as cc:
            tasks = cc.list_tasks()
            r = cc.measure(program, "gemm_bf16", reps=50, time_limit_s=600)
    assert tasks.enabled and "gemm_bf16" in {t.name for t in tasks.tasks}
    assert r.measured, [d.message for d in r.diagnostics]
    assert r.verdict.passed, (r.verdict.failure_kind, r.verdict.message)
    assert r.timing.verified and r.timing.median_ms > 0 and r.timing.reps == 50
    assert dict(r.timing.shape) == {"M": 4096, "N": 4096, "K": 4096}
    record = json_format.MessageToDict(r.machine)
    assert record["gpu_name"] and record["compute_capability"]
    flops = 2.0 * 4096 ** 3
    row = {"shape": dict(r.timing.shape), "impls": {"cake_gemm_sm90a_via_measure_rpc": {
        "check": {"passed": r.verdict.passed, "message": r.verdict.message},
        "median_ms": r.timing.median_ms, "p10_ms": r.timing.p10_ms, "p90_ms": r.timing.p90_ms,
        "tflops": flops / (r.timing.median_ms * 1e-3) / 1e12}}}
    print("Measure RPC:", json.dumps({"rows": [row], "machine": record, "ir_hash": r.ir_hash}))
