"""The GEMM's runtime contract: inputs, domain, reference and metric for the oracle and timer.

C[M, N] = A[M, K] @ B[N, K]^T with bf16 operands; C is bf16, judged by relative L2
error against the fp32 reference (bf16 output rounding sits near 4e-3).
"""

import torch

from kernels.gemm import reference
from runtime import distributions, metrics
from runtime.contract import Contract, TensorSpec

REL_L2 = 1e-2


def _inputs(shape, dist, generator, device):
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = distributions.sample(dist, (m, k), generator, device).to(torch.bfloat16)
    b = distributions.sample(dist, (n, k), generator, device).to(torch.bfloat16)
    return [a, b]


def gemm_contract(shapes):
    """A Contract over `shapes` (dicts of M, N, K; the first is the tuned one)."""
    return Contract(
        name="gemm_bf16",
        input_names=("A", "B"),
        output_names=("C",),
        shapes=tuple(shapes),
        make_inputs=_inputs,
        outputs=lambda inputs: [TensorSpec((inputs[0].shape[0], inputs[1].shape[0]), torch.bfloat16)],
        reference=lambda inputs: [reference.gemm(inputs[0], inputs[1])],
        metric=lambda outs, refs, inputs: metrics.rel_l2(outs[0], refs[0], REL_L2),
        # LARGE (1e4 scale) overflows nothing in bf16 and stays a valid GEMM input.
        distributions=(distributions.NORMAL, distributions.UNIFORM, distributions.LARGE),
    )
