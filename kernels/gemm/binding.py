"""How a compiled GEMM is launched by the oracle and the timer (worker side): launch(outputs, inputs) over its runner."""


def launch(runner, options):
    """runner: runtime.compiled.CompiledKernelRunner of a kernel with params A [M, K], B [N, K], C [M, N]."""

    def run(outputs, inputs):
        a, b = inputs
        runner(A=a, B=b, C=outputs[0])

    return run
