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
import weakref
from typing import Optional

import torch

from kernels.knn import dispatch
from kernels.knn import plan as planner
from kernels.knn import reference, schedules
from kernels.knn import rows as knn_rows
from kernels.knn import variants

DTYPES = dispatch.DTYPES
METRICS = reference.METRIC_NAMES
INDEX_DTYPES = dispatch.INDEX_DTYPES
MAX_K = planner.MAX_K
MAX_TORCH_K = 256  # k past MAX_K: torch scores and topk (kernels/knn/torch_path.py), exact but not tuned
MAX_D = planner.MAX_D
MAX_M = schedules.MAX_M


_compiling = torch.compiler.is_compiling


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
    if not 1 <= k <= MAX_TORCH_K:
        raise ValueError("k must be in [1, %d] (k <= %d runs on the kernels' register lists, up to %d on the exact torch "
                         "path), got %d" % (MAX_TORCH_K, MAX_K, MAX_TORCH_K, k))
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


# -- searching -----------------------------------------------------------------------------


def _outputs(q3, k, index_int64):
    b, nq = q3.shape[0], q3.shape[1]
    return (torch.empty((b, nq, k), dtype=torch.float32, device=q3.device),
            torch.empty((b, nq, k), dtype=torch.int64 if index_int64 else torch.int32, device=q3.device))


def _search(q3, db, k, exclude_self, index_int64, config=None, pre=None):
    dist, idx = _outputs(q3, k, index_int64)
    return dispatch.search_into(q3, db, k, exclude_self, dist, idx, pre=pre, config=config)


_DATABASES = {}  # knn()'s databases seen, by (address, shape, dtype, metric): derived buffers only
MAX_DATABASES = 8


# -- the per-call path ------------------------------------------------------------------------
# A call whose arguments (addresses, shapes, dtypes, options) are those of a call already checked and prepared
# needs no check again: the checks read nothing else. Its key finds the prepared search, and the call costs two
# output allocations and its driver launches (about 10 us of host time, where the checked path costs 50).
MAX_FAST = 64
_capturing = dispatch._capturing


class _Fast:
    """The per-call path of one checked search: its prepared Call (dispatch.Call) and what a repeat allocates."""

    __slots__ = ("db", "call", "shape", "index_dtype", "device", "return_distances")

    def __init__(self, db, call, shape, index_dtype, device, return_distances):
        self.db, self.call = db, call  # the Database holds the buffers the Call's launches point at
        self.shape, self.index_dtype, self.device, self.return_distances = shape, index_dtype, device, return_distances

    def __call__(self):
        dist = torch.empty(self.shape, dtype=torch.float32, device=self.device)
        idx = torch.empty(self.shape, dtype=self.index_dtype, device=self.device)
        self.call.launch_into(dist.data_ptr(), idx.data_ptr())
        return (dist, idx) if self.return_distances else idx


def _fast_entry(q, q3, db, k, exclude_self, index_dtype, return_distances, config):
    """A _Fast for the search just run on q (its [B, Q, D] view q3), or None when repeats must take the checked
    path (k on the torch path, queries the kernels read through a copy, a non-contiguous q)."""
    if type(q) is not torch.Tensor or not q.is_contiguous():
        return None
    call = dispatch.prepared_call(q3, db, k, exclude_self, index_dtype, config)
    if call is None or call.staged is not None:
        return None
    return _Fast(db, call, (*q.shape[:-1], k), index_dtype, q.device, return_distances)


def _fast_ready(entry, q):
    """Whether `entry` (found by q's key) may run this call: q is a plain contiguous tensor on the entry's device
    and the search needs no queries tensor now (Call.needs_queries; never under a capture of a seeded search)."""
    return type(q) is torch.Tensor and q.is_contiguous() and q.device == entry.device and not (
        entry.call.needs_queries() or (entry.call.seed is not None and _capturing()))


def _lookup(table, key):
    """table[key], or None (also for a key that cannot be hashed: such arguments get the checked path's error)."""
    try:
        return table.get(key)
    except TypeError:
        return None


_FAST_KNN = {}  # knn()'s per-call paths: key -> (_Fast, weakref to the database tensor x, x._version then)


