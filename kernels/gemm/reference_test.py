"""The GEMM oracle against an explicit triple sum."""

import torch

from kernels.gemm.reference import gemm


def test_gemm_matches_explicit_sum_and_upcasts_bf16():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(5, 7, generator=g).to(torch.bfloat16)
    B = torch.randn(3, 7, generator=g).to(torch.bfloat16)
    want = torch.zeros(5, 3, dtype=torch.float64)
    for m in range(5):
        for n in range(3):
            want[m, n] = sum(float(A[m, k]) * float(B[n, k]) for k in range(7))
    got = gemm(A, B, dtype=torch.float64)
    assert got.dtype == torch.float64 and got.shape == (5, 3)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert gemm(A, B).dtype == torch.float32
