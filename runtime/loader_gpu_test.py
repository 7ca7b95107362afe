"""The loader's launch paths on a GPU: large dynamic shared memory (opt-in) and cluster launches."""

import ctypes
import os

import pytest

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testing", "launch_features.cu")


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    import torch

    from compiler.build.nvcc import compile_cuda
    from compiler.targets import target_for_capability
    from runtime.loader import Module

    target = target_for_capability(*torch.cuda.get_device_capability())
    return Module(compile_cuda(SOURCE, target, str(tmp_path_factory.mktemp("launch"))).cubin)


@pytest.mark.gpu
def test_dynamic_shared_memory_up_to_the_device_limit(module):
    import torch

    from runtime.loader import device_attribute

    limit = device_attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", torch.cuda.current_device())
    assert limit > 48 * 1024, "this GPU offers no more than 48 KB of dynamic shared memory per block"
    kernel = module.kernel("cake_dynamic_smem_sum")
    words = limit // 4
    out = torch.zeros(4, dtype=torch.int64, device="cuda")
    kernel.launch(grid=(4,), block=(256,), args=[ctypes.c_void_p(out.data_ptr()), ctypes.c_int(words)], shared_bytes=limit)
    torch.cuda.synchronize()
    assert out.tolist() == [words * (words - 1) // 2] * 4
    with pytest.raises(ValueError, match="dynamic shared memory of %d bytes" % (limit + 1024)):
        kernel.launch(grid=(1,), block=(32,), args=[ctypes.c_void_p(out.data_ptr()), ctypes.c_int(1)], shared_bytes=limit + 1024)


@pytest.mark.gpu
@pytest.mark.sm_90a
def test_cluster_launch(module):
    import torch

    out = torch.full((8,), -7, dtype=torch.int32, device="cuda")
    module.kernel("cake_cluster_rank").launch(grid=(8,), block=(32,), args=[ctypes.c_void_p(out.data_ptr())], cluster=(2,))
    torch.cuda.synchronize()
    assert out.tolist() == [0, 1] * 4