def _knn_impl(q3, x3, k, metric, exclude_self, index_int64, config=None):
    """knn() on checked, contiguous [B, Q, D] q3 and [B, M, D] x3: the database's norms are computed in the call.

    A database is remembered by address and shape, with its norm buffers (and its padded or split
    rows' when the kernels cannot read x3 in place) and prepared searches, all refreshed from x3 on
    every call (never stale); none of the caller's tensors is kept between calls.
    """
    key = (x3.data_ptr(), tuple(x3.shape), x3.dtype, metric, x3.device)
    db = _DATABASES.get(key)
    pre = None
    if db is None:
        db = knn_rows.Database(x3, metric)
        if len(_DATABASES) >= MAX_DATABASES:
            _DATABASES.clear()
            _FAST_KNN.clear()
        _DATABASES[key] = db
    else:
        db.bind(x3)
        pre = functools.partial(db.refresh, x3)  # the norms, recomputed in the call (in its CUDA graph once captured)
    try:
        return _search(q3, db, k, exclude_self, index_int64, config, pre)
    finally:
        db.release()


def _check_config(config, autotune=False):
    if config is not None and not isinstance(config, (str, variants.Variant)):
        raise ValueError("config must be a variant name (str) or a kernels.knn.variants.Variant, got %r" % (config,))
    if config is not None:
        variants.named(config)  # ValueError naming the known variants
    if not isinstance(autotune, bool):
        raise ValueError("autotune must be a bool, got %r" % (autotune,))
    if autotune and config is not None:
        raise ValueError("config forces a variant and autotune=True measures them: give one or the other")
    return config.name if isinstance(config, variants.Variant) else config


def _autotune(q3, m, k, exclude_self, index_dtype, database):
    """Measure the variants of this exact search once per shape and device (eager calls, k on the kernels);
    `database()` makes the Database to time them on."""
    if k <= MAX_K and not _compiling() and not dispatch.autotuned(q3, m, k):
        dispatch.autotune(q3, database(), k, exclude_self, index_dtype)


# -- custom ops -------------------------------------------------------------------------------


@torch.library.custom_op("cake::knn", mutates_args=())
def _knn_op(q: torch.Tensor, x: torch.Tensor, k: int, metric: str, exclude_self: bool, index_int64: bool,
            config: Optional[str] = None) -> tuple[torch.Tensor, torch.Tensor]:
    return _knn_impl(q, x, k, metric, exclude_self, index_int64, config)


@_knn_op.register_fake
def _(q, x, k, metric, exclude_self, index_int64, config=None):
    shape = (q.shape[0], q.shape[1], k)
    return q.new_empty(shape, dtype=torch.float32), q.new_empty(shape, dtype=torch.int64 if index_int64 else torch.int32)


@torch.library.custom_op("cake::knn_search", mutates_args=())
def _search_op(q: torch.Tensor, rank: torch.Tensor, rows: torch.Tensor, col: Optional[torch.Tensor],
               max_norm: torch.Tensor, k: int, metric: str, exclude_self: bool,
               index_int64: bool, config: Optional[str] = None) -> tuple[torch.Tensor, torch.Tensor]:
    db = knn_rows.Database.of(metric, q.dtype, (rank.shape[0], rank.shape[1], q.shape[-1]), rank, rows, col, max_norm)
    return _search(q, db, k, exclude_self, index_int64, config)


@_search_op.register_fake
def _(q, rank, rows, col, max_norm, k, metric, exclude_self, index_int64, config=None):
    shape = (q.shape[0], q.shape[1], k)
    return q.new_empty(shape, dtype=torch.float32), q.new_empty(shape, dtype=torch.int64 if index_int64 else torch.int32)


def _result(dist, idx, squeeze, return_distances):
    if squeeze:
        dist, idx = dist[0], idx[0]
    return (dist, idx) if return_distances else idx


