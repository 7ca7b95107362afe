"""The kernels a measuring compiler service can check and time, by name (the Measure RPC, the MCP measure tool).

Each task pairs a contract (kernels/<name>/contract.py) with the binding that launches a
compiled kernel of that family, and the shapes it is checked at (the first is timed).
`measurer()` is what `cake-server --measure` and `cake-mcp --measure` start: the
runtime's isolated workers, on this machine's GPU.
"""

from runtime.measure import Measurer, Task

TASKS = {
    "gemm_bf16": Task(
        contract="kernels.gemm.contract:gemm_contract",
        binding="kernels.gemm.binding:launch",
        shapes=({"M": 4096, "N": 4096, "K": 4096}, {"M": 256, "N": 256, "K": 64}, {"M": 384, "N": 768, "K": 320}),
        doc="C[M, N] = A[M, K] @ B[N, K]^T in bf16 with fp32 accumulation, as compiler/corpus/good/gemm_*.cake "
            "compute (params A, B, C); checked by relative L2 error against the fp32 reference",
    ),
    "kmeans_assign": Task(
        contract="kernels.kmeans.contract:assign_contract",
        binding="kernels.kmeans.binding:assign",
        shapes=({"B": 1, "N": 65536, "K": 1024, "D": 128}, {"B": 2, "N": 3072, "K": 768, "D": 128},
                {"B": 1, "N": 768, "K": 1536, "D": 128}),
        doc="labels[b, n] = nearest centroid of x[b, n] among c[b] (squared L2, ties to the smaller index), bf16, "
            "as compiler/corpus/good/kmeans_assign_*.cake (params x, c, c_sq, labels; c_sq is computed for the "
            "kernel); checked by label agreement and objective",
    ),
}


def measurer(**options):
    """A Measurer of TASKS (options as runtime.measure.Measurer takes them)."""
    return Measurer(TASKS, **options)
