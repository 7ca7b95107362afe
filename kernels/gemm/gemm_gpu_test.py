"""GPU tests of the GEMM schedules: a wgmma split into narrower instructions (instr_shape) computes the same product."""

import pytest


@pytest.mark.gpu
@pytest.mark.parametrize("instr_n", [0, 128, 64, 16])
def test_wgmma_instruction_shapes_pass_the_oracle(instr_n):
    from compiler.build.driver import build
    from kernels.gemm.contract import gemm_contract
    from kernels.gemm.schedules import gemm_sm90a
    from runtime.check import check_kernel
    from runtime.compiled import CompiledKernelRunner

    kernel = gemm_sm90a()
    if instr_n:
        (mma,) = [op.mma for op in kernel.roles[1].body[1].loop.body if op.WhichOneof("kind") == "mma"]
        mma.instr_shape.extend([64, instr_n, 16])
    built = build(kernel)
    assert built.ok, [d.message for d in built.diagnostics]
    runner = CompiledKernelRunner(built.compiled)

    def launch(outputs, inputs):
        runner(A=inputs[0], B=inputs[1], C=outputs[0])

    result = check_kernel(gemm_contract([{"M": 256, "N": 512, "K": 192}, {"M": 128, "N": 256, "K": 64}]), launch)
    assert result.passed, result.message
