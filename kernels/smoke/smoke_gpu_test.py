"""GPU smoke test: compile the smoke kernel for this GPU, launch it from torch, check it.

Proves the path every kernel takes (nvcc per SM target -> cubin -> cuda-python
load -> launch on torch's stream). Skips without a GPU; fails when REQUIRE_GPU=1.
"""

import ctypes
import os
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.gpu
def test_axpy_matches_torch():
    import torch

    from compiler.build.nvcc import compile_cuda
    from compiler.targets import target_for_capability
    from runtime.loader import Module

    target = target_for_capability(*torch.cuda.get_device_capability())
    with tempfile.TemporaryDirectory() as tmp:
        art = compile_cuda(os.path.join(HERE, "vector_add.cu"), target, tmp)
    kernel = Module(art.cubin).kernel("cake_smoke_axpy")
    for n in (1, 1023, 1 << 20, (1 << 20) + 3):
        a = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")  # poisoned: unwritten elements fail
        args = [
            ctypes.c_void_p(out.data_ptr()),
            ctypes.c_void_p(a.data_ptr()),
            ctypes.c_void_p(b.data_ptr()),
            ctypes.c_float(0.5),
            ctypes.c_int64(n),
        ]
        kernel.launch(grid=(min(1024, (n + 255) // 256),), block=(256,), args=args)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, a + 0.5 * b)
