"""Exact k nearest neighbours for PyTorch users: `knn(q, x, k)` and `KnnIndex(x).search(q, k)`.

Both run the CAKE IR kernels of kernels/knn/schedules.py, compiled for the current GPU
(built once per parameter set, then cached): a score kernel writes sorted partial
lists per query and database range (plan.py picks the layout and the split), and the
merge kernel combines them, rescores the k winners exactly in f32 from the rows and
sorts them (ties to the smaller index). They are registered as torch custom ops
(cake::knn, cake::knn_search) with fake implementations, so they compose with
torch.compile and CUDA graphs. Every argument is checked first; a bad one raises
ValueError naming it.

Scores returned (`dist`, float32), per metric:
- "l2": squared Euclidean distances ||q - x||^2, ascending (clamped at 0);
- "ip": inner products q.x, descending;
- "cosine": cosine similarities q.x / (||q|| ||x||), descending (0 for a zero row).

Inputs are bf16 or f16 (scored on the tensor cores as given), or float32: float32 rows
are ranked through a three-term bf16 split (q.x ~ qh.xh + qh.xl + ql.xh with
t = th + tl, relative error about 2^-16, D <= 336) and rescored exactly in f32 from
the float32 rows. Features are zero-padded to a multiple of 8 when needed.

Calls on one CUDA stream are ordered, so the workspaces they share are safe there; do
not run two calls on different streams at once.
"""

import functools
import math
from typing import Optional

import torch

from compiler.build import cache as compile_cache
from compiler.build import driver
from compiler.verify import has_errors, verify
from kernels.knn import plan as planner
from kernels.knn import reference, schedules
from runtime.compiled import CompiledKernelRunner

DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
METRICS = reference.METRIC_NAMES
INDEX_DTYPES = {torch.int32: "i32", torch.int64: "i64"}
MAX_K = planner.MAX_K
MAX_D = planner.MAX_D
MAX_M = schedules.MAX_M


# -- argument checks ------------------------------------------------------------------------


def _check_tensor(name, t):
    if not isinstance(t, torch.Tensor):
        raise ValueError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.dim() not in (2, 3):
        raise ValueError("%s must be [N, D] or [B, N, D], got shape %s" % (name, tuple(t.shape)))
    if t.dtype not in DTYPES:
        raise ValueError("%s must be bfloat16, float16 or float32, got %s" % (name, t.dtype))


def _check_device(name, t):
    if not t.is_cuda:
        raise ValueError("%s must be on a CUDA device, got %s" % (name, t.device))


def _check_metric(metric):
    if not isinstance(metric, str) or metric not in METRICS:
        raise ValueError("metric must be one of 'l2', 'ip', 'cosine', got %r" % (metric,))
    return METRICS[metric]


def _check_options(k, index_dtype, return_distances):
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError("k must be an int, got %r" % (k,))
    if not 1 <= k <= MAX_K:
        raise ValueError("k must be in [1, %d] (neighbour lists are kept in registers), got %d" % (MAX_K, k))
    if index_dtype not in INDEX_DTYPES:
        raise ValueError("index_dtype must be torch.int32 or torch.int64, got %r" % (index_dtype,))
    if not isinstance(return_distances, bool):
        raise ValueError("return_distances must be a bool, got %r" % (return_distances,))


def _check_database(x):
    _check_tensor("x", x)
    m, d = x.shape[-2], x.shape[-1]
    if m < 1:
        raise ValueError("x must hold at least one database row, got shape %s" % (tuple(x.shape),))
    if m > MAX_M:
        raise ValueError("x has %d rows; at most %d are supported (int32 indices)" % (m, MAX_M))
    limit = planner.MAX_FP32_D if x.dtype == torch.float32 else MAX_D
    if not 1 <= d <= limit:
        raise ValueError("x must have 1 to %d features for %s, got D=%d%s" % (
            limit, x.dtype, d, " (float32 ranks through three bf16 terms)" if x.dtype == torch.float32 else ""))


