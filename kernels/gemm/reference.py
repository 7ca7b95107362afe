"""The GEMM oracle: C = A B^T with fp32 (or fp64) accumulation.

The schedules in schedules.py store C in bf16; the runtime compares their output with
this function's under the contract's relative-L2 tolerance.
"""

import torch


def gemm(A, B, dtype=torch.float32):
    """C[m, n] = sum_k A[m, k] * B[n, k], computed in `dtype` (float32 or float64).

    A is [M, K] and B is [N, K], both K-contiguous, as the kernels take them; the
    inputs are upcast before the product, so bf16 operands are used exactly.
    """
    return A.to(dtype) @ B.to(dtype).T
