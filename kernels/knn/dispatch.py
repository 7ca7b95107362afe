"""How a KNN search runs: its kernels, prepared once per (queries, database, k), then launched with microseconds of host cost.

A search of database `db` (kernels/knn/rows.py) for queries q at k neighbours runs, in order
(kernels/knn/plan.py chooses the layout, parameters and split):
1. when the database splits into many partial lists per query, a seeding pass: a score kernel
   over the database's first rows (its minima form, plan.seed_plan: the best of each group of
   rows) and a merge (ranking scores only) bound each query's k-th score there; four torch
   element-wise ops loosen the bound by the rounding bound into `seed`;
2. the score kernel over the whole database (lists start at the seed when there is one),
   writing partial lists into a workspace (and with many per query, a fan-in that merges each 32
   of them into one, plan.fanin_lists; the seeding pass's merge reads its own lists so too);
3. the merge kernel: partial lists -> the k best, rescored exactly in f32, sorted, into the
   caller's dist and idx.
k past the register lists (plan.MAX_K) runs the wide-k kernels up to select.MAX_K (kernels/knn/widek.py: a bound
from the seeding pass, the collect form of the score kernel, a select kernel), past them, or when their candidate
buffers overflow, the exact torch path (kernels/knn/torch_path.py).

`Call` holds one search's prepared launches (runtime/fast_launch.py: arguments, tensor maps
and contract checks done once) and buffers. A database keeps its calls (`Database.calls`,
keyed by the queries' address, shape and dtype, k and options), so a repeated search costs
the torch ops of the bound and three or five driver launches. Queries that the kernels
cannot read in place (float32, D % 8 != 0) are written into the Call's own buffers first.
"""

import functools
import math
import os
import warnings

import torch

from compiler.build import cache as compile_cache
from compiler.build import driver, prebuilt
from compiler.verify import has_errors, verify
from kernels.knn import plan as planner
from kernels.knn import rows as knn_rows
from kernels.knn import schedules, torch_path, variants
from kernels.knn import wide_select as wide
from runtime.compiled import CompiledKernelRunner
from runtime.fast_launch import FastLaunch, raw_stream
from runtime.shape_domain import Domain
from runtime.tuning_db import TuningDB, select, user_path

DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
INDEX_DTYPES = {torch.int32: "i32", torch.int64: "i64"}
MAX_CALLS = 64  # prepared searches kept per database; beyond it they are dropped and prepared again
# CAKE_KNN_GRAPHS=0 launches every kernel of a search as it is (no CUDA graph of the seeding pass).
GRAPHS = os.environ.get("CAKE_KNN_GRAPHS", "1") != "0"
HERE = os.path.dirname(os.path.abspath(__file__))
DOMAIN = Domain.load(os.path.join(HERE, "domain.json"))
TUNING_DIR = os.path.join(HERE, "tuning")
PREBUILT_HINT = "`bazel build //kernels/knn:search_prebuilt` builds the kernels of the domain"
# Whether torch's current stream is capturing a CUDA graph (the C entry point: no wrapper on the per-call path).
_capturing = torch._C._cuda_isCurrentStreamCapturing if torch.backends.cuda.is_built() else (lambda: False)


def compiled(builder, params):
    """The CompiledKernel of a schedule and parameters: prebuilt when a store has it, else built once (nvcc,
    after a JitCompile warning naming the Bazel target that prebuilds the common ones, then the compile cache).

    A kernel is verified before nvcc builds it (a schedule the planner got wrong must not reach the
    GPU, where a broken protocol hangs); a compile-cache hit was verified when it was built.
    """
    kernel = getattr(schedules, builder, None) or getattr(wide, builder)  # k <= 32, or wide k (wide_select.py)
    kernel = kernel(**dict(params))
    found = prebuilt.find(kernel)  # a prebuilt store on the search path (compiler/build/prebuilt.py): no nvcc
    if found is not None:
        return found
    cache = compile_cache.default_cache()
    result = driver.cached(driver.plan(kernel), cache)
    if result is None:
        diags = verify(kernel)
        if has_errors(diags):
            raise RuntimeError("knn kernel %s does not verify: %s" % (kernel.name, "; ".join(d.message for d in diags)))
        prebuilt.warn_jit(kernel, "knn %s %s" % (builder, dict(params)), PREBUILT_HINT)
        result = driver.build(kernel, cache)
    if not result.ok:
        raise RuntimeError("knn kernel %s failed to build: %s" % (kernel.name, "; ".join(d.message for d in result.diagnostics)))
    return result.compiled


