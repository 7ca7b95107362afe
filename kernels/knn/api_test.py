"""KNN API argument checks (no GPU needed): every bad input raises ValueError naming the argument."""

import gc
import weakref

import pytest
import torch

from kernels.knn import api, dispatch
from kernels.knn import rows as knn_rows


def _t(*shape, dtype=torch.bfloat16):
    return torch.zeros(shape, dtype=dtype)


@pytest.mark.parametrize("kwargs, match", [
    (dict(q="not a tensor"), r"^q must be a torch.Tensor"),
    (dict(x=[1, 2]), r"^x must be a torch.Tensor"),
    (dict(q=_t(4)), r"^q must be \[N, D\] or \[B, N, D\]"),
    (dict(x=_t(1, 2, 3, 4)), r"^x must be \[N, D\] or \[B, N, D\]"),
    (dict(q=_t(4, 8, dtype=torch.int32)), r"^q must be bfloat16, float16 or float32"),
    (dict(q=_t(4, 8, dtype=torch.float16)), r"^q and x must have the same dtype"),
    (dict(q=_t(2, 4, 8)), r"^q and x must both be batched or both unbatched"),
    (dict(q=_t(4, 16)), r"^q and x must have the same feature dim D"),
    (dict(x=_t(0, 8)), r"^x must hold at least one database row"),
    (dict(q=_t(4, 2000), x=_t(10, 2000)), r"^x must have 1 to 1024 features"),
    (dict(q=_t(4, 400, dtype=torch.float32), x=_t(10, 400, dtype=torch.float32)), r"^x must have 1 to 336 features"),
    (dict(k=0), r"^k must be in \[1, 256\]"),
    (dict(k=257), r"^k must be in \[1, 256\] \(k <= 32 runs on the kernels' register lists, up to 256 on the exact torch path\), got 257"),
    (dict(k=2.0), r"^k must be an int"),
    (dict(k=True), r"^k must be an int"),
    (dict(k=11), r"^k=11 is more than the 10 database rows"),
    (dict(metric="hamming"), r"^metric must be one of"),
    (dict(index_dtype=torch.int16), r"^index_dtype must be torch.int32 or torch.int64"),
    (dict(return_distances="yes"), r"^return_distances must be a bool"),
    (dict(exclude_self=1), r"^exclude_self must be a bool"),
    (dict(exclude_self=True), r"^exclude_self needs query i to be database row i"),
    (dict(q=_t(10, 8), exclude_self=True, k=10), r"^k=10 is more than the 9 database rows other than the query itself"),
    (dict(), r"^x must be on a CUDA device"),
])
def test_knn_names_the_bad_argument(kwargs, match):
    args = dict(q=_t(4, 8), x=_t(10, 8), k=3)
    args.update(kwargs)
    q, x, k = args.pop("q"), args.pop("x"), args.pop("k")
    with pytest.raises(ValueError, match=match):
        api.knn(q, x, k, **args)


def test_batch_sizes_must_agree():
    with pytest.raises(ValueError, match=r"^q and x must have the same batch size: 2 vs 3"):
        api.knn(_t(2, 4, 8), _t(3, 10, 8), 3)


def test_index_names_the_bad_argument():
    with pytest.raises(ValueError, match=r"^metric must be one of"):
        api.KnnIndex(_t(10, 8), metric="manhattan")
    with pytest.raises(ValueError, match=r"^x must be on a CUDA device"):
        api.KnnIndex(_t(10, 8))


def test_rows_are_padded_and_float32_splits_into_three_bf16_terms():
    x = torch.randn(5, 10)
    rows = knn_rows.ranking_rows(x, "x")
    assert rows.dtype == torch.bfloat16 and rows.shape == (5, 32)
    hi, lo = rows[:, :10].float(), rows[:, 10:20].float()
    torch.testing.assert_close(hi + lo, x, rtol=2 ** -15, atol=1e-6)
    assert (rows[:, 20:30] == rows[:, :10]).all() and (rows[:, 30:] == 0).all()
    q = knn_rows.ranking_rows(x, "q")
    assert (q[:, 10:20] == q[:, :10]).all()
    assert knn_rows.ranking_rows(torch.randn(3, 8, dtype=torch.float16), "q").shape == (3, 8)


