"""GPU tests of the wide-k search (33 <= k <= 256, kernels/knn/wide_select.py): the runtime's oracle at tail shapes
(k on and off the capacity ladder's steps, small databases, batches, self-KNN, every metric and dtype), the kernels
really run (no fallback), and a buffer overflow still gives exact results.

CASES is data so that a run can build their kernels ahead in parallel (bench_widek.build_all)."""

import warnings

import pytest

from kernels.knn.testing.oracle import knn_launch

SHAPES = [
    {"B": 1, "Q": 333, "M": 40961, "D": 72},
    {"B": 2, "Q": 5, "M": 30000, "D": 128},
    {"B": 3, "Q": 70, "M": 1500, "D": 20},  # no seeding pass: every row is a candidate
    {"B": 1, "Q": 1, "M": 200000, "D": 256},
]
SELF = [{"B": 1, "Q": 5000, "M": 5000, "D": 64}, {"B": 2, "Q": 700, "M": 700, "D": 16}]
F32 = [{"B": 1, "Q": 200, "M": 30000, "D": 100}, {"B": 2, "Q": 3, "M": 5000, "D": 8}]
# (shapes, metric, k, dtype, exclude_self)
CASES = [(SHAPES, "l2", 33, "bfloat16", False), (SHAPES, "l2", 100, "bfloat16", False),
         (SHAPES, "l2", 256, "bfloat16", False), (SHAPES, "ip", 64, "bfloat16", False),
         (SHAPES, "cosine", 129, "bfloat16", False), (SHAPES[:3], "cosine", 90, "float16", False),
         (F32, "l2", 50, "float32", False), (SELF, "l2", 90, "bfloat16", True), (SELF, "cosine", 90, "bfloat16", True)]


def build_shapes():
    """Every (shape, metric, k, dtype, exclude_self) the tests search, as bench_widek.build_all takes them."""
    return [dict(s, metric=metric, k=k, dtype=dtype, exclude_self=ex) for shapes, metric, k, dtype, ex in CASES
            for s in shapes]


@pytest.mark.gpu
@pytest.mark.parametrize("shapes, metric, k, dtype, exclude_self", CASES)
def test_wide_k_passes_the_oracle(shapes, metric, k, dtype, exclude_self):
    import torch

    from kernels.knn.contract import knn_contract
    from runtime.check import check_kernel

    shapes = [dict(s, k=k, metric=metric, exclude_self=exclude_self) for s in shapes]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = check_kernel(knn_contract(shapes, getattr(torch, dtype)), knn_launch(metric, k, exclude_self))
    assert result.passed, result.message
    fallbacks = [str(w.message) for w in seen if "exact torch path" in str(w.message)]
    assert not fallbacks, fallbacks  # the wide-k kernels ran


@pytest.mark.gpu
def test_an_overflowing_buffer_falls_back_to_exact_results():
    import torch

    from kernels.knn import api, reference

    g = torch.Generator(device="cuda").manual_seed(5)
    base = torch.randint(-2, 3, (4, 16), device="cuda", generator=g).to(torch.bfloat16)
    x = base[torch.randint(0, 4, (20000,), device="cuda", generator=g)]  # four distinct rows: every row ties
    q = base[:3].clone()
    dist, idx = api.knn(q, x, 200)
    want, _ = reference.knn(q.double().cpu(), x.double().cpu(), 200)
    torch.testing.assert_close(dist.double().cpu(), want, rtol=0, atol=1e-6)  # exact scores, best first
