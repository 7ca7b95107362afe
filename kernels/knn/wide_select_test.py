"""The wide-k search (33 <= k <= 256) on the CPU: the algorithm against the oracle (float64 emulation,
kernels/knn/testing/widek.py), its plans over the domain's corners, the kernels' verification and lowering on
every target, the verifier's rules on known-bad forms (exact ids and paths), and bad arguments."""

import copy

import pytest
import torch

from compiler.build import driver
from compiler.verify import verify
from kernels.knn import plan as planner
from kernels.knn import reference, schedules, wide_select, widek
from kernels.knn.testing import widek as emulate


def _data(kind, b, n, d, gen):
    if kind == "gauss":
        return torch.randn(b, n, d, generator=gen, dtype=torch.float64)
    if kind == "clustered":
        centres = torch.randn(b, 4, d, generator=gen, dtype=torch.float64) * 4
        return centres[:, torch.randint(0, 4, (n,), generator=gen)] + 0.1 * torch.randn(b, n, d, generator=gen,
                                                                                         dtype=torch.float64)
    # ties: a few distinct rows repeated
    base = torch.randint(-2, 3, (b, 16, d), generator=gen).double()
    return base[:, torch.randint(0, 16, (n,), generator=gen)]


@pytest.mark.parametrize("kind", ["gauss", "clustered", "ties"])
@pytest.mark.parametrize("metric", ["l2", "ip", "cos"])
@pytest.mark.parametrize("k,m,nq,exclude_self", [(33, 3000, 5, False), (90, 1200, 1200, True), (256, 9000, 3, False),
                                                 (128, 700, 2, False)])
def test_the_wide_k_algorithm_finds_what_the_oracle_does(kind, metric, k, m, nq, exclude_self):
    gen = torch.Generator().manual_seed(k * 7 + m)
    x = _data(kind, 2, m, 16, gen)
    q = x[:, :nq].clone() if exclude_self else _data(kind, 2, nq, 16, gen)
    dist, idx, over = emulate.search(q, x, k, metric, exclude_self)
    ref_d, ref_i = reference.knn(q, x, k, metric, exclude_self)
    keep = ~over
    if kind != "ties":
        assert not over.any()  # the buffers hold what beats the bound on these distributions
    assert torch.allclose(dist[keep], ref_d[keep], rtol=1e-9, atol=1e-9)  # the same scores, best first
    if kind == "gauss":
        assert torch.equal(idx[keep], ref_i[keep])  # and, with no ties, the same rows


def test_the_union_bound_is_the_kth_of_distinct_rows():
    part_v = torch.tensor([[[[1.0, 4.0]], [[2.0, 3.0]]]])  # B 1, P 2, Q 1, k' 2
    assert reference.union_bound(part_v, 3, "l2").item() == 3.0
    assert reference.union_bound(part_v, 5, "l2").item() == float("inf")  # fewer entries than k: no bound
    assert reference.union_bound(part_v, 2, "ip").item() == 3.0


def test_capacity_follows_the_ladder_and_refuses_k_outside_the_path():
    assert [wide_select.capacity(k) for k in (33, 64, 65, 128, 129, 256)] == [1024, 1024, 2048, 2048, 4096, 4096]
    assert wide_select.capacity(40, 1500) == 2048  # no seeding pass: every row is a candidate
    for k in (32, 257):
        with pytest.raises(ValueError, match="k must be in"):
            wide_select.capacity(k)
    assert wide_select.sample_rows(700, 90) == 0 and wide_select.sample_rows(1000, 90) == 500
    assert wide_select.sample_rows(1824, 91) == 912 and wide_select.sample_rows(80000, 90) == 10000


def test_the_seeding_lists_are_read_before_any_fan_in():
    # A fan-in keeps 32 of each 32 lists' entries: too few for the union to bound the k-th score (a shape with 88
    # seeding lists at k 127).
    sp, _ = widek.seed_plan(3, 3, 179629, 80, 127, planner.SMS)
    assert planner.fanin_lists(sp.lists_padded) and sp.lists * wide_select.SEED_K > 127
    assert not any(builder == "merge_fanin" for builder, _ in widek.kernels_for(3, 3, 179629, 77, 127))


SHAPES = [(1, 1, 1 << 20, 128), (28, 1, 52776, 26), (3, 494, 534739, 51), (7, 9664, 1824, 20), (8, 49, 19089, 14),
          (1, 70000, 70000, 50), (2, 16, 9201137, 14), (1, 3, 179629, 77), (4, 1000, 600, 1024), (1, 65, 2049, 8),
          (1, 72365, 4555, 10), (2, 2, 1670, 56), (3, 311, 1147, 747)]


