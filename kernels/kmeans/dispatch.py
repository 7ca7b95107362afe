"""The KMeans assignment dispatcher: shape -> variant, and the launch path with microseconds of host cost.

Choosing (`pick`), in order, for a problem (B, N, K, D):
1. `config=` when the caller forces a variant (a name from variants.BY_NAME or an
   AssignVariant); it must admit D.
2. A measured winner: an exact shape autotuned in this process (`autotune=True`), else
   the tuning databases' entry for the shape's bucket (kernels/kmeans/tuning/*.json:
   h200.json from bench_dispatch, h200_rest.json from tune_rest for the buckets it left,
   entries of both re-timed by tune_cover with the consumer counts first left untried;
   keyed by device, toolchain and bucket: domain.json's D, K and B*N edges), else the
   entry of the bucket one B*N step smaller, then one larger (same D and K): the buckets
   neither tuning run measured (too large, or out of memory) have no entry of their own.
   An entry's candidates were timed at its own shapes, and a bucket spans K and N of
   4x to 16x: the candidate taken (`fit`) is the one whose times, scaled by the padded
   work it would do at this shape against the tuned shape's (centroids rounded up to its
   tile, each problem's points up to its block), are least; the winner stays unless
   another is FIT_MARGIN faster so. (B 1600 N 1170 K 14 ran 1024-point blocks, the
   bucket's winner at 2M points in one problem, leaving each problem's second block 43%
   empty; K 103 ran on 96-wide tiles, the winner at K 92, and paid for 192 centroids.)
3. The cost model's choice among the variants on D's tile (variants.rank).
Running: the chosen variant's prebuilt kernel (compiler/build/prebuilt.py; JIT with a
warning when it is absent); if it cannot be loaded, the generic bounds-checked variant
of D's range (variants.generic); if that cannot either, the torch reference
(reference.assign: fp32 scores, chunked). D % 8 != 0 runs on zero-padded copies (zero
features move no distance; TMA needs rows 16-byte aligned, which such rows are not),
kept per (x, c) pair like the launch: the copy of x is made on every call, c's only when
c changed. So every shape of the domain gets labels; `explain(shape)` says which path it
takes.

The launch path (`assign`) keeps, per (x, c addresses, shape, dtype, device): the
picked variant, its prepared launch (runtime/fast_launch.py: arguments and tensor maps
built and checked once) and c's padded squared norms, recomputed only when c is another
tensor or its version counter moved (every in-place torch op bumps it), and always
under CUDA graph capture, so a captured graph recomputes them on every replay. A call
then costs the checks of its arguments, one output allocation and one driver launch.
"""

import json
import math
import os
import weakref
from bisect import bisect_left

import torch

from compiler.build import prebuilt
from kernels.kmeans import reference, variants
from runtime.compiled import CompiledKernelRunner
from runtime.fast_launch import FastLaunch, raw_stream
from runtime.shape_domain import Domain
from runtime.tuning_db import TuningDB, select, user_path

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAIN = Domain.load(os.path.join(HERE, "domain.json"))
TUNING_DIR = os.path.join(HERE, "tuning")
CANDIDATES = os.path.join(TUNING_DIR, "candidates.json")  # the cost model's ranking per bucket: not a database
MAX_KERNEL_D = variants.WIDE_D[-1]
DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "f16"}
_D_EDGES = DOMAIN.buckets["D"]
_K_EDGES = DOMAIN.buckets["K"]
_R_EDGES = DOMAIN.buckets["B*N"]
# Whether torch's current stream is capturing a CUDA graph (the C entry point: no wrapper on the per-call path).
_capturing = torch._C._cuda_isCurrentStreamCapturing if torch.backends.cuda.is_built() else (lambda: False)
MAX_STATES = 256  # launch states kept (one per distinct (x, c) pair); beyond it the cache is cleared
MAX_PADDED_STATES = 4  # states of D % 8 != 0 pairs, each holding zero-padded copies of x and c: the oldest goes first

# Why the neighbours: on the first H200 database (217 buckets), the winner of the bucket one B*N
# step smaller was the measured winner in 71 of 103 buckets, the cost model's first choice in 67;
# two steps away it did worse than the cost model. Timed on the H200 where the two differ
# (benchmarks/results/kmeans_rest_h200.json, 15 buckets) the neighbour was faster in 7, slower in
# 8, 1.05x the cost model's choice in geometric mean (0.60x to 3.11x): a small gain, kept only for
# the buckets that have no entry of their own (tuning/h200_rest.json measured most of the rest).
NEIGHBOUR_STEPS = (-1, 1)
FIT_MARGIN = 0.9  # another candidate replaces an entry's winner when its scaled time is below 0.9x the winner's


