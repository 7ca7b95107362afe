"""GPU tests of the KNN API: the oracle at tail shapes on the runtime's five distributions, every metric
and dtype, self-KNN, both layouts, the custom ops (opcheck, torch.compile, CUDA graphs), KnnIndex."""

import pytest

from kernels.knn.testing.oracle import knn_launch

# Tails everywhere: Q, M, D and k are not multiples of any tile; one query (the small-Q layout),
# more queries than a block holds, a database smaller than a tile, batches.
SHAPES = [
    {"B": 1, "Q": 333, "M": 4097, "D": 128},
    {"B": 2, "Q": 5, "M": 3000, "D": 72},
    {"B": 1, "Q": 1, "M": 70, "D": 256},
    {"B": 3, "Q": 130, "M": 1000, "D": 40},
    {"B": 1, "Q": 700, "M": 2049, "D": 520},
]


def _check(shapes, metric, k, dtype="bfloat16", exclude_self=False):
    import torch

    from kernels.knn.contract import knn_contract
    from runtime.check import check_kernel

    shapes = [dict(s, k=k, metric=metric, exclude_self=exclude_self) for s in shapes]
    result = check_kernel(knn_contract(shapes, getattr(torch, dtype)), knn_launch(metric, k, exclude_self))
    assert result.passed, result.message


@pytest.mark.gpu
@pytest.mark.parametrize("metric, k", [("l2", 1), ("l2", 10), ("l2", 32), ("ip", 10), ("cosine", 10), ("ip", 3)])
def test_knn_passes_the_oracle_on_tail_shapes(metric, k):
    _check(SHAPES[:4], metric, k)


@pytest.mark.gpu
def test_wide_features_and_half_precision():
    _check(SHAPES[4:], "l2", 7)
    _check(SHAPES[:2], "cosine", 5, dtype="float16")


@pytest.mark.gpu
def test_float32_inputs_rank_through_bf16_terms_and_rescore_exactly():
    _check([{"B": 1, "Q": 200, "M": 3000, "D": 100}, {"B": 2, "Q": 3, "M": 500, "D": 8}], "l2", 10, dtype="float32")


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_self_knn_excludes_each_point(metric):
    _check([{"B": 1, "Q": 1500, "M": 1500, "D": 64}, {"B": 2, "Q": 9, "M": 9, "D": 16}], metric, 8, exclude_self=True)