@pytest.mark.parametrize("b,q,m,d", SHAPES)
@pytest.mark.parametrize("k", [33, 64, 65, 128, 129, 256])
def test_plans_fit_every_corner(b, q, m, d, k):
    sp, covered, fp, cap = widek.plans(b, q, m, -(-d // 8) * 8, k, planner.SMS)
    assert fp.layout == "rows" and fp.splits * fp.tiles * fp.kwargs["block_n"] >= m
    assert cap in wide_select.CAPACITIES
    if sp is not None:
        assert covered <= m and sp.lists * wide_select.SEED_K > k  # a bound on the (k + 1)-th score exists
    else:
        assert m <= cap  # no seeding pass only where the buffers hold every row


@pytest.mark.parametrize("b,q,m,d", SHAPES[:6])
@pytest.mark.parametrize("metric", ["l2", "ip", "cos"])
def test_the_search_kernels_verify_clean(b, q, m, d, metric):
    for builder, params in widek.kernels_for(b, q, m, d, 90 if metric != "ip" else 256, metric, exclude_self=q == m,
                                             dtype=torch.float16 if metric == "cos" else torch.bfloat16):
        kernel = (getattr(schedules, builder, None) or getattr(wide_select, builder))(**dict(params))
        assert [d.message for d in verify(kernel)] == [], (builder, params)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a", "sm_100a"])
@pytest.mark.parametrize("metric", ["l2", "ip", "cos"])
def test_the_select_and_filters_lower_on_every_target(target, metric):
    sel = wide_select.select_kernel(2048, metric, "f32", "i64", target=target)
    assert verify(sel) == []
    assert "cake::select::select_rescore<" in driver.source_only(sel).cuda_source
    build = {"sm_80": schedules.rows_sm80, "sm_90a": schedules.rows_sm90a, "sm_100a": schedules.rows_sm100a}[target]
    filt = build(metric=metric, collect=True)
    assert verify(filt) == []
    source = driver.source_only(filt).cuda_source
    assert "cake::select::append(" in source and "__any_sync" in source and "cake::topk::insert" not in source


def _first(kernel, kind):
    """(op message, its path) of the first op of `kind` in role order."""
    for r, role in enumerate(kernel.roles):
        stack = [(role.body, "kernel.roles[%d].body" % r)]
        while stack:
            body, prefix = stack.pop(0)
            for j, op in enumerate(body):
                which = op.WhichOneof("kind")
                path = "%s[%d].%s" % (prefix, j, which)
                if which == kind:
                    return getattr(op, which), path
                if which == "loop":
                    stack.append((op.loop.body, path + ".body"))
                if which == "branch":
                    stack.append((op.branch.then_body, path + ".then_body"))
    raise AssertionError(kind)


def _errors(kernel):
    return [(d.id, d.path) for d in verify(kernel)]


def test_a_float_count_is_refused_at_the_collect():
    k = copy.deepcopy(schedules.rows_sm90a(collect=True))
    next(p for p in k.params if p.name == "count").dtype = next(p for p in k.params if p.name == "bound").dtype
    _, path = _first(k, "top_k_collect")
    assert _errors(k) == [("CAKE-STRUCT-025", path + ".count")]


def test_a_bound_of_the_wrong_layout_is_refused_at_the_collect():
    k = copy.deepcopy(schedules.rows_sm90a(collect=True))
    op, path = _first(k, "top_k_collect")
    op.bound.region = "acc"
    assert ("CAKE-STRUCT-025", path + ".bound") in _errors(k)


def test_a_short_or_uneven_scratch_is_refused_at_the_select():
    k = copy.deepcopy(wide_select.select_kernel(2048))
    _, path = _first(k, "top_k_select")
    next(r for r in k.regions if r.name == "sV").shape[:] = [1024]
    next(r for r in k.regions if r.name == "sI").shape[:] = [1024]
    assert _errors(k) == [("CAKE-STRUCT-026", path + ".scratch_values")]
    next(r for r in k.regions if r.name == "sI").shape[:] = [3000]
    assert _errors(k) == [("CAKE-STRUCT-026", path + ".scratch_indices")]


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="capacity"):
        wide_select.select_kernel(1000)
    with pytest.raises(ValueError, match="metric"):
        wide_select.select_kernel(metric="hamming")
    with pytest.raises(ValueError, match="index_dtype|indices"):
        wide_select.select_kernel(index_dtype="u8")
    with pytest.raises(ValueError, match="collect"):
        schedules.rows_sm90a(collect=True, seeded=True)


def test_the_cost_model_counts_the_collect_and_the_sort():
    from compiler.analysis import counts

    sel = wide_select.select_kernel(2048)
    per_block, _ = counts.count(sel, {**dict(B=1, Q=100, M=5000, D=64, C=2048, k=90), **counts.builtins((100, 1, 1))}, 100)
    assert per_block["fp32"] == 4 * 1024 * (11 * 12 // 2)  # a full 2048-entry bitonic sort
    filt = schedules.rows_sm90a(collect=True)
    env = dict(B=1, Q=256, M=512, D=128, S=1, T=8, C=1024, MP=512)
    per_block, _ = counts.count(filt, {**env, **counts.builtins((132, 1, 1))}, 132)
    assert per_block["fp32"] > 0 and "read:bound" in per_block