def _key(di, ki, ri):
    return "D%d/K%d/R%d" % (di, ki, ri)


def bucket_key(b, n, k, d):
    """The tuning database's key of a shape: its D, K and B*N bucket indices."""
    return _key(bisect_left(_D_EDGES, d), bisect_left(_K_EDGES, k), bisect_left(_R_EDGES, b * n))


def neighbour_keys(b, n, k, d):
    """The keys of the buckets one B*N step smaller and one larger (in that order), inside the domain."""
    di, ki, ri = bisect_left(_D_EDGES, d), bisect_left(_K_EDGES, k), bisect_left(_R_EDGES, b * n)
    return [_key(di, ki, ri + step) for step in NEIGHBOUR_STEPS if 0 <= ri + step < len(_R_EDGES)]


def kernel_d(d):
    """The feature count the kernel runs with: d rounded up to a multiple of 8 (None above 1024)."""
    dp = -(-d // 8) * 8
    return dp if dp <= MAX_KERNEL_D else None


def representative(di, ki, ri):
    """The shape standing for bucket (D index, K index, B*N index): D at the tile, B*N and K at the geometric
    centre, B*N no more than the domain's limit on B*N*D allows at that D, B = 1 unless N would pass its maximum
    (the largest B*N bucket needs B > 1); None for a bucket the limit leaves empty (wide D, the most points)."""
    k_lo, k_hi = DOMAIN.bucket_range("K", ki)
    r_lo, r_hi = DOMAIN.bucket_range("B*N", ri)
    d = _D_EDGES[di]
    r = min([math.isqrt(r_lo * r_hi)] + [cap // d for names, cap, _ in DOMAIN.limits if set(names) == {"B", "N", "D"}])
    if r <= r_lo:
        return None
    b = -(-r // DOMAIN.symbols["N"][1])
    return {"B": b, "N": r // b, "K": max(2, int(math.sqrt(k_lo * k_hi))), "D": d}


def kernel_buckets():
    """Every bucket on the kernel path that holds a shape of the domain: (key, representative shape)."""
    out = []
    for di, d in enumerate(_D_EDGES):
        if d > MAX_KERNEL_D:
            continue
        for ki in range(len(_K_EDGES)):
            for ri in range(len(_R_EDGES)):
                shape = representative(di, ki, ri)
                if shape is not None:
                    out.append(("D%d/K%d/R%d" % (di, ki, ri), shape))
    return out


def _load_plan():
    """Each bucket's cost-model ranking, computed offline (tuning/candidates.json; bench_dispatch.write_candidates)."""
    try:
        with open(CANDIDATES) as f:
            return {key: item["top"][0] for key, item in json.load(f)["buckets"].items()}
    except (OSError, ValueError, KeyError, IndexError):
        return {}


class Picker:
    """Shape -> (variant, how it was chosen), memoised per exact shape."""

    def __init__(self, dbs=(), plan=None):
        self.dbs = list(dbs)
        self.plan = _load_plan() if plan is None else plan  # bucket -> the cost model's first variant
        self.exact = {}  # (b, n, k, d) -> variant measured here by autotune
        self._memo = {}

    def pick(self, b, n, k, d):
        key = (b, n, k, d)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        hit = self._choose(b, n, k, d)
        if len(self._memo) > 4096:
            self._memo.clear()
        self._memo[key] = hit
        return hit

    def _choose(self, b, n, k, d):
        v = self.exact.get((b, n, k, d))
        if v is not None:
            return v, "autotuned"
        bucket = bucket_key(b, n, k, d)
        hit = self.measured(bucket, d, n, k)
        if hit is not None:
            return hit[0], "tuned (%s)" % hit[1]
        for key in neighbour_keys(b, n, k, d):
            hit = self.measured(key, d, n, k)
            if hit is not None:
                return hit[0], "tuned neighbour (%s, %s)" % (hit[1], key)
        v = variants.BY_NAME.get(self.plan.get(bucket))
        if v is not None and v.admits(d):
            return v, "cost model (offline, at the bucket's representative)"
        return variants.rank({"B": b, "N": n, "K": k, "D": d}, top=1)[0], "cost model"

    def measured(self, key, d, n=None, k=None):
        """(variant, how) from the first database whose entry for `key` admits d, or None; with the shape's
        n and k, the entry's candidate that fits them (`fit`)."""
        for db in self.dbs:
            v = variants.BY_NAME.get(db.lookup(key))
            if v is not None and v.admits(d):
                where = os.path.basename(db.path or "database")
                better = fit(db.entries[key], v, d, n, k) if n is not None else v
                return (v, where) if better == v else (better, "%s; fits N %d K %d over %s" % (where, n, k, v.name))
        return None

    def remember(self, b, n, k, d, variant):
        self.exact[(b, n, k, d)] = variant
        self._memo.pop((b, n, k, d), None)


K_PAD_EXPONENT = 0.5  # a centroid tile's time is part fixed (the consumers' wait, fence, barrier chain), part per centroid


def _padded_work(v, n, k):
    """What `v` spends on one problem of n points and k centroids, up to a factor common to every variant: its
    point blocks (each runs every centroid tile whatever its valid rows), times its padded centroids to the
    K_PAD_EXPONENT (at K 92 on the 32-wide feature tile, 128 centroids a tile took 1.13x the time of 96)."""
    return -(-n // v.block_n) * v.block_n * v.kp(k) ** K_PAD_EXPONENT


def fit(entry, winner, d, n, k):
    """The candidate of a database entry for n points and k centroids a problem (see the module doc, 2.).

    Each candidate timed at every one of the entry's shapes scores the geometric mean over
    them of its time x its padded work at (n, k) / its padded work at that shape.
    """
    shapes = entry.get("shapes") or [entry.get("shape")]
    times = entry.get("times_ms_by_shape") or [entry.get("times_ms")]
    if not shapes or None in shapes or len(times) != len(shapes):
        return winner
    scores = {}
    for name in times[0]:
        v = variants.BY_NAME.get(name)
        if v is None or not v.admits(d) or any(name not in t for t in times):
            continue
        logs = [math.log(t[name] * _padded_work(v, n, k) / _padded_work(v, s["N"], s["K"])) for s, t in zip(shapes, times)]
        scores[v] = sum(logs) / len(logs)
    if winner not in scores or not scores:
        return winner
    best = min(scores, key=lambda v: (scores[v], v != winner))
    return best if scores[best] < scores[winner] + math.log(FIT_MARGIN) else winner


_pickers = {}  # device index -> Picker


def device_name(index):
    return torch.cuda.get_device_name(index)


def toolchain():
    """The toolchain of the prebuilt kernels (what the tuning was measured with), or None."""
    found = prebuilt.find(variants.GENERIC.kernel())
    return found.toolchain if found is not None else None


def picker(index):
    p = _pickers.get(index)
    if p is None:
        paths = sorted(os.path.join(TUNING_DIR, f) for f in os.listdir(TUNING_DIR)
                       if f.endswith(".json") and os.path.join(TUNING_DIR, f) != CANDIDATES)
        p = _pickers[index] = Picker(select(paths, DOMAIN.op, device_name(index), toolchain()))
        _load_user_entries(p, index)
    return p


def _load_user_entries(p, index):
    """Shapes autotuned by earlier processes on this device (the user's tuning database)."""
    path = user_db_path(index)
    try:
        db = TuningDB.load(path)
    except (OSError, ValueError):
        return
    for entry in db.entries.values():
        v, s = variants.BY_NAME.get(entry.get("variant")), entry.get("shape", {})
        if v is not None and v.admits(s.get("D", 0)):
            p.exact[(s["B"], s["N"], s["K"], s["D"])] = v


_launchers = {}  # (variant, dtype name, device index) -> FastLaunch, or the exception loading it raised


def launcher(variant, dtype_name, index):
    """The loaded kernel of `variant` (prebuilt, else compiled here); raises when neither works."""
    key = (variant, dtype_name, index)
    got = _launchers.get(key)
    if got is None:
        try:
            with torch.cuda.device(index):
                compiled = prebuilt.load(variant.kernel(dtype_name), what="kmeans assign %s %s" % (variant.name, dtype_name))
                got = FastLaunch(CompiledKernelRunner(compiled), late=("labels",))
        except Exception as e:  # noqa: BLE001  (remembered: the dispatcher falls back, and says why in explain)
            got = e
        _launchers[key] = got
    if isinstance(got, Exception):
        raise got
    return got


class _State:
    """What one (x, c) pair's calls reuse: the variant, its prepared launch, c's norm buffer, and for D % 8 != 0
    the zero-padded copies of x and c the launch reads (`xp`, `cp`; None otherwise)."""

    __slots__ = ("variant", "how", "launch", "prepared", "c_sq", "c_ref", "c_version", "k", "index", "xp", "cp")

    def __init__(self, variant, how, launch, prepared, c_sq, k, index, xp=None, cp=None):
        self.variant, self.how, self.launch, self.prepared = variant, how, launch, prepared
        self.c_sq, self.k, self.index, self.xp, self.cp = c_sq, k, index, xp, cp
        self.c_ref, self.c_version = None, -1

    def norms(self, c):
        """c's squared norms into the padded buffer (and c into its padded copy), unless this very tensor's are
        there already."""
        if self.c_ref is not None and self.c_ref() is c and c._version == self.c_version \
                and not _capturing():
            return
        if self.cp is not None:
            self.cp[..., : c.shape[2]].copy_(c)
        cf = c.float()
        torch.linalg.vecdot(cf, cf, dim=-1, out=self.c_sq[:, : self.k])
        self.c_ref, self.c_version = weakref.ref(c), c._version


_states = {}
_padded_states = {}  # the same for D % 8 != 0 pairs (insertion ordered: the oldest is dropped first)


def _state(x, c, variant, how, dk):
    """The launch state of `variant` for x and c, on zero-padded copies of dk features when D < dk."""
    b, n, d = x.shape
    k = c.shape[1]
    index = x.device.index
    launch = launcher(variant, DTYPE_NAMES[x.dtype], index)
    xp = cp = None
    if dk != d:
        xp = torch.zeros((b, n, dk), dtype=x.dtype, device=x.device)
        cp = torch.zeros((b, k, dk), dtype=c.dtype, device=c.device)
    c_sq = torch.full((b, variant.kp(k)), float("inf"), dtype=torch.float32, device=x.device)
    labels = torch.empty((b, n), dtype=torch.int32, device=x.device)
    prepared = launch.prepare({"x": x if xp is None else xp, "c": c if cp is None else cp, "c_sq": c_sq, "labels": labels})
    return _State(variant, how, launch, prepared, c_sq, k, index, xp, cp)


def _kernel_state(x, c, dk, variant=None, how=None):
    """A launch state for checked, contiguous [B, N, D] x and [B, K, D] c, D <= dk = kernel_d(D)."""
    b, n, _ = x.shape
    k = c.shape[1]
    if variant is None:
        variant, how = picker(x.device.index).pick(b, n, k, dk)
    try:
        return _state(x, c, variant, how, dk)
    except Exception as first:  # noqa: BLE001
        fallback = variants.generic(dk)
        if variant == fallback or how == "config":  # a forced variant that cannot run is the caller's error
            raise
        try:
            return _state(x, c, fallback, "generic (%s failed: %s)" % (variant.name, first), dk)
        except Exception:  # noqa: BLE001
            raise first from None


def _run(state, x, c, labels):
    if state.xp is not None:
        state.xp[..., : x.shape[2]].copy_(x)
    state.norms(c)
    state.launch.launch(state.prepared, state.index, labels=labels)


def assign(x, c, labels=None, config=None):
    """Labels of checked [B, N, D] x and [B, K, D] c (same dtype, device; contiguous), any D.

    Writes into `labels` (int32 [B, N]) when given. `config` forces a variant.
    """
    b, n, d = x.shape
    k = c.shape[1]
    if labels is None:
        labels = torch.empty((b, n), dtype=torch.int32, device=x.device)
    dk = kernel_d(d)
    if dk is None:
        labels.copy_(reference.assign(x, c))
        return labels
    variant = forced(config, dk) if config is not None else None
    key = (x.data_ptr(), c.data_ptr(), b, n, k, d, x.dtype, x.get_device()) + ((variant,) if variant else ())
    states, limit = (_states, MAX_STATES) if dk == d else (_padded_states, MAX_PADDED_STATES)
    state = states.get(key)
    if state is None:
        try:
            state = _kernel_state(x, c, dk, variant, "config" if variant else None)
        except Exception:  # noqa: BLE001  (no kernel could be loaded: the torch path)
            if variant is not None:
                raise
            labels.copy_(reference.assign(x, c))
            return labels
        if len(states) >= limit:
            if dk == d:
                states.clear()
            else:
                del states[next(iter(states))]
        states[key] = state
    _run(state, x, c, labels)
    return labels


def fast_assign(x, c):
    """The per-call path for plain contiguous CUDA [B, N, D] tensors already seen; None otherwise.

    None sends the caller down the checked path (which prepares the state this path reuses).
    Its key is assign's (the device as get_device's int: no torch.device object per call); the
    labels it allocates itself are what the launch was prepared for, so they go to the driver
    unchecked (FastLaunch.launch_on).
    """
    if type(x) is not torch.Tensor or type(c) is not torch.Tensor:
        return None
    xs, cs = x.shape, c.shape
    if len(xs) != 3 or len(cs) != 3:
        return None
    index = x.get_device()
    state = _states.get((x.data_ptr(), c.data_ptr(), xs[0], xs[1], cs[1], xs[2], x.dtype, index))
    if state is None or c.dtype is not x.dtype or cs[0] != xs[0] or cs[2] != xs[2] or c.get_device() != index \
            or not x.is_contiguous() or not c.is_contiguous():
        return None
    labels = x.new_empty(xs[:2], dtype=torch.int32)
    state.norms(c)
    state.launch.launch_on(state.prepared, raw_stream(state.index), labels.data_ptr())
    return labels


def forced(config, d):
    """The variant `config` names (a name or an AssignVariant), checked to admit `d` features."""
    v = config if isinstance(config, variants.AssignVariant) else variants.BY_NAME.get(config)
    if v is None:
        raise ValueError("config must be an AssignVariant or one of the variant names (e.g. %s), got %r"
                         % (variants.GENERIC.name, config))
    if not v.admits(d):
        raise ValueError("config %s holds up to %d features; this problem has %d" % (v.name, v.d, d))
    return v


def explain(shape):
    """How a shape (B, N, K, D) would run: {"path", "variant", "how"} (no GPU work)."""
    b, n, k, d = shape["B"], shape["N"], shape["K"], shape["D"]
    dk = kernel_d(d)
    if dk is None:
        return {"path": "torch reference (D > %d)" % MAX_KERNEL_D, "variant": None, "how": "domain"}
    index = torch.cuda.current_device() if torch.cuda.is_available() else None
    p = picker(index) if index is not None else Picker()
    v, how = p.pick(b, n, k, dk)
    return {"path": "kernel" if dk == d else "kernel on zero-padded features (D % 8 != 0)", "variant": v.name, "how": how}


def autotune(x, c, top=3, reps=5):
    """Time the cost model's `top` variants on these inputs, remember the fastest for this shape; its name.

    The result is kept for this process and written to the user's tuning database
    (compiler/locations.py's state directory), which later processes read too.
    """
    b, n, d = x.shape
    k = c.shape[1]
    dk = kernel_d(d)
    if dk is None or dk != d:
        raise ValueError("autotune runs on kernel-path shapes (D a multiple of 8 up to %d), got D=%d" % (MAX_KERNEL_D, d))
    index = x.device.index
    labels = torch.empty((b, n), dtype=torch.int32, device=x.device)
    times = {}
    for v in variants.rank({"B": b, "N": n, "K": k, "D": d}, top=top):
        try:
            state = _state(x, c, v, "autotune", d)
        except Exception:  # noqa: BLE001  (a variant that cannot load is not a candidate)
            continue
        _run(state, x, c, labels)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            _run(state, x, c, labels)
        end.record()
        end.synchronize()
        times[v.name] = start.elapsed_time(end) / reps
    if not times:
        raise RuntimeError("autotune: no variant for D=%d could be loaded" % d)
    best = variants.BY_NAME[min(times, key=times.get)]
    picker(index).remember(b, n, k, d, best)
    _states.pop((x.data_ptr(), c.data_ptr(), b, n, k, d, x.dtype, x.get_device()), None)
    _save_user_entry(index, {"B": b, "N": n, "K": k, "D": d}, best, times)
    return best.name


def user_db_path(index):
    return user_path("kmeans_assign", device_name(index))


def _save_user_entry(index, shape, variant, times):
    path = user_db_path(index)
    try:
        db = TuningDB.load(path) if os.path.exists(path) else TuningDB(DOMAIN.op, device_name(index), toolchain() or "",
                                                                        made={"by": "kmeans_assign(autotune=True)"})
        key = "exact/B%d/N%d/K%d/D%d" % (shape["B"], shape["N"], shape["K"], shape["D"])
        db.remember(key, variant.name, shape, times, "autotune: top variants by the cost model, CUDA events")
        db.save(path)
    except OSError:
        pass  # an unwritable state directory loses only the memory across processes