def _check_queries(q, x_shape, x_dtype, x_device, k, exclude_self):
    """Checks of q against the database (shape, dtype, exclude_self, k), then of both devices."""
    _check_tensor("q", q)
    if q.dim() != len(x_shape):
        raise ValueError("q and x must both be batched or both unbatched: q is %dD, x is %dD" % (q.dim(), len(x_shape)))
    if q.dtype != x_dtype:
        raise ValueError("q and x must have the same dtype: %s vs %s" % (q.dtype, x_dtype))
    if q.dim() == 3 and q.shape[0] != x_shape[0]:
        raise ValueError("q and x must have the same batch size: %d vs %d" % (q.shape[0], x_shape[0]))
    if q.shape[-1] != x_shape[-1]:
        raise ValueError("q and x must have the same feature dim D: %d vs %d" % (q.shape[-1], x_shape[-1]))
    if not isinstance(exclude_self, bool):
        raise ValueError("exclude_self must be a bool, got %r" % (exclude_self,))
    m = x_shape[-2]
    if exclude_self and q.shape[-2] != m:
        raise ValueError("exclude_self needs query i to be database row i: q has %d rows, x has %d" % (q.shape[-2], m))
    if k > m - int(exclude_self):
        raise ValueError("k=%d is more than the %d database rows%s" % (k, m - int(exclude_self),
                                                                       " other than the query itself" if exclude_self else ""))
    if x_device.type != "cuda":
        raise ValueError("x must be on a CUDA device, got %s" % x_device)
    _check_device("q", q)
    if q.device != x_device:
        raise ValueError("q and x must be on the same device: %s vs %s" % (q.device, x_device))


# -- preparing rows -----------------------------------------------------------------------


def _padded(t, width):
    """t with its feature dim zero-padded to `width` (t itself when it already is that wide)."""
    t = t.contiguous()
    if t.shape[-1] == width:
        return t
    out = t.new_zeros((*t.shape[:-1], width))
    out[..., : t.shape[-1]] = t
    return out