@functools.lru_cache(maxsize=None)
def launcher(builder, params, late=()):
    """The loaded kernel of (builder, params) as a FastLaunch whose `late` pointers are patched per call."""
    return FastLaunch(CompiledKernelRunner(compiled(builder, params)), late=late)


_WORKSPACES = {}


def workspace(b, lists, p, q, k, worst, device, tag="score"):
    """Partial lists [B, P, Q, k] (scores, indices), shared per shape and plan: lists past the plan's
    `lists` are never written, so they keep the worst score and index -1 for the merge (the key holds
    `lists`, so no plan finds another plan's lists there; `tag` tells a score kernel's lists from a
    fan-in's). Searches on one stream are ordered."""
    key = (b, lists, p, q, k, worst, device, tag)
    ws = _WORKSPACES.get(key)
    if ws is None:
        if len(_WORKSPACES) > 64:
            _WORKSPACES.clear()
        ws = (torch.full((b, p, q, k), worst, dtype=torch.float32, device=device),
              torch.full((b, p, q, k), -1, dtype=torch.int32, device=device))
        _WORKSPACES[key] = ws
    return ws


def score_builder(p, metric, exclude_self, dtype, seeded=False):
    name = "rows_sm90a" if p.layout == "rows" else "cols_sm90a"
    params = dict(p.kwargs, metric=metric, exclude_self=exclude_self, dtype=dtype)
    if seeded:
        params["seeded"] = True
    return name, tuple(sorted(params.items()))


def fanin_builder(k, metric):
    return "merge_fanin", (("k", k), ("metric", metric))


def merge_builder(k, metric, dtype, index_dtype, rescore=True, single=False):
    params = dict(k=k, metric=metric, dtype=DTYPES[dtype], index_dtype=INDEX_DTYPES[index_dtype])
    if not rescore:
        params["rescore"] = False
    if single:
        params["single"] = True
    return "merge", tuple(sorted(params.items()))


def plans(b, q, m, d, k, layout, sms, seed=None):
    """(pass-2 plan, sample rows or 0): seed when the database splits into many partial lists per query.

    `seed` False forbids seeding, True asks for it wherever the database is large enough to sample.
    """
    seeded = planner.plan(b, q, m, d, k, layout=layout, sms=sms, seeded=True)
    rows = planner.seed_rows(m, k)
    if seed is None and seeded.layout == "cols":
        seed = False  # measured on the H200 (docs/gpu_runs.md): Q = 1, M = 1M 0.18 ms unseeded, 0.27 seeded; Q = 16 even
    if rows and seed is not False and (seed or seeded.lists >= planner.SEED_MIN_LISTS):
        return seeded, rows
    return planner.plan(b, q, m, d, k, layout=layout, sms=sms), 0


