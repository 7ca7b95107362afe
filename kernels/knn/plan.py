"""How the KNN API runs a problem: which score schedule, its parameters, and the database split.

No GPU: which schedule parameters fit is the compiler's answer about the candidate
kernel itself (compiler/targets/fits.py: its shared memory as lowering lays it out and
its roles' registers, what the verifier checks), and a small cost model picks the split
of the database into ranges so the persistent blocks end together.

Two layouts (kernels/knn/schedules.py):
- rows: queries on the wgmma M side, 64 per warpgroup; `row_groups` warpgroups of
  different queries and `interleave` classes taking alternate tiles of a range.
- cols: database rows on the M side, up to 16 queries on N (few queries).
"""

import dataclasses
import functools

from compiler.targets import database, fits
from kernels.knn import schedules

SMS = database.device_for("sm_90a").sms  # the default device's; the planner reads the device's count when it has one
MAX_K = 32  # register lists: k values and k indices per list and thread, next to a score tile
MAX_D = 1024
MAX_FP32_D = 336  # fp32 inputs rank through three bf16 terms: 3 D feature columns
MAX_STAGES = 8  # the deepest ring a score kernel is given (more bytes in flight per SM for search)


@dataclasses.dataclass(frozen=True)
class Plan:
    layout: str  # "rows" or "cols"
    params: tuple  # sorted (name, value) pairs: the schedule builder's keyword arguments
    splits: int  # S: database ranges
    tiles: int  # T: tiles per range
    lists: int  # partial lists per query: S * lists per range
    lists_padded: int  # P of the workspace: one list as it is (the single-list merge), more rounded up to whole warps

    @property
    def single(self):
        """Whether each query has one partial list (the merge then only rescores and sorts it)."""
        return self.lists == 1

    @property
    def kwargs(self):
        return dict(self.params)

    @property
    def k(self):
        """Entries per partial list (list_k of the problem's k): the workspace's, the fan-in's and the merge's."""
        return self.kwargs["k"]


# The kernel set is finite: a score kernel is built per feature tile width and list length of these ladders, not per
# shape. TMA zero-fills the features past D in a tile (rows of D % 8 == 0 are read in place), and lists of the next
# length up hold the k best first (the merge writes the first k: schedules.merge's KO), so every answer stays exact.
TILE_WIDTHS = (64, 128, 192, 256, 384, 512, 768, 1024)  # wide slabs: 384 in 192s, the rest in 256s (slab_width)
LIST_KS = (1, 2, 4, 8, 10, 16, 24, 32)  # 10: the most asked-for k, whose tuned variants fit no longer lists


def tile_width(d):
    """Feature tile width of a score kernel for D (padded) features: the narrowest of TILE_WIDTHS holding them."""
    for w in TILE_WIDTHS:
        if d <= w:
            return w
    raise ValueError("D=%d is past the widest feature tile (%d)" % (d, TILE_WIDTHS[-1]))


def list_k(k):
    """Entries per list of the kernels for k neighbours: the shortest of LIST_KS holding k."""
    for c in LIST_KS:
        if k <= c:
            return c
    raise ValueError("k=%d is past the register lists (%d)" % (k, MAX_K))


@functools.lru_cache(maxsize=None)
def fits_sm90a(layout, params):
    """Whether the score kernel of `layout` ("rows" or "cols") with `params` (sorted (name, value) pairs of its
    builder's keywords) fits sm_90a's block, as the compiler measures the kernel (compiler/targets/fits.py).
    Built for the l2 metric: its norms' ring and rows are the most any metric holds."""
    build = schedules.rows_sm90a if layout == "rows" else schedules.cols_sm90a
    return fits.fits(build(metric="l2", **dict(params)))


def _fits(layout, **params):
    return fits_sm90a(layout, tuple(sorted(params.items())))


def slab_width(d):
    """Width of the D slabs wide rows stream through the ring in: the widest of 256, 192, 128, 64 dividing d."""
    return d if d <= 256 else max(c for c in (256, 192, 128, 64) if d % c == 0)