def test_column_vectors_hold_squared_norms_or_inverse_norms_padded_to_four_rows():
    x = torch.tensor([[[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]]])
    assert knn_rows.column_vector(x, "l2").tolist() == [[25.0, 0.0, 1.0, 0.0]]
    assert knn_rows.column_vector(x, "cos").tolist() == [[pytest.approx(0.2), 0.0, 1.0, 0.0]]
    assert knn_rows.column_vector(x, "ip") is None


class _ContractOnly:
    """Stands in for a loaded kernel (dispatch.launcher's FastLaunch): prepare binds the call's shapes and
    symbols and checks the kernel's contract (symbol ranges, constraints, dtypes, contiguity), as
    CompiledKernelRunner does; launch does nothing."""

    calls = []
    pointed_at = []  # (kernel, tensor name, weakref): every tensor a prepared launch holds the address of

    def __init__(self, builder, params, late=()):
        from compiler.lower import lower
        from runtime.compiled import CompiledKernelRunner

        self.name = builder
        self.runner = CompiledKernelRunner.__new__(CompiledKernelRunner)
        self.runner.md = lower(getattr(api.schedules, builder)(**dict(params))).launch

    def prepare(self, tensors, scalars=None, symbols=None):
        from compiler.ir.expr import evaluate
        from runtime.compiled import TORCH_DTYPES

        env = self.runner.bind_shapes(tensors, symbols)
        md = self.runner.md
        for s in md.symbols:
            assert s.min <= env[s.name] <= s.max, (self.name, s.name, env[s.name])
        for c in md.constraints:
            assert evaluate(c.expr, env), (self.name, c.doc, env)
        for p in md.params:
            assert tensors[p.name].dtype == TORCH_DTYPES[p.dtype] and tensors[p.name].is_contiguous(), (self.name, p.name)
        _ContractOnly.calls.append((self.name, env))
        _ContractOnly.pointed_at.extend((self.name, n, weakref.ref(t)) for n, t in tensors.items())

    def launch(self, prepared, device_index, **late):
        pass

    def launch_on(self, prepared, stream, *late_pointers):
        pass


@pytest.mark.parametrize("b, q, m, d, k, metric, exclude_self, dtype", [
    (1, 333, 4097, 128, 10, "l2", False, torch.bfloat16),
    (2, 5, 3000, 72, 7, "cosine", False, torch.float16),
    (1, 1, 70, 256, 32, "ip", False, torch.bfloat16),
    (3, 130, 1000, 40, 1, "l2", False, torch.bfloat16),
    (1, 30, 30, 20, 4, "l2", True, torch.bfloat16),
    (1, 200, 3000, 100, 10, "l2", False, torch.float32),
    (1, 700, 2049, 520, 5, "ip", False, torch.bfloat16),
    (2, 3, 70_000, 64, 6, "l2", False, torch.bfloat16),  # seeded: a first pass over a sample bounds each k-th
    (1, 40, 70_000, 24, 3, "cosine", False, torch.float32),
])
def test_every_launch_satisfies_its_kernels_contract(monkeypatch, b, q, m, d, k, metric, exclude_self, dtype):
    monkeypatch.setattr(dispatch, "launcher", _ContractOnly)
    _ContractOnly.calls, _ContractOnly.pointed_at = [], []
    x = torch.randn(b, m, d).to(dtype)
    qs = x if exclude_self else torch.randn(b, q, d).to(dtype)
    db = knn_rows.Database(x, api.METRICS[metric])
    dist = torch.empty(b, qs.shape[1], k)
    idx = torch.empty(b, qs.shape[1], k, dtype=torch.int32)
    dispatch.search_into(qs, db, k, exclude_self, dist, idx)
    gc.collect()  # a prepared launch keeps addresses only: whatever it points at must still be alive
    freed = [(kernel, name) for kernel, name, ref in _ContractOnly.pointed_at if ref() is None]
    assert not freed, freed
    names = [name for name, _ in _ContractOnly.calls]
    # A fan-in (many partial lists per query, plan.fanin_lists) sits between a score kernel and its merge.
    for i, name in enumerate(names):
        if name == "merge_fanin":
            assert names[i - 1] in ("rows_sm90a", "cols_sm90a") and names[i + 1] == "merge", names
    calls = [c for c in _ContractOnly.calls if c[0] != "merge_fanin"]
    names = [name for name, _ in calls]
    seeded = api.planner.seed_rows(m, k) and len(names) == 4
    assert names[-1] == "merge" and len(names) == (4 if seeded else 2), names
    if seeded:  # the seeding pass (its minima form reads the database in place) scores the first rows, then the full pass
        assert calls[0][1]["M"] == m and calls[2][1]["M"] == m
        call = next(iter(db.calls.values()))
        assert api.planner.seed_rows(m, k) <= call.seed_rows <= m // 4, call.seed_rows