@pytest.mark.gpu
def test_both_layouts_agree_on_few_queries():
    import torch

    from kernels.knn import dispatch
    from kernels.knn import rows as knn_rows

    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, 9, 128, device="cuda", generator=g).to(torch.bfloat16)
    x = torch.randn(1, 50_000, 128, device="cuda", generator=g).to(torch.bfloat16)
    db = knn_rows.Database(x, "l2")
    out = {}
    for layout in ("rows", "cols"):
        dist = torch.empty(1, 9, 16, device="cuda")
        idx = torch.empty(1, 9, 16, device="cuda", dtype=torch.int32)
        out[layout] = dispatch.search_into(q, db, 16, False, dist, idx, layout=layout)
    # The layouts sum each score in another order: rows may swap only where scores tie within rounding.
    same = (out["rows"][1] == out["cols"][1]).float().mean().item()
    assert same > 0.99, same
    torch.testing.assert_close(out["rows"][0], out["cols"][0], rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_ties_go_to_the_smaller_index():
    import torch

    from kernels.knn import api

    base = torch.randn(100, 32, device="cuda").to(torch.bfloat16)
    x = base.repeat(4, 1)  # every row four times: rows j, j + 100, j + 200, j + 300 tie exactly
    _, idx = api.knn(base[:7], x, 4)
    want = torch.arange(7, device="cuda")[:, None] + 100 * torch.arange(4, device="cuda")[None, :]
    assert torch.equal(idx.long(), want)


@pytest.mark.gpu
def test_index_search_matches_knn_and_keeps_its_rows():
    import torch

    from kernels.knn import api

    x = torch.randn(2, 5000, 96, device="cuda").to(torch.bfloat16)
    q = torch.randn(2, 77, 96, device="cuda").to(torch.bfloat16)
    index = api.KnnIndex(x, metric="ip")
    d1, i1 = index.search(q, 12, index_dtype=torch.int64)
    d2, i2 = api.knn(q, x, 12, metric="ip", index_dtype=torch.int64)
    assert i1.dtype == torch.int64 and torch.equal(i1, i2) and torch.equal(d1, d2)
    assert torch.equal(index.search(q, 12, return_distances=False), i1.int())
    with pytest.raises(ValueError, match="same feature dim"):
        index.search(q[..., :64], 3)


@pytest.mark.gpu
def test_custom_ops_pass_opcheck():
    import torch

    from kernels.knn import api
    from kernels.knn import rows as knn_rows

    q = torch.randn(2, 50, 64, device="cuda").to(torch.bfloat16)
    x = torch.randn(2, 700, 64, device="cuda").to(torch.bfloat16)
    torch.library.opcheck(api._knn_op, (q, x, 5, "l2", False, False), test_utils=("test_schema", "test_faketensor"))
    db = knn_rows.Database(x, "cos")
    torch.library.opcheck(api._search_op, (q, db.rank, db.rows, db.col, db.max_norm(), 5, "cos", False, True),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.gpu
def test_compiles_with_fullgraph_and_replays_in_a_cuda_graph():
    import torch

    from kernels.knn import api

    q = torch.randn(300, 128, device="cuda").to(torch.bfloat16)
    x = torch.randn(20_000, 128, device="cuda").to(torch.bfloat16)
    want = api.knn(q, x, 10)

    @torch.compile(fullgraph=True)
    def f(a, b):
        dist, idx = api.knn(a, b, 10)
        return dist.sqrt(), idx

    dist, idx = f(q, x)
    assert torch.equal(idx, want[1]) and torch.allclose(dist, want[0].sqrt())

    index = api.KnnIndex(x)
    index.search(q, 10)  # build and warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        g_dist, g_idx = index.search(q, 10)
    q.copy_(torch.randn_like(q))
    graph.replay()
    torch.cuda.synchronize()
    fresh = api.knn(q, x, 10)
    assert torch.equal(g_idx, fresh[1]) and torch.equal(g_dist, fresh[0])


def _queries_and_rows(q, m, d, seed=0):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(1, q, d, device="cuda", generator=g).to(torch.bfloat16),
            torch.randn(1, m, d, device="cuda", generator=g).to(torch.bfloat16))


# Seeded searches at tail shapes: the seeding pass's minima form scores the database's first rows in whole
# ranges (fewer than M, none zero-filled); few queries take the rows layout for it whatever the full pass's.
SEEDED = [("l2", 10, "rows_r2_c2_n64+seed", [{"B": 2, "Q": 130, "M": 70_001, "D": 72}, {"B": 1, "Q": 129, "M": 100_003, "D": 40}]),
          ("ip", 7, "rows_r1_c4_n64+seed", [{"B": 2, "Q": 37, "M": 70_001, "D": 72}, {"B": 1, "Q": 1, "M": 100_003, "D": 40}]),
          ("cosine", 5, "cols+seed", [{"B": 2, "Q": 5, "M": 70_001, "D": 72}, {"B": 1, "Q": 16, "M": 100_003, "D": 40}])]


@pytest.mark.gpu
@pytest.mark.parametrize("metric, k, config, shapes", SEEDED)
def test_seeded_searches_pass_the_oracle_at_tail_shapes(metric, k, config, shapes):
    import torch

    from kernels.knn import api
    from kernels.knn.contract import knn_contract
    from runtime.check import check_kernel

    def launch(outputs, inputs):
        dist, idx = api.knn(inputs[0], inputs[1], k, metric=metric, config=config)
        outputs[0].copy_(dist)
        outputs[1].copy_(idx)

    shapes = [dict(s, k=k, metric=metric) for s in shapes]
    result = check_kernel(knn_contract(shapes, torch.bfloat16), launch)
    assert result.passed, result.message


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_many_partial_lists_fan_in_to_the_same_answer(metric, monkeypatch):
    """A search of hundreds of partial lists per query merges each 32 into one first (merge_fanin): the oracle
    passes, and the answer is the one the merge alone gives."""
    import torch

    from kernels.knn import api, dispatch
    from kernels.knn import plan as planner
    from kernels.knn.contract import knn_contract
    from runtime.check import check_kernel

    shape = {"B": 1, "Q": 130, "M": 400_003, "D": 72, "k": 10, "metric": metric}
    p, rows, _ = dispatch.choose(1, 130, 400_003, 72, 10, 0)
    assert rows and planner.fanin_lists(p.lists_padded) == 32  # seeded, and its merge reads fanned-in lists

    def launch(outputs, inputs):
        dist, idx = api.KnnIndex(inputs[1], metric=metric).search(inputs[0], 10)
        outputs[0].copy_(dist)
        outputs[1].copy_(idx)

    result = check_kernel(knn_contract([shape], torch.bfloat16), launch)
    assert result.passed, result.message
    q, x = _queries_and_rows(130, 400_003, 72, seed=3)
    fanned = api.KnnIndex(x[0], metric=metric).search(q[0], 10)
    monkeypatch.setattr(planner, "FANIN_MIN_ROUNDS", 1 << 20)
    merged = api.KnnIndex(x[0], metric=metric).search(q[0], 10)
    assert torch.equal(fanned[1], merged[1]) and torch.equal(fanned[0], merged[0])


@pytest.mark.gpu
def test_repeated_searches_replay_their_captured_seeding_pass():
    import torch

    from kernels.knn import api, dispatch

    q, x = _queries_and_rows(100, 200_000, 64)
    index = api.KnnIndex(x[0])
    assert dispatch.explain(1, 100, 200_000, 64, 10)["seed_rows"] > 0  # this shape seeds
    first = index.search(q[0], 10)
    for _ in range(3):  # the second call captures the graph, the others replay it
        again = index.search(q[0], 10)
        assert torch.equal(again[1], first[1]) and torch.equal(again[0], first[0])
    q.copy_(torch.randn_like(q))  # new queries at the same address
    replayed = index.search(q[0], 10)
    dist = torch.empty(1, 100, 10, device="cuda")
    idx = torch.empty(1, 100, 10, device="cuda", dtype=torch.int32)
    dispatch.search_into(q.clone(), index._db, 10, False, dist, idx, seed=False)
    assert (replayed[1] == idx[0]).float().mean().item() > 0.999
    torch.testing.assert_close(replayed[0], dist[0], rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 20])
