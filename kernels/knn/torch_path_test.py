"""The exact torch path (k past the register lists) against the float64 oracle, on the CPU."""

import pytest
import torch

from kernels.knn import dispatch, reference
from kernels.knn import rows as knn_rows


@pytest.mark.parametrize("metric, dtype, exclude_self", [
    ("l2", torch.bfloat16, False), ("ip", torch.float32, False), ("cos", torch.bfloat16, False), ("l2", torch.float32, True),
])
def test_wide_k_matches_the_oracle(metric, dtype, exclude_self):
    g = torch.Generator().manual_seed(3)
    b, nq, m, d, k = 2, 37, 301, 20, 40
    x = torch.randn(b, m, d, generator=g).to(dtype)
    q = x[:, :nq] if not exclude_self else x
    if exclude_self:
        nq = m
    db = knn_rows.Database(x, metric)
    dist = torch.full((b, nq, k), float("nan"))
    idx = torch.full((b, nq, k), -7, dtype=torch.int64)
    dispatch.search_into(q.contiguous(), db, k, exclude_self, dist, idx)
    want, want_idx = reference.knn(q.float(), x.float(), k, metric, exclude_self=exclude_self)
    torch.testing.assert_close(dist.double(), want, rtol=1e-5, atol=1e-4)
    assert (idx == want_idx).float().mean() > 0.99  # only near-ties may swap
    if exclude_self:
        assert not (idx == torch.arange(nq)[None, :, None]).any()