def test_config_names_a_known_variant():
    with pytest.raises(ValueError, match=r"^config must be a knn Variant or one of the variant names"):
        api.knn(_t(4, 8), _t(10, 8), 3, config="rows_r9_c9_n64+seed")
    with pytest.raises(ValueError, match=r"^config must be a variant name"):
        api.knn(_t(4, 8), _t(10, 8), 3, config=7)


def test_a_kernel_that_cannot_be_built_falls_back_to_the_torch_path(monkeypatch):
    def broken(builder, params, late=()):
        raise RuntimeError("knn kernel %s failed to build: no nvcc" % builder)

    monkeypatch.setattr(dispatch, "launcher", broken)
    x = torch.randn(1, 300, 16).to(torch.bfloat16)
    q = torch.randn(1, 7, 16).to(torch.bfloat16)
    db = knn_rows.Database(x, "l2")
    dist = torch.full((1, 7, 5), float("nan"))
    idx = torch.full((1, 7, 5), -1, dtype=torch.int32)
    with pytest.warns(RuntimeWarning, match="searching on the exact torch path"):
        dispatch.search_into(q, db, 5, False, dist, idx)
    want = torch.cdist(q.float(), x.float()).square().topk(5, largest=False)
    torch.testing.assert_close(dist, want.values, rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match="failed to build"):  # a forced variant is not replaced
        dispatch.search_into(q, db, 5, False, dist, idx, config="rows_r1_c1_n64+noseed")


@pytest.mark.parametrize("metric", ["l2", "ip", "cosine"])
def test_the_seed_loosens_the_samples_kth_score_by_the_rounding_bound(monkeypatch, metric):
    monkeypatch.setattr(dispatch, "launcher", _ContractOnly)
    x = torch.randn(1, 70_000, 64).to(torch.bfloat16)
    q = torch.randn(1, 3, 64).to(torch.bfloat16)
    db = knn_rows.Database(x, api.METRICS[metric])
    dist, idx = torch.empty(1, 3, 6), torch.empty(1, 3, 6, dtype=torch.int32)
    dispatch.search_into(q, db, 6, False, dist, idx, seed=True)
    call = next(iter(db.calls.values()))
    call.seed_vals.copy_(torch.randn(1, 3, 6))
    call._bound(q)
    u = 2.0 ** -24
    gamma = 64 * u / (1 - 64 * u)
    qn = torch.linalg.vector_norm(q.float(), dim=-1)
    xn = torch.linalg.vector_norm(x.float(), dim=-1).max()
    # Two f32 evaluations of a dot product differ by at most 2 gamma |q| |x| (and l2's x_sq - 2 q.x by twice that,
    # plus the rounding of x_sq); the seed moves the k-th score that far towards the worse side.
    slack = {"l2": (4 * gamma + 4 * u) * qn * xn + 2 * u * xn * xn, "ip": (2 * gamma + 2 * u) * qn * xn,
             "cosine": (2 * gamma + 2 * u) * qn}[metric]
    worse = 1.0 if metric == "l2" else -1.0
    torch.testing.assert_close(call.seed, call.seed_vals[..., 5] + worse * slack, rtol=1e-6, atol=0)