def rings(q, d, k, block_n, row_groups, interleave, seeded=False, minima=False):
    """(stages, q_stages) of the deepest ring with which the rows kernel fits, or None.

    One block of queries (every item has the same queries) needs one query buffer; interleaved
    classes need a depth that is a multiple of their turns (schedules.stage_multiple). When the
    shallowest ring does not fit, none does: deeper rings only add shared memory, and the
    registers do not depend on the ring.
    """
    dk = slab_width(d)
    step = schedules.stage_multiple(interleave, d // dk)
    depths = [s for s in range(MAX_STAGES, 1, -1) if s % step == 0]
    kernel = dict(d=d, dk=dk, block_n=block_n, row_groups=row_groups, interleave=interleave, k=k, seeded=seeded)
    if minima:
        kernel["minima"] = True
    if not depths or not _fits("rows", stages=depths[-1], q_stages=1, **kernel):
        return None
    q_options = (1,) if q <= 64 * row_groups else (2, 1)
    for q_stages in q_options:
        for stages in depths:
            if _fits("rows", stages=stages, q_stages=q_stages, **kernel):
                return stages, q_stages
    return None


def rows_params(q, k, d, row_groups=None, interleave=None, block_n=None, seeded=False, minima=False):
    """Schedule parameters of the rows layout for Q queries, k neighbours, tile width d (or None).

    Free choices (row groups, interleave classes, block_n) go to the most consumer warpgroups
    whose lists fit their registers, then the widest tiles; fixing them checks that they fit.
    `seeded`: for the kernel whose lists start at a seed (which holds the seeds in registers too);
    `minima`: for the seeding pass's form (which holds a best per accumulator element too).
    """
    best = None
    for bn in (block_n,) if block_n else (128, 64):
        for consumers in (4, 3, 2, 1):
            r = row_groups or max(1, min(consumers, -(-q // 64)))
            c = interleave or consumers // r
            if r * c != consumers and (row_groups or interleave) is None:
                c = consumers // r
            if not 0 < r * c <= 4:
                continue
            if c > 1 and bn == 128 and block_n is None:
                # The planner's own choice interleaves classes on 64-row tiles only, as before their fault was
                # found: against 128-row ones with the same classes it was faster at Q 16, M 4M, D 64, k 16 (0.52
                # ms vs 0.85) and slower at Q 64, M 20M, D 32, k 5 (0.95 vs 0.79; H200, knn_breakdown_h200.log).
                # Tuned buckets and config= may name rows_r1_c2_n128.
                continue
            fit = rings(q, d, k, bn, r, c, seeded, minima)
            if fit is None:
                continue
            cand = dict(d=d, dk=slab_width(d), block_n=bn, stages=fit[0], q_stages=fit[1], row_groups=r, interleave=c, k=k)
            if minima:
                cand["minima"] = True
            key = (r * c, bn)  # more warpgroups, then wider tiles (fewer wgmma issues per score)
            if best is None or key > best[0]:
                best = (key, cand)
    if best is None:
        if row_groups or interleave or block_n:
            return None
        raise ValueError("no rows schedule fits k=%d at feature width %d" % (k, d))
    return best[1]


def cols_params(k, d, seeded=False):
    """Schedule parameters of the cols layout (up to 16 queries), or None when its lists do not fit."""
    for consumers in (2, 1):
        if not _fits("cols", d=d, block_q=16, stages=2, consumers=consumers, k=k, seeded=seeded):
            continue  # the shallowest ring does not fit: no ring does
        for stages in (6, 4, 3, 2):
            params = dict(d=d, block_q=16, stages=stages, consumers=consumers, k=k)
            if _fits("cols", seeded=seeded, **params):
                return params
    return None


def splits_for(work_items, n_tiles, granule, sms, warm=0.0):
    """(S, T): ranges of T tiles (T a multiple of `granule`) so that the persistent blocks end together.

    Estimated time is the busiest block's tiles (rounds of items x tiles per item) plus a
    per-item cost: loading its queries and writing its lists (about two tiles' worth), and
    `warm` tiles' worth of filling fresh lists (every range starts its lists empty, and its
    first candidates all insert; seeded lists do not).
    """
    best = None
    for s in range(1, max(1, min(n_tiles, 8 * sms)) + 1):
        t = -(-n_tiles // s)
        t = -(-t // granule) * granule
        s_used = -(-n_tiles // t)
        rounds = -(-work_items * s_used // sms)
        cost = rounds * (t / granule + 2.0 + warm)
        if best is None or cost < best[0] - 1e-9:
            best = (cost, s_used, t)
    return best[1], best[2]


# Per-item cost of warming fresh lists up, in tiles per list entry (measured on the H200: splitting
# an all-pairs problem nine ways without seeds doubled its time).
WARM_TILES_PER_K = 4.0
# Seeding (a first pass over a sample of the database bounds each query's k-th score) pays when
# the database is split into at least this many partial lists per query.
SEED_MIN_LISTS = 16
# The sample is the first M / SEED_SAMPLE rows (at least SEED_MIN_ROWS). A smaller sample costs less to score but
# bounds the k-th score more loosely, so the full pass inserts more: on the H200 at Q 128, M 10M, D 128, k 10 the
# full pass took 768 to 784 us after a sample of M / 64, 795 to 805 after M / 128, 924 after M / 1024 (the k best
# form of the seeding pass, knn_breakdown_h200.json runs 1 and 2). With the minima form the whole search took 0.872
# to 0.893 ms cold at M / 64, 0.876 at M / 128, 0.899 at M / 32 and 1.016 at M / 1024 (run 4).
SEED_SAMPLE = 64
SEED_MIN_ROWS = 8192
# The seeding pass's rows layout (row groups, interleave classes, block_n; None: the planner's choice). 64-row tiles:
# each thread inserts half the bests 128-row ones leave it (on the H200 at the headline, 38 + 15 us of seeding
# score kernel and merge against 44 + 14).
SEED_ROWS = (None, None, 64)


def seed_rows(m, k):
    """Rows of the database sample a seeding pass scores, or 0 when the database is too small to seed."""
    rows = max(m // SEED_SAMPLE, SEED_MIN_ROWS, 4 * k)
    return rows if 8 * rows <= m else 0


@functools.lru_cache(maxsize=4096)
def seed_plan(b, q, m, d, k, sms=SMS, exclude_self=False):
    """(Plan, rows) of the seeding pass of a search of M database rows: it scores the first `rows` of them.

    The minima form (schedules.rows_sm90a: a best per accumulator element, the lists filled once per
    range) over exactly the rows its ranges cover, about seed_rows(m, k): it costs about what reading
    them does, where the k best form inserts nearly every candidate of its few tiles per range (on the
    H200 at Q 128, M 10M: 38 to 40 us against 53 to 77). Self-KNN excludes each query's own row, which
    a best of a group cannot: it keeps the k best form over seed_rows(m, k) rows, as does a database
    the covered rows would overrun. (None, 0) when the database is too small to seed.
    """
    rows = seed_rows(m, k)
    if not rows:
        return None, 0
    if not exclude_self:
        p = plan(b, q, rows, d, k, layout="rows", sms=sms, rows=SEED_ROWS, minima=True)
        covered = p.splits * p.tiles * p.kwargs["block_n"]
        if covered <= m:
            return p, covered
    return plan(b, q, rows, d, k, sms=sms), rows


@functools.lru_cache(maxsize=4096)
def plan(b, q, m, d, k, layout=None, sms=SMS, seeded=False, rows=None, minima=False):
    """The Plan for B problems of Q queries and M database rows of D (padded) features, k neighbours
    (its kernels hold lists of list_k(k) entries, over tiles of tile_width(D) features).

    `seeded` plans for lists that start at a bound on each query's k-th score (no warm-up cost
    per range). `rows` (row groups, interleave, block_n) fixes the rows layout's free choices
    (ValueError when they do not fit). `minima` plans the seeding pass's form of the rows kernel (it
    inserts only at the end of a range: no warm-up cost). Cached: a call's planning costs a dictionary lookup.
    """
    k = list_k(k)
    warm = 0.0 if seeded or minima else WARM_TILES_PER_K * k
    width = tile_width(d)
    cols = cols_params(k, width, seeded) if width <= 256 else None
    if layout is None:
        layout = "cols" if cols is not None and q <= 16 else "rows"
    if layout == "cols":
        if cols is None:
            raise ValueError("the cols layout does not fit k=%d at feature width %d" % (k, width))
        params = cols
        block_m = 64 * params["consumers"]
        s, t = splits_for(b * -(-q // 16), -(-m // block_m), 1, sms, warm)
        lists = s * 4 * params["consumers"]
    else:
        params = rows_params(q, k, width, *(rows or ()), seeded=seeded, minima=minima)
        if params is None:
            raise ValueError("rows layout %s does not fit k=%d at feature width %d" % (rows, k, width))
        block_q = 64 * params["row_groups"]
        s, t = splits_for(b * -(-q // block_q), -(-m // params["block_n"]), params["interleave"], sms, warm)
        lists = s * params["interleave"]
    return Plan(layout, tuple(sorted(params.items())), s, t, lists, lists if lists == 1 else -(-lists // 32) * 32)


# A merge reads a query's partial lists 32 at a time, one round after another (about 2 us a round on the H200); from
# this many rounds on, a fan-in kernel first merges each 32 of them into one (all in parallel), so the merge reads
# one round: at Q 128 and 288 lists, 21.7 us for both against 28.1 for the merge alone (cold; docs/gpu_runs.md).
FANIN_MIN_ROUNDS = 3


def fanin_lists(lists_padded):
    """Lists (padded to whole warps) a fan-in leaves of `lists_padded` partial lists per query, or 0 for none."""
    groups = lists_padded // 32
    if groups < FANIN_MIN_ROUNDS:
        return 0
    return -(-groups // 32) * 32


@functools.lru_cache(maxsize=None)
def device_sms(device):
    """Multiprocessors of a CUDA device (the planner's SMS default when none is given)."""
    try:
        import torch

        return torch.cuda.get_device_properties(device).multi_processor_count
    except Exception:  # noqa: BLE001  (no CUDA: plan for the H200)
        return SMS

