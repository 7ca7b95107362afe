"""A real kernel as a PyTorch custom op on the GPU: cake::gemv_f32_gpu_test under opcheck."""

import tempfile

import pytest

from runtime.testing import cheat_suite


@pytest.mark.gpu
def test_honest_gemv_custom_op_passes_opcheck():
    import torch

    from compiler.build.nvcc import compile_cuda
    from compiler.targets import target_for_capability
    from runtime import ops
    from runtime.loader import Module
    from runtime.testing import cheat_bindings, gemv_contract

    target = target_for_capability(*torch.cuda.get_device_capability())
    with tempfile.TemporaryDirectory() as tmp:
        cubin = compile_cuda(cheat_suite.SOURCE, target, tmp).cubin
    op = ops.register("gemv_f32_gpu_test", gemv_contract.contract(), cheat_bindings.honest(Module(cubin)))
    a = torch.randn(333, 1000, device="cuda")
    x = torch.randn(1000, device="cuda")
    expected = (a.double() @ x.double()).float()
    torch.testing.assert_close(op(a, x), expected, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(torch.ops.cake.gemv_f32_gpu_test(a, x), expected, rtol=1e-4, atol=1e-3)
    result = torch.library.opcheck(op, (a, x))
    print("opcheck:", result)
    assert all(v == "SUCCESS" for v in result.values()), result
