"""The GPU measurement path, as far as it runs without a GPU: bindings, job records, isolated workers, the probe."""

import torch

from agent import seeds
from agent.measure import bindings, device, gpu
from agent.ir_edit import tile_rows
from agent.measure.result import Measured
from agent.testing import small_task
from kernels.kmeans.naive import assign_naive
from kernels.kmeans.schedules import assign_sm90a
from kernels.kmeans.tuned import assign_sm90a_tuned
from runtime.pool import WorkerPool


class _Runner:
    """Stands in for runtime.compiled.CompiledKernelRunner: records the call."""

    def __init__(self, symbols):
        self.md = type("Md", (), {"symbols": [type("S", (), {"name": s}) for s in symbols]})
        self.calls = []

    def __call__(self, **tensors):
        self.calls.append(tensors)


def test_the_binding_computes_squared_norms_and_pads_them_for_the_tuned_family():
    x, c = torch.randn(2, 8, 16), torch.randn(2, 5, 16)
    plain = _Runner(["B", "N", "K", "D"])
    bindings.kmeans_assign(plain, {"tile_rows": {"c": 4}})([torch.empty(2, 8, dtype=torch.int32)], [x, c])
    assert torch.allclose(plain.calls[0]["c_sq"], (c * c).sum(-1))
    padded = _Runner(["B", "N", "K", "KP", "D"])
    bindings.kmeans_assign(padded, {"tile_rows": {"c": 4}})([torch.empty(2, 8, dtype=torch.int32)], [x, c])
    c_sq = padded.calls[0]["c_sq"]
    assert c_sq.shape == (2, 8) and torch.isinf(c_sq[:, 5:]).all() and torch.allclose(c_sq[:, :5], (c * c).sum(-1))


def test_tile_rows_read_the_tiles_each_input_loads_into():
    assert tile_rows(assign_sm90a(block_k=64))["c"] == 64
    assert tile_rows(assign_sm90a_tuned(block_k=128)) == {"x": 256, "c": 128, "c_sq": 128}
    assert tile_rows(assign_naive()) == {"x": 64, "c": 128, "c_sq": 128}  # plain copies count too


def _evaluator(tmp_path, record):
    ev = gpu.GpuEvaluator.__new__(gpu.GpuEvaluator)
    ev.task, ev.family, ev.timing, ev.time_limit_s = small_task(), seeds.family("kmeans_assign_sm90a"), gpu.TIMING, 5
    ev._run = lambda task, payload, ir_hash, label: dict(record, payload=payload)
    return ev


class _Compiled:
    ir_hash = "h"
    toolchain = "nvcc 13.0 -arch=sm_90a"
    target = "sm_90a"

    def SerializeToString(self):
        return b"cubin"


def test_job_records_become_measurements_or_failures(tmp_path):
    ok = {"ok": True, "elapsed_s": 2.5, "result": {"passed": True, "median_ms": 0.05, "p10_ms": 0.049, "p90_ms": 0.052,
                                                   "check": "passed 15 cases", "environment": {"gpu": "H200"}}}
    m = _evaluator(tmp_path, ok).measure(_Compiled(), assign_sm90a(), "agent.measure.bindings:kmeans_assign", "c1")
    assert m == Measured(True, 0.05 * 1e-3, 0.049 * 1e-3, 0.052 * 1e-3, 2.5,
                         detail={"check": "passed 15 cases", "environment": {"gpu": "H200"},
                                 "toolchain": "nvcc 13.0 -arch=sm_90a", "target": "sm_90a"}, record=m.record)
    assert m.record["elapsed_s"] == 2.5 and m.record["payload"]["timing"] == gpu.TIMING
    wrong = {"ok": True, "elapsed_s": 1.0, "result": {"passed": False, "kind": "unwritten_output", "message": "case 3"}}
    assert _evaluator(tmp_path, wrong).measure(_Compiled(), assign_sm90a(), "b", "c2").kind == "unwritten_output"
    hung = {"ok": False, "elapsed_s": 5.0, "failure": {"kind": "timeout", "message": "no answer", "ir_hash": "h"}}
    m = _evaluator(tmp_path, hung).measure(_Compiled(), assign_sm90a(), "b", "c3")
    assert (m.passed, m.kind, m.device_s) == (False, "timeout", 5.0)


def test_a_candidate_that_breaks_in_its_worker_is_a_failure_not_a_crash(tmp_path):
    # The real worker task on a real (CPU-only) worker pool: loading the cubin fails, the pool reports it.
    ev = gpu.GpuEvaluator.__new__(gpu.GpuEvaluator)
    ev.task, ev.family, ev.timing, ev.time_limit_s = small_task(), seeds.family("kmeans_assign_sm90a"), gpu.TIMING, 60
    ev.pool = WorkerPool(results_path=str(tmp_path / "evaluations.jsonl"))
    try:
        from cake.compiler.v1 import artifact_pb2

        compiled = artifact_pb2.CompiledKernel(ir_hash="h", cubin=b"not a cubin")
        m = ev.measure(compiled, assign_sm90a(), "agent.measure.bindings:kmeans_assign", "broken")
    finally:
        ev.close()
    assert not m.passed and m.kind in ("exception", "cuda_error") and m.message
    assert (tmp_path / "evaluations.jsonl").read_text().count("\n") == 1


def test_the_probe_says_why_there_is_no_gpu_here():
    g = device.probe("sm_90a")
    assert isinstance(g.usable, bool) and g.description
