"""Measurement bindings (worker side): how a compiled candidate is launched as launch(outputs, inputs).

A binding receives the loaded runner (runtime.compiled.CompiledKernelRunner) and the
job's payload and returns the launch function the oracle and the timer call. Each
kernel family's binding lives beside its kernels (the compiler service's Measure RPC
launches them the same way); the agent's seed families name them here.
"""

from kernels.kmeans.binding import assign as kmeans_assign  # noqa: F401  ("agent.measure.bindings:kmeans_assign")
