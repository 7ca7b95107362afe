"""The naive KNN score kernel: how its search splits the database, and (on the GPU) that the search is correct."""

import pytest

from kernels.knn import binding

# Tails: Q, M and D not multiples of any tile; a database smaller than a tile; batches.
SHAPES = [
    {"B": 1, "Q": 100, "M": 50001, "D": 128, "k": 10},
    {"B": 2, "Q": 64, "M": 4099, "D": 120, "k": 10},
    {"B": 1, "Q": 7, "M": 33, "D": 128, "k": 10},
    {"B": 1, "Q": 130, "M": 130, "D": 96, "k": 10, "self": True},
]


@pytest.mark.parametrize("rows", [{"x": 64, "q": 64}, {"x": 128, "q": 128}, {}])
@pytest.mark.parametrize("b,q,m", [(1, 128, 10_000_000), (1, 65536, 65536), (2, 64, 4099), (1, 7, 33), (3, 1, 1)])
def test_the_ranges_cover_the_database_once_and_the_workspace_holds_their_lists(rows, b, q, m):
    s = binding.symbols({"B": b, "Q": q, "M": m}, rows)
    block = rows.get("x", 64)
    assert s["S"] * s["T"] * block >= m > (s["S"] - 1) * s["T"] * block  # no range starts past the end
    assert s["P"] % 32 == 0 and s["P"] >= s["S"] * binding.LISTS_PER_RANGE
    assert s["MP"] % 4 == 0 and m <= s["MP"] < m + 4


def test_a_search_fills_the_gpu_with_ranges_only_where_queries_do_not():
    assert binding.symbols({"B": 1, "Q": 128, "M": 10_000_000}, {"x": 64, "q": 64})["S"] * 2 >= binding.TARGET_BLOCKS
    assert binding.symbols({"B": 1, "Q": 65536, "M": 65536}, {"x": 64, "q": 64})["S"] == 1


def test_norms_are_kept_per_database_until_it_changes():
    import torch

    norms = binding.Norms()
    norms.ROWS_PER_CHUNK = 3  # several chunks
    a, b = torch.randn(2, 7, 5), torch.randn(2, 7, 5)
    col = norms(a, 8)
    assert col.shape == (2, 8) and torch.allclose(col[:, :7], (a * a).sum(-1)) and not col[:, 7:].any()
    assert norms(b, 8) is not col and norms(a, 8) is col  # alternating input sets keep both
    a.mul_(2)  # written in place: new norms
    assert torch.allclose(norms(a, 8)[:, :7], (a * a).sum(-1))
    more = [torch.randn(1, 3, 5) for _ in range(binding.Norms.KEEP)]
    for x in more:
        norms(x, 4)
    assert len(norms._kept) == binding.Norms.KEEP and norms(more[-1], 4) is norms(more[-1], 4)


@pytest.mark.gpu
def test_the_naive_seed_searches_exactly_at_tail_shapes():
    from compiler.build import cache as compile_cache
    from compiler.build import driver
    from compiler.verify import has_errors, verify
    from kernels.knn.contract import knn_contract
    from kernels.knn.naive import QUERIES, rows_naive
    from runtime.check import check_kernel
    from runtime.compiled import CompiledKernelRunner

    kernel = rows_naive()
    assert not has_errors(verify(kernel))
    result = driver.build(kernel, compile_cache.default_cache())
    assert result.ok, [d.message for d in result.diagnostics]
    runner = CompiledKernelRunner(result.compiled)
    for shape in SHAPES:
        checked = check_kernel(knn_contract([shape]), binding.search(runner, {"tile_rows": {"q": QUERIES, "x": 64}}))
        assert checked.passed, (shape, checked.message)