def knn(q, x, k, *, metric="l2", return_distances=True, exclude_self=False, index_dtype=torch.int32, config=None,
        autotune=False):
    """The k nearest database rows of every query: (dist float32 [..., Q, k], idx [..., Q, k]).

    q: [Q, D] or [B, Q, D] queries; x: [M, D] or [B, M, D] database rows (the same dtype,
    bf16, f16 or float32, on one CUDA device; 1 <= D <= 1024, float32 D <= 336);
    1 <= k <= 256 and k <= M (k <= 32 on the kernels' register lists, larger on the exact
    torch path). metric: "l2" (squared distances, ascending), "ip" (inner products,
    descending) or "cosine" (similarities, descending). exclude_self: query i is database
    row i (Q == M) and is not its own neighbour. Ties go to the smaller index.
    return_distances=False returns idx only. config: a variant of kernels/knn/variants.py
    (name or Variant) instead of the dispatcher's choice (kernels/knn/dispatch.py).
    autotune=True: the first call of a shape (on a device) times the best-ranked variants on these
    inputs and remembers the fastest, for this process and later ones (eager calls, k <= 32).
    """
    fast_key = None  # the per-call path's key, of the arguments as given
    if not autotune and type(q) is torch.Tensor and type(x) is torch.Tensor and not _compiling():
        fast_key = (q.data_ptr(), q.shape, q.dtype, x.data_ptr(), x.shape, x.dtype, k, metric, exclude_self, index_dtype,
                    return_distances, config)
        hit = _lookup(_FAST_KNN, fast_key)
        # The same database tensor, unmodified since its norms were computed: nothing of it to refresh.
        if hit is not None and hit[1]() is x and x._version == hit[2] and x.is_contiguous() and _fast_ready(hit[0], q):
            return hit[0]()
    metric = _check_metric(metric)
    _check_options(k, index_dtype, return_distances)
    config = _check_config(config, autotune)
    _check_tensor("q", q)
    _check_database(x)
    _check_queries(q, tuple(x.shape), x.dtype, x.device, k, exclude_self)
    squeeze = q.dim() == 2
    q3, x3 = ((q[None], x[None]) if squeeze else (q, x))
    q3, x3 = q3.contiguous(), x3.contiguous()
    if autotune:
        _autotune(q3, x3.shape[1], k, exclude_self, index_dtype, lambda: knn_rows.Database(x3, metric))
    if _compiling():
        dist, idx = _knn_op(q3, x3, k, metric, exclude_self, index_dtype == torch.int64, config)
        return _result(dist, idx, squeeze, return_distances)
    dist, idx = _knn_impl(q3, x3, k, metric, exclude_self, index_dtype == torch.int64, config)  # eager: no op dispatch
    if fast_key is not None and not _capturing() and x.is_contiguous() and not x.is_inference():
        db = _DATABASES.get((x3.data_ptr(), tuple(x3.shape), x3.dtype, metric, x3.device))
        entry = db and _fast_entry(q, q3, db, k, exclude_self, index_dtype, return_distances, config)
        if entry is not None:  # (inference tensors keep no version: their repeats take the checked path)
            if len(_FAST_KNN) >= MAX_FAST:
                _FAST_KNN.clear()
            _FAST_KNN[fast_key] = (entry, weakref.ref(x), x._version)
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
        self._db = knn_rows.Database((x if x.dim() == 3 else x[None]).contiguous(), self.metric)
        self._db.max_norm()  # computed once here, so searches that seed do not re-read the database

    @property
    def shape(self):
        return self._x_shape

    def search(self, q, k, *, return_distances=True, exclude_self=False, index_dtype=torch.int32, config=None,
               autotune=False):
        """The k best database rows for each query of q ([Q, D], or [B, Q, D] for a batched index); config and
        autotune as for `knn`."""
        db = self._db
        fast_key = None  # the per-call path's key, of the arguments as given
        if not autotune and type(q) is torch.Tensor and not _compiling():
            fast_key = (q.data_ptr(), q.shape, q.dtype, k, exclude_self, index_dtype, return_distances, config)
            hit = _lookup(db.fast, fast_key)
            if hit is not None and _fast_ready(hit, q):
                return hit()
        _check_options(k, index_dtype, return_distances)
        config = _check_config(config, autotune)
        _check_queries(q, self._x_shape, self._dtype, self._device, k, exclude_self)
        squeeze = q.dim() == 2
        q3 = q[None] if squeeze else q
        if autotune:
            _autotune(q3.contiguous(), db.shape[1], k, exclude_self, index_dtype, lambda: db)
        if _compiling():
            dist, idx = _search_op(q3.contiguous(), db.rank, db.rows, db.col, db.max_norm(), k, self.metric, exclude_self,
                                   index_dtype == torch.int64, config)
        else:  # eager: the index's own database, whose prepared searches are kept
            dist, idx = _search(q3.contiguous(), db, k, exclude_self, index_dtype == torch.int64, config)
            entry = None if fast_key is None or _capturing() else _fast_entry(q, q3, db, k, exclude_self, index_dtype,
                                                                              return_distances, config)
            if entry is not None:
                if len(db.fast) >= MAX_FAST:
                    db.fast.clear()
                db.fast[fast_key] = entry
        return _result(dist, idx, squeeze, return_distances)
