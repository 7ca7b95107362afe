"""FastLaunch on CPU: arguments prepared once per key, late pointers patched per call, the driver called with them.

The driver is replaced by a recorder, so these tests need no GPU; they also measure the
Python cost of a prepared launch up to the driver call.
"""

import ctypes
import time

import pytest
import torch
from cuda.bindings import driver

from compiler.lower import lower
from kernels.kmeans import tuned
from runtime import fast_launch
from runtime.compiled import CompiledKernelRunner


class Recorder:
    def __init__(self):
        self.calls = []

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):  # noqa: N802 (the driver's name)
        self.calls.append((fn, (gx, gy, gz), (bx, by, bz), shared, stream, params))
        return 0


@pytest.fixture
def runner(monkeypatch):
    """A CompiledKernelRunner of the sorted update (pointer arguments only) whose contract checks skip the device test."""
    md = lower(tuned.update_sorted(d=64)).launch
    r = CompiledKernelRunner.__new__(CompiledKernelRunner)
    r.md, r._maps, r._prepared = md, {}, {}
    r._block, r._cluster = tuple(md.block), tuple(md.cluster) or None
    r.kernel = type("K", (), {"function": driver.CUfunction(0xC0FFEE)})()
    monkeypatch.setattr(r, "check", lambda tensors, env: None)  # is_cuda and friends: the GPU tests check these
    recorder = Recorder()
    monkeypatch.setattr(fast_launch, "_driver", lambda: recorder)
    monkeypatch.setattr(fast_launch, "_raw_stream", lambda index: 77)
    r.recorder = recorder
    return r


def _tensors(b=2, n=1000, k=10, d=64):
    return {"x": torch.randn(b, n, d).to(torch.bfloat16), "order": torch.zeros(b, n, dtype=torch.int64),
            "sorted": torch.zeros(b, n, dtype=torch.int32), "sums": torch.zeros(b, k, d),
            "counts": torch.zeros(b, k, dtype=torch.int32)}


def test_late_arguments_must_be_plain_pointers(runner):
    with pytest.raises(ValueError, match="late argument 'nope' must be a plain pointer argument"):
        fast_launch.FastLaunch(runner, late=("nope",))


def test_a_prepared_launch_patches_the_late_pointer_and_calls_the_driver_once(runner):
    fl = fast_launch.FastLaunch(runner, late=("counts",))
    t = _tensors()
    prepared = fl.get("key", t)
    assert fl.get("key", t) is prepared  # prepared once per key
    fresh = torch.zeros(2, 10, dtype=torch.int32)
    fl.launch(prepared, None, counts=fresh)
    (fn, grid, block, shared, stream, params), = runner.recorder.calls
    assert fn == 0xC0FFEE and stream == 77 and params == ctypes.addressof(prepared.array)
    assert block == tuple(runner.md.block) + (1,) * (3 - len(runner.md.block))
    assert grid[0] == -(-1000 // 256) and grid[1] == 2  # ceil(N / (points per warp x warps)), B
    assert prepared.late["counts"].value == fresh.data_ptr()


def test_a_late_tensor_of_another_shape_is_refused(runner):
    fl = fast_launch.FastLaunch(runner, late=("counts",))
    prepared = fl.get("key", _tensors())
    with pytest.raises(ValueError, match=r"counts must be a contiguous torch.int32 tensor of shape \(2, 10\)"):
        fl.launch(prepared, None, counts=torch.zeros(2, 11, dtype=torch.int32))


def test_a_failed_launch_names_the_driver_error(runner, monkeypatch):
    fl = fast_launch.FastLaunch(runner)
    prepared = fl.get("key", _tensors())
    monkeypatch.setattr(runner.recorder, "cuLaunchKernel", lambda *a: 1)
    monkeypatch.setattr(fast_launch, "_error_name", lambda code: "CUDA_ERROR_INVALID_VALUE")
    with pytest.raises(RuntimeError, match="cuLaunchKernel.*failed: CUDA_ERROR_INVALID_VALUE"):
        fl.launch(prepared, None)


def test_the_python_cost_of_a_prepared_launch_is_a_few_microseconds(runner):
    fl = fast_launch.FastLaunch(runner, late=("counts",))
    prepared = fl.get("key", _tensors())
    out = torch.zeros(2, 10, dtype=torch.int32)
    best = float("inf")
    for _ in range(10):  # CPU time of the best of ten batches: other work on a shared machine only adds wall time
        t0 = time.process_time()
        for _ in range(500):
            fl.launch(prepared, None, counts=out)
        best = min(best, (time.process_time() - t0) / 500)
    print("prepared launch, Python side: %.2f us" % (best * 1e6))
    assert best < 5e-6