def rank_shape(d, dtype):
    """(features, dtype) of the ranking rows for D features of `dtype` (float32: three bf16 terms)."""
    return -(-(3 * d if dtype == torch.float32 else d) // 8) * 8, torch.bfloat16 if dtype == torch.float32 else dtype


def kernels_for(b, q, m, d, k, metric="l2", exclude_self=False, dtype=torch.bfloat16, index_dtype=torch.int32,
                layout=None, seed=None, config=None, device_index=None):
    """The (builder, parameters) pairs of the kernels a search of these sizes runs (to build them ahead).

    `metric` is a kernel metric name ("l2", "ip", "cos"); layout, seed and config as for search_into.
    """
    if k > planner.MAX_K:
        return []
    rank_d, rank_dtype = rank_shape(d, dtype)
    p, rows, _ = choose(b, q, m, rank_d, k, device_index, layout, None, seed, config)
    out = [score_builder(p, metric, exclude_self, DTYPES[rank_dtype], seeded=bool(rows)),
           merge_builder(p.k, metric, dtype, index_dtype, single=p.single)]
    fans_in = planner.fanin_lists(p.lists_padded)
    if rows:
        sp, _ = planner.seed_plan(b, q, m, rank_d, k, planner.device_sms(device_index), exclude_self)
        out += [score_builder(sp, metric, exclude_self, DTYPES[rank_dtype]),
                merge_builder(sp.k, metric, rank_dtype, torch.int32, rescore=False, single=sp.single)]
        fans_in = fans_in or planner.fanin_lists(sp.lists_padded)
    if fans_in:
        out.append(fanin_builder(p.k, metric))
    return out


def bucket_key(b, q, m, d, k):
    """The tuning database's key of a shape (d: the ranking rows' padded width): its B*Q, M, D and k buckets."""
    return "Q%d/M%d/D%d/k%d" % (DOMAIN.bucket_index("B*Q", b * q), DOMAIN.bucket_index("M", m),
                                DOMAIN.bucket_index("D", d), DOMAIN.bucket_index("k", k))


class Picker:
    """Shape -> (variant or None for the planner's own choice, how it was chosen), memoised per exact shape.

    In order: an exact shape autotuned on this device (`exact`: in this process, or read from the
    user's tuning database), the tuning databases' entry for the shape's bucket, the planner.
    """

    def __init__(self, dbs=()):
        self.dbs = list(dbs)
        self.exact = {}  # (b, q, m, d, k) -> Variant measured on this device by autotune
        self._memo = {}

    def pick(self, b, q, m, d, k, sms=planner.SMS):
        key = (b, q, m, d, k, sms)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._choose(b, q, m, d, k, sms)
        return hit

    def _choose(self, b, q, m, d, k, sms):
        v = self.exact.get((b, q, m, d, k))
        if v is not None and v.plan(b, q, m, d, k, sms) is not None:
            return v, "autotuned"
        bucket = bucket_key(b, q, m, d, k)
        for db in self.dbs:
            v = variants.BY_NAME.get(db.lookup(bucket))
            if v is not None and v.plan(b, q, m, d, k, sms) is not None:
                return v, "tuned (%s, bucket %s)" % (os.path.basename(db.path or "database"), bucket)
        return None, "planner (cost model)"

    def ranked(self, b, q, m, d, k, sms=planner.SMS):
        """The variants that fit a shape, best first as far as known: its bucket's measured times (fastest
        first), then the variant the planner's own choice is, then the rest in variants.ALL's order."""
        fits = [v for v in variants.ALL if v.plan(b, q, m, d, k, sms) is not None]
        bucket = bucket_key(b, q, m, d, k)
        measured = {}
        for db in self.dbs:
            for name, ms in (db.entries.get(bucket) or {}).get("times_ms", {}).items():
                measured.setdefault(name, ms)
        p, rows = plans(b, q, m, d, k, None, sms)
        own = variants.of_plan(p, bool(rows))
        return sorted(fits, key=lambda v: (measured.get(v.name, float("inf")), v is not own, variants.ALL.index(v)))

    def remember(self, b, q, m, d, k, variant):
        self.exact[(b, q, m, d, k)] = variant
        self._memo = {key: hit for key, hit in self._memo.items() if key[:5] != (b, q, m, d, k)}


_pickers = {}


def picker(device_index):
    """The Picker of a device: the tuning databases measured on a GPU of its name and the shapes autotuned on
    one (none on the CPU)."""
    p = _pickers.get(device_index)
    if p is None:
        try:
            name = torch.cuda.get_device_name(device_index)
        except Exception:  # noqa: BLE001  (no CUDA: the planner decides)
            name = None
        paths = sorted(os.path.join(TUNING_DIR, f) for f in os.listdir(TUNING_DIR) if f.endswith(".json"))
        p = _pickers[device_index] = Picker(select(paths, DOMAIN.op, name, "") if name else ())
        if name:
            _load_user_entries(p, name)
    return p


def _load_user_entries(p, device):
    """Shapes autotuned by earlier processes on a device of this name (the user's tuning database)."""
    try:
        db = TuningDB.load(user_path(DOMAIN.op, device))
    except (OSError, ValueError):
        return
    for entry in db.entries.values():
        v, s = variants.BY_NAME.get(entry.get("variant")), entry.get("shape", {})
        if v is not None and all(n in s for n in "BQMDk"):
            p.exact[(s["B"], s["Q"], s["M"], s["D"], s["k"])] = v


def _save_user_entry(device, shape, variant, times):
    path = user_path(DOMAIN.op, device)
    try:
        db = TuningDB.load(path) if os.path.exists(path) else TuningDB(DOMAIN.op, device, "", made={
            "by": "knn(autotune=True) / KnnIndex.search(autotune=True)"})
        key = "exact/B%(B)d/Q%(Q)d/M%(M)d/D%(D)d/k%(k)d" % shape
        db.remember(key, variant.name, shape, times, "autotune: the shape's best-ranked variants, CUDA events")
        db.save(path)
    except (OSError, ValueError):
        pass  # an unwritable or unreadable state directory loses only the memory across processes


def choose(b, q, m, d, k, device_index=None, layout=None, plan=None, seed=None, config=None):
    """(plan, sample rows or 0, how): what a search of these sizes runs (d: the ranking rows' width).

    In order: `config` (a variant forced by name), `plan`/`layout`/`seed` (forced pieces), the Picker's
    (a variant autotuned for the exact shape, the tuning database's for the shape's bucket), the
    planner's own choice.
    """
    sms = planner.device_sms(device_index)
    if config is not None:
        v = variants.named(config)
        p = v.plan(b, q, m, d, k, sms)
        if p is None:
            raise ValueError("config %s does not fit this problem (B=%d, Q=%d, M=%d, D=%d, k=%d)" % (v.name, b, q, m, d, k))
        return p, planner.seed_rows(m, k) if v.seed else 0, "config"
    if plan is None and layout is None and seed is None:
        v, how = picker(device_index).pick(b, q, m, d, k, sms)
        if v is not None:
            return v.plan(b, q, m, d, k, sms), planner.seed_rows(m, k) if v.seed else 0, how
    p, rows = plans(b, q, m, d, k, layout, sms, seed)
    if plan is not None:
        p, rows = plan, rows if seed or (seed is None and plan.lists >= planner.SEED_MIN_LISTS) else 0
    return p, rows, "forced" if (plan or layout or seed is not None) else "planner (cost model)"


def explain(b, q, m, d, k, dtype=torch.bfloat16, device_index=None):
    """How a search of these sizes would run (no GPU work): {"path", "variant", "how", "splits", "seed_rows"}."""
    if k > planner.MAX_K:
        return {"path": "torch (k > %d)" % planner.MAX_K, "variant": None, "how": "k", "splits": 0, "seed_rows": 0}
    rank_d, _ = rank_shape(d, dtype)
    p, rows, how = choose(b, q, m, rank_d, k, device_index)
    return {"path": "kernels", "variant": variants.name_of(p, bool(rows)), "how": how, "splits": p.splits,
            "seed_rows": rows}


def time_search(run, reps):
    """Milliseconds per call of `run` (a search), back to back, by CUDA events after two warm-up calls (the first
    builds and prepares its launches, the second captures its graph)."""
    run()
    run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def autotuned(q3, m, k):
    """Whether this device already has a variant measured for the exact shape of searching M rows for q3 at k."""
    b, nq, d = q3.shape
    return (b, nq, m, rank_shape(d, q3.dtype)[0], k) in picker(q3.device.index).exact


def autotune(q3, db, k, exclude_self=False, index_dtype=torch.int32, top=4, reps=5):
    """Time the `top` best-ranked variants (Picker.ranked) on this search, remember the fastest for its exact
    shape on this device; its name.

    The winner is kept for this process and written to the user's tuning database (compiler/locations.py's
    state directory), which later processes on a GPU of the same name read. k past the register lists has
    no variants: ValueError.
    """
    if k > planner.MAX_K:
        raise ValueError("autotune picks among kernel variants, which hold k <= %d; k=%d runs on the exact torch path"
                         % (planner.MAX_K, k))
    b, nq, d = q3.shape
    m = db.shape[1]
    index = q3.device.index
    rank_d, _ = rank_shape(d, q3.dtype)
    pick = picker(index)
    dist = torch.empty((b, nq, k), dtype=torch.float32, device=q3.device)
    idx = torch.empty((b, nq, k), dtype=index_dtype, device=q3.device)
    times = {}
    for v in pick.ranked(b, nq, m, rank_d, k, planner.device_sms(index))[:top]:
        try:
            times[v.name] = time_search(lambda v=v: search_into(q3, db, k, exclude_self, dist, idx, config=v), reps)
        except RuntimeError:  # a variant that cannot be built or loaded here is no candidate
            continue
    if not times:
        raise RuntimeError("autotune: no variant of this search (B=%d, Q=%d, M=%d, D=%d, k=%d) could be built here"
                           % (b, nq, m, d, k))
    best = variants.BY_NAME[min(times, key=times.get)]
    pick.remember(b, nq, m, rank_d, k, best)
    db.forget()  # searches prepared before now run the previous choice
    _save_user_entry(torch.cuda.get_device_name(index), {"B": b, "Q": nq, "M": m, "D": rank_d, "k": k}, best, times)
    return best.name


class _Score:
    """One prepared score kernel and the workspace it writes; with many partial lists per query, the fan-in
    after it (plan.fanin_lists) and the fewer lists it leaves: `lists_v`, `lists_i` are what the merge reads."""

    def __init__(self, p, q_rank, rank, col, k, metric, exclude_self, seed=None):
        b, nq = q_rank.shape[0], q_rank.shape[1]
        worst = -math.inf if schedules.largest(metric) else math.inf
        self.part_v, self.part_i = workspace(b, p.lists, p.lists_padded, nq, p.k, worst, q_rank.device)
        self.launch = launcher(*score_builder(p, metric, exclude_self, DTYPES[q_rank.dtype], seeded=seed is not None))
        tensors = dict(q=q_rank, x=rank, part_v=self.part_v, part_i=self.part_i)
        if col is not None:
            tensors["col"] = col
        if seed is not None:
            tensors["seed"] = seed
        self.prepared = self.launch.prepare(tensors, symbols={"S": p.splits, "T": p.tiles})
        self.lists_v, self.lists_i = self.part_v, self.part_i
        self.fanin = None
        fanned = planner.fanin_lists(p.lists_padded)
        if fanned:
            self.lists_v, self.lists_i = workspace(b, p.lists_padded, fanned, nq, p.k, worst, q_rank.device, "fanin")
            self.fanin = launcher(*fanin_builder(p.k, metric))
            self.fanin_prepared = self.fanin.prepare(dict(part_v=self.part_v, part_i=self.part_i, out_v=self.lists_v,
                                                          out_i=self.lists_i))

    def run(self, stream):
        self.launch.launch_on(self.prepared, stream)
        if self.fanin is not None:
            self.fanin.launch_on(self.fanin_prepared, stream)



class RoundingSlack:
    """A sampled k-th score of each query loosened by what rounding in another summation order could change it by
    (wide_select.rounding_slack: a |q| |x| + b |x|^2, or a |q| for cosine), toward the metric's worse side; the
    seeding bound of both the k <= 32 path (Call) and the wide-k one (widek.WideCall). Its buffers stay put, so
    a CUDA graph can capture `loosen`."""

    def __init__(self, db, q_rank):
        b, nq, d = q_rank.shape
        a, b2 = wide.rounding_slack(db.metric, d)
        sign = -1.0 if schedules.largest(db.metric) else 1.0
        self.metric, self.qx, self.xx = db.metric, sign * a, sign * b2
        self.x_norm = db.max_norm()
        self.q_norm = torch.empty((b, nq), dtype=torch.float32, device=q_rank.device)

    def loosen(self, kth, q_rank, out):
        """out [B, Q] = kth loosened for the queries q_rank [B, Q, D]; returns out."""
        torch.linalg.vector_norm(q_rank, dim=-1, dtype=torch.float32, out=self.q_norm)
        if self.metric == "cos":
            return torch.add(kth, self.q_norm, alpha=self.qx, out=out)
        torch.addcmul(kth, self.q_norm, self.x_norm, value=self.qx, out=out)
        if self.xx:
            out.addcmul_(self.x_norm, self.x_norm, value=self.xx)
        return out


class Call:
    """The prepared kernels and buffers of searches of `db` for queries like q_rank (same address and shape)."""

    def __init__(self, q_rank, q_rows, db, k, exclude_self, dist, idx, layout=None, plan=None, seed=None, config=None):
        b, nq, d = q_rank.shape
        self.device_index = q_rank.device.index
        self.k, self.metric = k, db.metric
        sms = planner.device_sms(self.device_index)
        p, rows, self.how = choose(b, nq, db.shape[1], d, k, self.device_index, layout, plan, seed, config)
        self.plan, self.seed_rows = p, rows
        self.seed = None
        self.graph, self.runs = None, 0
        self.staged = None  # queries the kernels cannot read in place: their rows' buffers (search_into)
        if rows:
            self._prepare_seed(q_rank, db, k, exclude_self, sms)
        self.score = _Score(p, q_rank, db.rank, db.col, k, db.metric, exclude_self, self.seed)
        self.merge = launcher(*merge_builder(p.k, db.metric, db.rows.dtype, idx.dtype, single=p.single), late=("dist", "idx"))
        self.merge_prepared = self.merge.prepare(dict(q=q_rows, x=db.rows, part_v=self.score.lists_v,
                                                      part_i=self.score.lists_i, dist=dist, idx=idx))

    def _prepare_seed(self, q_rank, db, k, exclude_self, sms):
        """Pass 1: a bound on each query's k-th score from the database's first rows (plan.seed_plan)."""
        b, nq, d = q_rank.shape
        sp, self.seed_rows = planner.seed_plan(b, nq, db.shape[1], d, k, sms, exclude_self)
        # The minima form scores the first rows of the database its ranges cover; the k best form a sample as long.
        rank, col = (db.rank, db.col) if sp.kwargs.get("minima") else db.sample(self.seed_rows)
        self.seed_score = _Score(sp, q_rank, rank, col, k, db.metric, exclude_self)
        dev = q_rank.device
        # Every buffer a prepared launch points at is held here: a prepared launch keeps addresses, not tensors.
        self.seed_vals = torch.empty((b, nq, k), dtype=torch.float32, device=dev)
        self.seed_idx = torch.empty((b, nq, k), dtype=torch.int32, device=dev)
        self.seed_merge = launcher(*merge_builder(sp.k, db.metric, q_rank.dtype, torch.int32, rescore=False, single=sp.single))
        self.seed_merge_prepared = self.seed_merge.prepare(dict(q=q_rank, x=rank, part_v=self.seed_score.lists_v,
                                                                part_i=self.seed_score.lists_i, dist=self.seed_vals,
                                                                idx=self.seed_idx))
        self.slack = RoundingSlack(db, q_rank)
        self.seed = torch.empty((b, nq), dtype=torch.float32, device=dev)

    def _bound(self, q_rank):
        """seed = the sample's k-th score loosened by what rounding in another summation order could change it by."""
        self.slack.loosen(self.seed_vals[..., self.k - 1], q_rank, self.seed)

    def _before_merge(self, q_rank, pre):
        stream = raw_stream(self.device_index)
        if pre is not None:
            pre()
        if self.seed is not None:
            self.seed_score.run(stream)
            self.seed_merge.launch_on(self.seed_merge_prepared, stream)
            self._bound(q_rank)
        self.score.run(stream)

    def _capture(self, q_rank, pre):
        """A CUDA graph of everything before the merge (the merge's outputs are the caller's, fresh per call)."""
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                self._before_merge(q_rank, pre)
        except Exception:  # noqa: BLE001  (not capturable here: the eager launches stay)
            return None
        return graph

    def run(self, q_rank, dist, idx, pre=None):
        """Search for q_rank (the queries the Call was prepared on, or a tensor at their address and shape).

        `pre` (the caller's work before the search, e.g. refreshing the database's norms) runs first.
        A Call of more than one launch before its merge (a seeding pass, `pre`) captures them in a CUDA
        graph on its second run and replays it after (a few microseconds of host time instead of
        tens per torch op); under the caller's own graph capture it launches them as they are.
        """
        if GRAPHS and self.graph is None and (self.seed is not None or pre is not None) and not _capturing():
            self.runs += 1
            if self.runs == 2:
                self.graph = self._capture(q_rank, pre) or False
        if self.graph and not _capturing():
            self.graph.replay()
        else:
            self._before_merge(q_rank, pre)
        self.merge.launch(self.merge_prepared, self.device_index, dist=dist, idx=idx)
        return dist, idx

    def needs_queries(self):
        """Whether a run reads the queries tensor itself (staged rows, or a seeding pass not yet in a graph): such
        runs go through `run`; the others may go through `launch_into`."""
        return self.staged is not None or (self.seed is not None and not self.graph)

    def launch_into(self, dist_ptr, idx_ptr):
        """`run` on the per-call path of a Call that needs no queries tensor (needs_queries() False, no capture
        under way): its launches only, the merge's into the caller's fresh dist and idx (given by address,
        allocated as prepared)."""
        stream = raw_stream(self.device_index)
        if self.graph:
            self.graph.replay()
        else:
            self.score.run(stream)
        self.merge.launch_on(self.merge_prepared, stream, dist_ptr, idx_ptr)


def _call_key(q3, k, exclude_self, index_dtype, layout=None, plan=None, seed=None, config=None):
    return (q3.data_ptr(), tuple(q3.shape), q3.dtype, k, exclude_self, index_dtype, layout, plan, seed, config)


def prepared_call(q3, db, k, exclude_self, index_dtype, config=None):
    """The Call search_into prepared for these queries (a tensor at q3's address and shape) on `db`, or None (k on
    the torch path, or no search yet): what a caller's per-call path launches (Call.launch_into)."""
    return db.calls.get(_call_key(q3, k, exclude_self, index_dtype, config=config))


_warned = set()


def _warn_fallback(error):
    text = str(error)[:300]
    if text not in _warned:
        _warned.add(text)
        warnings.warn("knn: a kernel could not be built or loaded (%s); searching on the exact torch path" % text,
                      RuntimeWarning, stacklevel=3)


def _wide_search(q3, db, k, exclude_self, dist, idx):
    """k past the register lists: the wide-k kernels for k <= wide.MAX_K (kernels/knn/widek.py), else (or when
    they cannot be built or loaded here, or under CUDA graph capture: their overflow check reads the device) the
    exact torch path."""
    if k <= wide.MAX_K and q3.is_cuda and not _capturing():
        from kernels.knn import widek  # (widek imports this module)

        try:
            return widek.search_into(q3, db, k, exclude_self, dist, idx)
        except RuntimeError as e:
            _warn_fallback(e)
    return torch_path.search_into(knn_rows.rescoring_rows(q3), db, k, exclude_self, dist, idx)


def search_into(q3, db, k, exclude_self, dist, idx, layout=None, plan=None, seed=None, pre=None, config=None):
    """Write the k best of database `db` for [B, Q, D] queries q3 into dist [B, Q, k] f32 and idx [B, Q, k].

    `layout` forces "rows" or "cols"; `plan` (a plan.Plan) replaces the planner's choice of the full
    pass (a pass with many partial lists per query is still seeded); `seed` True or False forces
    the seeding pass on or off; `config` forces a variant (kernels/knn/variants.py); `pre` runs before
    the search (Call.run). Otherwise the tuning database, then the planner, choose (`choose`).
    """
    b, nq = q3.shape[0], q3.shape[1]
    if nq == 0:
        return dist, idx
    if k > planner.MAX_K:  # past the register lists: the wide-k kernels (select.py), past them the exact torch path
        if pre is not None:
            pre()
        return _wide_search(q3, db, k, exclude_self, dist, idx)
    key = _call_key(q3, k, exclude_self, idx.dtype, layout, plan, seed, config)
    call = db.calls.get(key)
    if call is None:
        staged = None if knn_rows.in_place(q3) else knn_rows.Rows(q3, "q")  # the padded or split queries' buffers
        q_rank, q_rows = (q3, q3) if staged is None else (staged.rank, staged.rows)
        if len(db.calls) >= MAX_CALLS:
            db.forget()
        try:
            call = Call(q_rank, q_rows, db, k, exclude_self, dist, idx, layout, plan, seed, config)
        except RuntimeError as e:  # a kernel that cannot be built or loaded here: the exact torch path, said once
            if config is not None or plan is not None:
                raise  # a forced variant that cannot run is the caller's error
            _warn_fallback(e)
            if pre is not None:
                pre()
            return torch_path.search_into(knn_rows.rescoring_rows(q3), db, k, exclude_self, dist, idx)
        db.calls[key] = call
        call.staged = staged
    elif call.staged is not None:
        call.staged.refill(q3)
    return call.run(q3 if call.staged is None else call.staged.rank, dist, idx, pre)