def _ranking_rows(t, split_role):
    """The bf16/f16 rows the score kernel multiplies: t padded to 8 features, or for float32 the
    three-term split [th, th, tl] (queries) / [th, tl, th] (database) of t = th + tl."""
    if t.dtype != torch.float32:
        return _padded(t, -(-t.shape[-1] // 8) * 8)
    hi = t.to(torch.bfloat16)
    lo = (t - hi.float()).to(torch.bfloat16)
    parts = (hi, hi, lo) if split_role == "q" else (hi, lo, hi)
    return _padded(torch.cat(parts, dim=-1), -(-3 * t.shape[-1] // 8) * 8)


def _column_vector(x, metric):
    """Per database row: ||x||^2 (l2) or 1 / ||x|| (cosine), fp32, rows padded to a multiple of 4 (None for ip)."""
    if metric == "ip":
        return None
    b, m = x.shape[0], x.shape[1]
    out = torch.zeros((b, -(-m // 4) * 4), dtype=torch.float32, device=x.device)
    norm = torch.linalg.vector_norm(x, dim=-1, dtype=torch.float32)  # f32 accumulation, no f32 copy of x
    if metric == "l2":
        out[:, :m] = norm.square()
    else:
        out[:, :m] = torch.where(norm > 0, 1.0 / norm.clamp_min(1e-30), torch.zeros_like(norm))
    return out


class _Database:
    """A database's rows as the kernels read them: ranking rows, rescoring rows, the column vector, and
    (made on first use) the sample a seeding pass scores and the largest ranking-row norm."""

    def __init__(self, x3, metric):
        rank = _ranking_rows(x3, "x")
        rows = rank if x3.dtype != torch.float32 else _padded(x3, -(-x3.shape[-1] // 8) * 8)
        self._set(metric, x3.dtype, tuple(x3.shape), rank, rows, _column_vector(x3, metric), None)

    @classmethod
    def of(cls, metric, dtype, shape, rank, rows, col, max_norm):
        """A database from tensors prepared earlier (what KnnIndex keeps and passes to its op)."""
        db = cls.__new__(cls)
        db._set(metric, dtype, shape, rank, rows, col, max_norm)
        return db

    def _set(self, metric, dtype, shape, rank, rows, col, max_norm):
        self.metric, self.dtype, self.shape = metric, dtype, shape
        self.rank, self.rows, self.col = rank, rows, col
        self._sample = {}
        self._max_norm = max_norm

    def sample(self, rows):
        """The first `rows` database rows (rank, col) as the score kernel reads them (no copy for one problem)."""
        got = self._sample.get(rows)
        if got is None:
            rank = self.rank[:, :rows].contiguous()
            col = None if self.col is None else self.col[:, : -(-rows // 4) * 4].contiguous()
            got = self._sample[rows] = (rank, col)
        return got

    def max_norm(self):
        """The largest norm of a ranking row (bounds the rounding of any ranking score)."""
        if self._max_norm is None:
            if self.metric == "l2" and self.dtype != torch.float32:
                self._max_norm = self.col.max().clamp_min(0).sqrt().reshape(1)
            else:
                self._max_norm = torch.linalg.vector_norm(self.rank, dim=-1, dtype=torch.float32).max().reshape(1)
        return self._max_norm


# -- kernels --------------------------------------------------------------------------------


def compiled(builder, params):
    """The CompiledKernel of a schedule and parameters, built once (nvcc, then the compile cache).

    A kernel is verified before nvcc builds it (a schedule the planner got wrong must not reach the
    GPU, where a broken protocol hangs); a compile-cache hit was verified when it was built.
    """
    kernel = getattr(schedules, builder)(**dict(params))
    cache = compile_cache.default_cache()
    result = driver.cached(driver.plan(kernel), cache)
    if result is None:
        diags = verify(kernel)
        if has_errors(diags):
            raise RuntimeError("knn kernel %s does not verify: %s" % (kernel.name, "; ".join(d.message for d in diags)))
        result = driver.build(kernel, cache)
    if not result.ok:
        raise RuntimeError("knn kernel %s failed to build: %s" % (kernel.name, "; ".join(d.message for d in result.diagnostics)))
    return result.compiled


@functools.lru_cache(maxsize=None)
def _runner(builder, params):
    return CompiledKernelRunner(compiled(builder, params))


_WORKSPACES = {}


def _workspace(b, lists, p, q, k, worst, device):
    """Partial lists [B, P, Q, k] (scores, indices), reused per shape and plan: lists past the plan's
    `lists` are never written, so they keep the worst score and index -1 for the merge (the key holds
    `lists`, so no plan finds another plan's lists there)."""
    key = (b, lists, p, q, k, worst, device)
    ws = _WORKSPACES.get(key)
    if ws is None:
        if len(_WORKSPACES) > 64:
            _WORKSPACES.clear()
        ws = (torch.full((b, p, q, k), worst, dtype=torch.float32, device=device),
              torch.full((b, p, q, k), -1, dtype=torch.int32, device=device))
        _WORKSPACES[key] = ws
    return ws


def _score_builder(p, metric, exclude_self, dtype, seeded=False):
    name = "rows_sm90a" if p.layout == "rows" else "cols_sm90a"
    params = dict(p.kwargs, metric=metric, exclude_self=exclude_self, dtype=dtype)
    if seeded:
        params["seeded"] = True
    return name, tuple(sorted(params.items()))


def _merge_builder(k, metric, dtype, index_dtype, rescore=True):
    params = dict(k=k, metric=metric, dtype=DTYPES[dtype], index_dtype=INDEX_DTYPES[index_dtype])
    if not rescore:
        params["rescore"] = False
    return "merge", tuple(sorted(params.items()))


def _plans(b, q, m, d, k, layout, sms):
    """(pass-2 plan, sample rows or 0): seed when the database splits into many partial lists per query."""
    seeded = planner.plan(b, q, m, d, k, layout=layout, sms=sms, seeded=True)
    rows = planner.seed_rows(m, k)
    if rows and seeded.lists >= planner.SEED_MIN_LISTS:
        return seeded, rows
    return planner.plan(b, q, m, d, k, layout=layout, sms=sms), 0


def kernels_for(b, q, m, d, k, metric="l2", exclude_self=False, dtype=torch.bfloat16, index_dtype=torch.int32,
                layout=None, sms=planner.SMS):
    """The (builder, parameters) pairs of the kernels a call of these sizes runs (to build them ahead)."""
    metric = _check_metric(metric)
    rank_d = -(-(3 * d if dtype == torch.float32 else d) // 8) * 8
    rank_dtype = DTYPES[torch.bfloat16 if dtype == torch.float32 else dtype]
    p, rows = _plans(b, q, m, rank_d, k, layout, sms)
    out = [_score_builder(p, metric, exclude_self, rank_dtype, seeded=bool(rows)), _merge_builder(k, metric, dtype, index_dtype)]
    if rows:
        out += [_score_builder(planner.plan(b, q, rows, rank_d, k, layout=layout, sms=sms), metric, exclude_self, rank_dtype),
                _merge_builder(k, metric, torch.bfloat16 if dtype == torch.float32 else dtype, torch.int32, rescore=False)]
    return out


def _score(p, q_rank, rank, col, k, metric, exclude_self, seed=None):
    """Run a score kernel: partial lists of the plan's ranges into its workspace."""
    b, nq = q_rank.shape[0], q_rank.shape[1]
    worst = -math.inf if schedules.largest(metric) else math.inf
    part_v, part_i = _workspace(b, p.lists, p.lists_padded, nq, k, worst, q_rank.device)
    kernel = _runner(*_score_builder(p, metric, exclude_self, DTYPES[q_rank.dtype], seeded=seed is not None))
    tensors = dict(q=q_rank, x=rank, part_v=part_v, part_i=part_i)
    if col is not None:
        tensors["col"] = col
    if seed is not None:
        tensors["seed"] = seed
    kernel(symbols={"S": p.splits, "T": p.tiles}, **tensors)
    return part_v, part_i


def _seed(q_rank, db, rows, k, exclude_self, sms):
    """Per query, a bound on its k-th ranking score: the k-th best over the database's first `rows` rows
    (the true k-th over all rows is no worse), loosened by what rounding in another summation order
    could change a score by; lists that start there skip every candidate that cannot make the top k."""
    b, nq, d = q_rank.shape
    metric = db.metric
    rank, col = db.sample(rows)
    p = planner.plan(b, nq, rows, d, k, sms=sms)
    part_v, part_i = _score(p, q_rank, rank, col, k, metric, exclude_self)
    vals = torch.empty((b, nq, k), dtype=torch.float32, device=q_rank.device)
    idx = torch.empty((b, nq, k), dtype=torch.int32, device=q_rank.device)
    _runner(*_merge_builder(k, metric, q_rank.dtype, torch.int32, rescore=False))(
        q=q_rank, x=rank, part_v=part_v, part_i=part_i, dist=vals, idx=idx)
    # Two f32 evaluations of one dot product differ by at most 2 gamma_D sum |q_i x_i| <= 2 gamma_D |q| |x|.
    u = 2.0 ** -24
    gamma = d * u / (1 - d * u)
    qn = torch.linalg.vector_norm(q_rank, dim=-1, dtype=torch.float32)
    xn = db.max_norm()
    if metric == "l2":
        slack = (4 * gamma + 4 * u) * qn * xn + 2 * u * xn * xn
    elif metric == "ip":
        slack = (2 * gamma + 2 * u) * qn * xn
    else:
        slack = (2 * gamma + 2 * u) * qn
    kth = vals[..., k - 1]
    return (kth - slack if schedules.largest(metric) else kth + slack).contiguous()


def search_into(q3, db, k, exclude_self, dist, idx, layout=None, plan=None):
    """Write the k best of database `db` for [B, Q, D] queries q3 into dist [B, Q, k] f32 and idx [B, Q, k].

    `layout` forces "rows" or "cols"; `plan` (a plan.Plan) replaces the planner's choice of the full
    pass (a pass with many partial lists per query is still seeded).
    """
    b, nq = q3.shape[0], q3.shape[1]
    if nq == 0:
        return dist, idx
    metric = db.metric
    qr = _ranking_rows(q3, "q")
    qs = qr if q3.dtype != torch.float32 else _padded(q3, db.rows.shape[-1])
    m = db.shape[1]
    sms = planner.device_sms(q3.device.index)
    p, rows = _plans(b, nq, m, qr.shape[-1], k, layout, sms)
    if plan is not None:
        p, rows = plan, rows if plan.lists >= planner.SEED_MIN_LISTS else 0
    seed = _seed(qr, db, rows, k, exclude_self, sms) if rows else None
    part_v, part_i = _score(p, qr, db.rank, db.col, k, metric, exclude_self, seed)
    merge = _runner(*_merge_builder(k, metric, db.rows.dtype, idx.dtype))
    merge(q=qs, x=db.rows, part_v=part_v, part_i=part_i, dist=dist, idx=idx)
    return dist, idx


def _search(q3, db, k, exclude_self, index_int64):
    b, nq = q3.shape[0], q3.shape[1]
    dist = torch.empty((b, nq, k), dtype=torch.float32, device=q3.device)
    idx = torch.empty((b, nq, k), dtype=torch.int64 if index_int64 else torch.int32, device=q3.device)
    return search_into(q3, db, k, exclude_self, dist, idx)


# -- custom ops -------------------------------------------------------------------------------


@torch.library.custom_op("cake::knn", mutates_args=())
def _knn_op(q: torch.Tensor, x: torch.Tensor, k: int, metric: str, exclude_self: bool,
            index_int64: bool) -> tuple[torch.Tensor, torch.Tensor]:
    return _search(q, _Database(x, metric), k, exclude_self, index_int64)


@_knn_op.register_fake
def _(q, x, k, metric, exclude_self, index_int64):
    shape = (q.shape[0], q.shape[1], k)
    return q.new_empty(shape, dtype=torch.float32), q.new_empty(shape, dtype=torch.int64 if index_int64 else torch.int32)


@torch.library.custom_op("cake::knn_search", mutates_args=())
def _search_op(q: torch.Tensor, rank: torch.Tensor, rows: torch.Tensor, col: Optional[torch.Tensor],
               max_norm: torch.Tensor, k: int, metric: str, exclude_self: bool,
               index_int64: bool) -> tuple[torch.Tensor, torch.Tensor]:
    db = _Database.of(metric, q.dtype, (rank.shape[0], rank.shape[1], q.shape[-1]), rank, rows, col, max_norm)
    return _search(q, db, k, exclude_self, index_int64)


@_search_op.register_fake
def _(q, rank, rows, col, max_norm, k, metric, exclude_self, index_int64):
    shape = (q.shape[0], q.shape[1], k)
    return q.new_empty(shape, dtype=torch.float32), q.new_empty(shape, dtype=torch.int64 if index_int64 else torch.int32)


def _result(dist, idx, squeeze, return_distances):
    if squeeze:
        dist, idx = dist[0], idx[0]
    return (dist, idx) if return_distances else idx


def knn(q, x, k, *, metric="l2", return_distances=True, exclude_self=False, index_dtype=torch.int32):
    """The k nearest database rows of every query: (dist float32 [..., Q, k], idx [..., Q, k]).

    q: [Q, D] or [B, Q, D] queries; x: [M, D] or [B, M, D] database rows (the same dtype,
    bf16, f16 or float32, on one CUDA device; 1 <= D <= 1024, float32 D <= 336);
    1 <= k <= 32 and k <= M. metric: "l2" (squared distances, ascending), "ip" (inner
    products, descending) or "cosine" (similarities, descending). exclude_self: query i
    is database row i (Q == M) and is not its own neighbour. Ties go to the smaller
    index. return_distances=False returns idx only.
    """
    metric = _check_metric(metric)
    _check_options(k, index_dtype, return_distances)
    _check_tensor("q", q)
    _check_database(x)
    _check_queries(q, tuple(x.shape), x.dtype, x.device, k, exclude_self)
    squeeze = q.dim() == 2
    q3, x3 = (q[None], x[None]) if squeeze else (q, x)
    dist, idx = _knn_op(q3.contiguous(), x3.contiguous(), k, metric, exclude_self, index_dtype == torch.int64)
    return _result(dist, idx, squeeze, return_distances)


class KnnIndex:
    """A database prepared once for many searches: its kernel rows, norms and tensor maps are kept.

    x: [M, D] or [B, M, D] (bf16, f16 or float32, on a CUDA device); metric as for `knn`.
    The index reads x in place when its rows need no padding (no copy of a large database):
    do not modify x while searching it, or its cached norms no longer match.
    """

    def __init__(self, x, metric="l2"):
        self.metric = _check_metric(metric)
        _check_database(x)
        _check_device("x", x)
        self._x_shape, self._dtype, self._device = tuple(x.shape), x.dtype, x.device
        self._db = _Database((x if x.dim() == 3 else x[None]).contiguous(), self.metric)
        self._db.max_norm()  # computed once here, so searches that seed do not re-read the database

    @property
    def shape(self):
        return self._x_shape

    def search(self, q, k, *, return_distances=True, exclude_self=False, index_dtype=torch.int32):
        """The k best database rows for each query of q ([Q, D], or [B, Q, D] for a batched index)."""
        _check_options(k, index_dtype, return_distances)
        _check_queries(q, self._x_shape, self._dtype, self._device, k, exclude_self)
        squeeze = q.dim() == 2
        q3 = q[None] if squeeze else q
        db = self._db
        dist, idx = _search_op(q3.contiguous(), db.rank, db.rows, db.col, db.max_norm(), k, self.metric, exclude_self,
                               index_dtype == torch.int64)
        return _result(dist, idx, squeeze, return_distances)