def test_knn_recomputes_norms_when_the_database_changes_in_place(d):
    import torch

    from kernels.knn import api

    q, x = _queries_and_rows(300, 50_000, d, seed=1)
    for _ in range(3):
        api.knn(q, x, 8)
    x.mul_(0.5).add_(torch.randn_like(x))  # same tensor, same address, new rows and norms
    q.copy_(torch.randn_like(q))
    got = api.knn(q, x, 8)
    want = api.KnnIndex(x.clone()).search(q.clone(), 8)
    assert (got[1] == want[1]).float().mean().item() > 0.999
    torch.testing.assert_close(got[0], want[0], rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("metric, k", [("l2", 64), ("cosine", 256), ("ip", 33)])
def test_k_past_the_register_lists_runs_the_exact_torch_path(metric, k):
    _check([{"B": 2, "Q": 70, "M": 3000, "D": 72}, {"B": 1, "Q": 5, "M": 400, "D": 128}], metric, k)


@pytest.mark.gpu
def test_self_knn_with_wide_k():
    _check([{"B": 1, "Q": 900, "M": 900, "D": 40}], "l2", 100, exclude_self=True)


@pytest.mark.gpu
def test_variants_that_fit_pass_the_oracle():
    import torch

    from kernels.knn import api, variants
    from kernels.knn.contract import knn_contract
    from runtime.check import check_kernel
    from runtime import distributions

    shape = {"B": 1, "Q": 150, "M": 80_000, "D": 64, "k": 12, "metric": "l2"}
    fitting = sorted(variants.admitted(1, 150, 80_000, 64, 12), key=lambda v: v.name)
    assert len(fitting) >= 8
    # Each layout and tile once, unseeded and seeded in turn ("+noseed" sorts before "+seed"): every
    # variant compiles its own kernels, so the whole family would take minutes.
    chosen = [fitting[2 * j + j % 2] for j in range(len(fitting) // 2)]
    assert {v.seed for v in chosen} == {False, True}
    contract = knn_contract([shape], torch.bfloat16, (distributions.NORMAL, distributions.CLUSTERED))
    for v in chosen:
        def launch(outputs, inputs, v=v):
            dist, idx = api.knn(inputs[0], inputs[1], 12, config=v.name)
            outputs[0].copy_(dist)
            outputs[1].copy_(idx)

        result = check_kernel(contract, launch)
        assert result.passed, (v.name, result.message)


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_one_list_per_query_merges_as_it_is(metric):
    """A split of one range per query block (as all-pairs problems run) takes the single-list merge."""
    import torch

    from kernels.knn import api, dispatch
    from kernels.knn import plan as planner
    from kernels.knn.contract import knn_contract
    from runtime.check import check_kernel

    shape = {"B": 2, "Q": 300, "M": 5000, "D": 96, "k": 9, "metric": metric}
    p = planner.plan(2, 300, 5000, 96, 9, sms=1)  # one multiprocessor: one range
    assert p.single

    def launch(outputs, inputs):
        index = api.KnnIndex(inputs[1], metric=metric)
        dispatch.search_into(inputs[0], index._db, 9, False, outputs[0], outputs[1], plan=p, seed=False)

    result = check_kernel(knn_contract([shape], torch.bfloat16), launch)
    assert result.passed, result.message


@pytest.mark.gpu
def test_autotune_measures_the_candidates_once_and_keeps_the_fastest(tmp_path, monkeypatch):
    import torch

    from kernels.knn import api, dispatch
    from kernels.knn.contract import knn_contract
    from runtime.check import check_kernel

    monkeypatch.setenv("CAKE_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(dispatch, "_pickers", {})
    shape = {"B": 1, "Q": 100, "M": 30_000, "D": 64, "k": 6, "metric": "l2"}
    tuned = []
    real = dispatch.autotune
    monkeypatch.setattr(dispatch, "autotune", lambda *a, **kw: tuned.append(real(*a, **kw)) or tuned[-1])

    def launch(outputs, inputs):
        dist, idx = api.knn(inputs[0], inputs[1], 6, autotune=True)
        outputs[0].copy_(dist)
        outputs[1].copy_(idx)

    result = check_kernel(knn_contract([shape], torch.bfloat16), launch)
    assert result.passed, result.message
    assert len(tuned) == 1  # the checker's many calls of one shape measure it once
    device = torch.cuda.current_device()
    v, how = dispatch.picker(device).pick(1, 100, 30_000, 64, 6, dispatch.planner.device_sms(device))
    assert how == "autotuned" and v.name == tuned[0]


@pytest.mark.gpu
@pytest.mark.parametrize("m, k", [(5000, 5), (70_000, 13)])  # one pass; seeded (its pass captured in a graph)
def test_repeated_calls_take_the_per_call_path_to_the_same_answer(m, k):
    """A repeat of a checked call (same addresses, shapes, options) skips the checks (api._Fast): it gives the first
    call's answer, unbatched and batched, and knn() still refreshes the norms of a database changed in place."""
    import torch

    from kernels.knn import api

    q, x = (t[0] for t in _queries_and_rows(37, m, 64, seed=3))
    index = api.KnnIndex(x)
    first = index.search(q, k)
    repeats = [index.search(q, k) for _ in range(3)]
    assert len(index._db.fast) == 1
    for got in repeats:
        assert torch.equal(got[0], first[0]) and torch.equal(got[1], first[1]) and got[1].shape == (37, k)
    assert torch.equal(index.search(q, k, return_distances=False), first[1])
    calls = [api.knn(q, x, k) for _ in range(4)]
    for got in calls:
        assert torch.equal(got[1], first[1]) and torch.equal(got[0], first[0])
    x.mul_(0.5).add_(torch.randn_like(x))  # new rows at the same address: their norms are recomputed
    want = api.KnnIndex(x.clone()).search(q.clone(), k)
    got = api.knn(q, x, k)
    assert (got[1] == want[1]).float().mean().item() > 0.999
    torch.testing.assert_close(got[0], want[0], rtol=1e-6, atol=1e-6)
