"""KNN schedules in CAKE IR: score tiles on the tensor cores, running top-k lists in registers.

Exact k nearest neighbours is a GEMM whose epilogue keeps, per query, the k best scores
seen so far. The database is split into S ranges of T tiles; a score kernel writes one
sorted partial list per (query, range, list owner) and the merge kernel combines them,
recomputes the k winners' scores exactly in f32 from the rows and sorts them:

    score kernel  part_v, part_i [B, P, Q, k]    (P partial lists per query)
    merge kernel  dist, idx      [B, Q, k]

Ranking scores (smaller is better for l2, larger for ip and cos):

    l2   x_sq[j] - 2 q.x[j]         x_sq = ||x[j]||^2   (||q - x[j]||^2 less ||q||^2)
    ip   q.x[j]
    cos  q.x[j] * x_inv[j]          x_inv = 1 / ||x[j]|| (0 for a zero row)

Inside a score kernel every thread inserts its own candidates into its own lists
(TopK scope thread, fully unrolled, groups skipped by a warp vote against the best
k-th among the lanes sharing the list, or for seeded lists each thread's own k-th) and the lanes sharing a list merge once at the
end of a range (a merge-only TopK). Tiles past the database's end are zero-filled by
TMA and skipped by the TopK's index limit.

- rows_sm90a (the tuned one): persistent; queries on the wgmma M side, 64 per consumer
  warpgroup; R row groups x C interleave classes of warpgroups (class c takes tiles
  j = c mod C of a range, so small Q still keeps several warpgroups busy); TMA ring of
  database tiles (and their norms), chunked along D for wide features.
- cols_sm90a (small Q): database rows on the wgmma M side, up to 16 queries on N;
  per-column lists; each warp's merged lists are one partial list.
- rows_sm80: cp.async ring + mma.sync, one warp per 16 queries, a block per
  (query block, range, batch).
- rows_sm100a: tcgen05 into tensor memory, one query per thread (lists need no merge).
- merge: one warp per query; lanes insert partial lists, a warp merge, Rescore, sort.
- merge_fanin: many partial lists into fewer before the merge, a warp per 32 of a query's lists.
"""

import contextlib
import math

from compiler.ir.builder import KernelBuilder, block
from compiler.ir.expr import ceil_div
from compiler.targets import registers
from kernels.gemm.idioms import cp_async_ring, init_barriers, swizzle_for

INF = math.inf
METRICS = ("l2", "ip", "cos")
ROW_DTYPES = ("bf16", "f16", "f32")  # what the merge rescores from
MAX_M = (1 << 31) - (1 << 24)  # leaves room for the last range's tile indices in int32


def largest(metric):
    """Whether a metric keeps the largest scores."""
    return metric != "l2"


def _check(metric, k, dtype):
    if metric not in METRICS:
        raise ValueError("metric must be one of %s, got %r" % (METRICS, metric))
    if not 1 <= k <= 64:
        raise ValueError("k must be in [1, 64] for register lists, got %d" % k)
    if dtype not in ("bf16", "f16"):
        raise ValueError("score kernels read bf16 or f16 tiles, got %r" % dtype)


def _score_contract(kb, d, k, metric, exclude_self, lists_per_range, dtype, seeded=False, minima=0):
    """Symbols, contract and params shared by the score kernels; returns their handles (and the seed's).

    `minima`: the fewest rows the minima form scores (one tile per interleave class), which the database holds; else 0.
    """
    score = {"l2": "x_sq[b, j] - 2 q.x", "ip": "q.x", "cos": "q.x * x_inv[b, j]"}[metric]
    best = "largest" if largest(metric) else "smallest"
    norms = "; x_sq = ||x[b, j]||^2, x_inv = 1 / ||x[b, j]||"
    if minima:
        math_ = ("(part_v[b, p, i, :], part_i[b, p, i, :]) = the k %s of best_g over the row groups g of partial list p"
                 " of query i, best first, ties to the smaller g; best_g = the %s of %s over the rows j of group g, and"
                 " g is named by its first row%s" % (best, best, score, norms))
        reference = "kernels.knn.reference.group_best_lists"
    else:
        math_ = ("(part_v[b, p, i, :], part_i[b, p, i, :]) = the k %s of %s over the database rows j of partial list p"
                 " of query i, best first, ties to the smaller j%s%s" % (best, score, ", j != i" if exclude_self else "", norms)
                 + ("; lists start at (seed[b, i], -1): candidates must beat the seed, a bound on the k-th score of the"
                    " whole database (entries still at the seed have index -1)" if seeded else ""))
        reference = "kernels.knn.reference.partial_lists"
    handles = {}

    def declare():  # after the shared symbols, before the inputs (the order the kernels' ABI has)
        handles["k"] = kb.symbol("k", min=k, max=k, value=k, doc="entries per list (the kernel is specialized to it)")
        kb.contract(math=math_, reference=reference, metric="recall", tolerance=0.99)

    b, q_n, m, dd, s, t, q, x, col = _score_inputs(kb, d, metric, dtype, minima, declare)
    kk = handles["k"]
    p = kb.symbol("P", min=lists_per_range, max=1 << 20, doc="partial lists of the workspace (lists past S * %d are not "
                  "written: they keep the host's fill, the worst score and index -1, for the merge)" % lists_per_range)
    kb.require(p >= s * lists_per_range, "the workspace holds the %d partial lists of every range" % lists_per_range)
    # read_write: the kernel writes the first S * lists_per_range lists; the rest keep the host's fill.
    part_v = kb.tensor("part_v", "f32", [b, p, q_n, kk], access="read_write", doc="partial lists' scores, best first")
    part_i = kb.tensor("part_i", "i32", [b, p, q_n, kk], access="read_write", doc="partial lists' database rows")
    seed = kb.tensor("seed", "f32", [b, q_n], doc="per query: the score a candidate must beat (a bound on the k-th)") if seeded else None
    return b, q_n, m, dd, s, t, q, x, col, part_v, part_i, seed


def _score_inputs(kb, d, metric, dtype, minima=0, declare=None):
    """The symbols and input tensors every score kernel has: (B, Q, M, D, S, T, q, x, col or None); `declare` adds a
    kernel's own symbols and contract after the shared symbols."""
    b = kb.symbol("B", min=1, max=1 << 16, doc="independent problems (batch)")
    q_n = kb.symbol("Q", min=1, max=1 << 26, doc="queries per problem")
    m = kb.symbol("M", min=max(1, minima), max=MAX_M, doc="database rows per problem")
    dd = kb.symbol("D", min=8, max=d, doc="features; tiles are %d wide and TMA zero-fills the rest" % d)
    s = kb.symbol("S", min=1, max=1 << 16, doc="database ranges (splits)")
    t = kb.symbol("T", min=1, max=1 << 24, doc="tiles per range")
    if declare is not None:
        declare()
    kb.require(dd % 8 == 0, "rows of q and x start 16-byte aligned (TMA)")
    q = kb.tensor("q", dtype, [b, q_n, dd], doc="queries, features contiguous")
    x = kb.tensor("x", dtype, [b, m, dd], doc="database rows, features contiguous")
    col = None
    if metric != "ip":
        mp = kb.symbol("MP", min=max(4, -(-minima // 4) * 4), max=MAX_M,
                       doc="length of col's rows: M rounded up to a multiple of 4")
        kb.require(mp % 4 == 0, "rows of col start 16-byte aligned (TMA)")
        kb.require((mp >= m) & (mp < m + 4), "MP is M rounded up to a multiple of 4")
        col = kb.tensor("col", "f32", [b, mp], doc="per database row: ||x||^2 (l2) or 1 / ||x|| (cos); 0 past M")
    return b, q_n, m, dd, s, t, q, x, col


def _collect_contract(kb, d, metric, exclude_self, dtype):
    """A filter kernel's symbols and params (kernels/knn/wide_select.py): the score kernels' inputs, a bound per query,
    and the candidate buffers it appends to; returns (B, Q, M, D, S, T, q, x, col, cand_v, cand_i, count, bound)."""
    best = "smaller" if not largest(metric) else "larger"
    score = {"l2": "x_sq[b, j] - 2 q.x", "ip": "q.x", "cos": "q.x * x_inv[b, j]"}[metric]
    b, q_n, m, dd, s, t, q, x, col = _score_inputs(kb, d, metric, dtype, declare=lambda: kb.contract(
        math="count[b, i] += the number of database rows j%s whose score %s is %s than bound[b, i]; each such (score, j)"
        " is in cand_v/cand_i[b, i, :] when count[b, i] <= C (in no order)" % (" != i" if exclude_self else "", score, best),
        reference="kernels.knn.reference.collected", metric="recall", tolerance=0.99))
    c = kb.symbol("C", min=1, max=1 << 20, doc="candidate slots per query")
    cand_v = kb.tensor("cand_v", "f32", [b, q_n, c], access="write", doc="appended candidates' ranking scores")
    cand_i = kb.tensor("cand_i", "i32", [b, q_n, c], access="write", doc="appended candidates' database rows")
    count = kb.tensor("count", "i32", [b, q_n], access="read_write",
                      doc="candidates appended per query (the host zeroes it; past C only the count grows)")
    bound = kb.tensor("bound", "f32", [b, q_n], doc="per query: the score a candidate must beat (a bound on the k-th)")
    return b, q_n, m, dd, s, t, q, x, col, cand_v, cand_i, count, bound


def stage_multiple(interleave, chunks):
    """What the ring depth of a rows kernel with `interleave` classes and `chunks` slabs per tile is a multiple of.

    A wait by parity tells its round from the slot's round two laps back only once the round one
    lap back is known done. Interleaved classes take turns of `chunks` rounds, so the round a lap
    before one of a class's rounds is that class's own (waited for, so done) only when the depth is
    a multiple of interleave * chunks; otherwise it is another class's, still in flight when async
    loads complete out of order, and the wait passes at once on the stale phase (the verifier's
    CAKE-SYNC-008). A depth of 5 with two classes faulted on the H200 (unspecified launch failure at
    Q = 128, M = 10M on 128-row tiles).
    """
    return interleave * chunks if interleave > 1 else 1


def register_split(consumers):
    """(producer, consumer) setmaxnreg budgets: the producer warpgroup hands its share to the consumers.

    setmaxnreg moves registers within the block's launch allocation, so the budgets times
    their threads must fit it (compiler/targets/registers.py).
    """
    # The persistent walk's index arithmetic spills below 40.
    return registers.producer_consumer_split("sm_90a", 128, 40, 128 * consumers, cap=240)


def _start_lists(r, metric, best_v, best_i, seed, start, origin):
    """Empty lists: the worst score, or the query's seed (a bound on its k-th score), with index -1."""
    if seed is None:
        r.fill(best_v.all, -INF if largest(metric) else INF)
    else:
        r.copy(seed[origin], start.all)
        r.ew("copy", best_v.all, start.all)
    r.fill(best_i.all, -1)


@contextlib.contextmanager
def _slabs(r, chunks):
    """A loop over a tile's D slabs, yielding the slab; no loop (slab 0) when the tile is one slab."""
    if chunks == 1:
        yield 0
        return
    with r.loop("c", 0, chunks) as c:
        yield c


def _epilogue(r, metric, acc, col_tile):
    """Turn a q.x tile into the ranking score."""
    if metric == "l2":
        r.ew("fma", acc, acc, -2.0, col_tile)
    elif metric == "cos":
        r.ew("mul", acc, acc, col_tile)


def rows_sm90a(d=128, dk=None, block_n=64, stages=5, q_stages=2, row_groups=4, interleave=1, k=10, metric="l2",
               exclude_self=False, seeded=False, minima=False, dtype="bf16", collect=False, name=None):
    """Persistent rows-layout score kernel: queries on wgmma M, database tiles through a TMA ring.

    Work items are (problem, query block of 64 * row_groups, range); each of the
    row_groups * interleave consumer warpgroups owns 64 queries and the tiles
    j = class (mod interleave) of the item's range, and writes one partial list per
    query: P = S * interleave. The ring streams [block_n, dk] slabs (d / dk per tile,
    accumulated by wgmma), so resident queries of width d and the ring fit shared memory.

    `minima` is the seeding pass's form (a bound, not the k best): each accumulator element keeps
    the best score of its column over the warpgroup's tiles of a range (a min or max per element,
    no insertion), and only those bests enter the lists at the end of the range. The rows of one
    column position form a group, groups are disjoint, so a list's k entries are reached by k
    distinct rows and the merged k-th entry bounds each query's k-th score; with many more groups
    than k (S * interleave * block_n per query) it is the k-th score of the rows scored but for
    the rare group holding two of the k best. It scores the first S * T * block_n rows, which
    must lie within the database (no zero-filled row enters a best), and excludes no row.

    `collect` is the filter form of a wide-k search (kernels/knn/wide_select.py): no lists; every candidate
    that beats its query's bound is appended to the query's candidate buffer (TopKCollect), k unused.
    """
    _check(metric, k, dtype)
    if minima and (exclude_self or seeded):
        raise ValueError("the minima form (a seeding pass) neither excludes rows nor starts at a seed")
    if collect and (minima or seeded):
        raise ValueError("the collect form reads a bound per query: neither the minima form nor seeded lists")
    dk = dk or d
    if d % dk or dk % 64 and dk != d:
        raise ValueError("d must be a multiple of the slab width dk (a multiple of 64)")
    consumers = row_groups * interleave
    block_q = 64 * row_groups
    chunks = d // dk
    if stages < 1 or stages % stage_multiple(interleave, chunks):
        raise ValueError("interleave %d with %d slabs per tile needs a ring depth that is a multiple of %d, got %d"
                         % (interleave, chunks, stage_multiple(interleave, chunks), stages))
    name = name or ("knn_filter_sm90a" if collect else "knn_rows_sm90a")
    kb = KernelBuilder(name, target="sm_90a")
    if collect:
        b, q_n, m, dd, s, t, q, x, col, part_v, part_i, count, seed = _collect_contract(kb, d, metric, exclude_self, dtype)
    else:
        b, q_n, m, dd, s, t, q, x, col, part_v, part_i, seed = _score_contract(
            kb, d, k, metric, exclude_self, interleave, dtype, seeded, interleave * block_n if minima else 0)
    kb.require(t % interleave == 0, "each interleave class takes the same number of tiles of a range")
    if minima:
        kb.require(s * t * block_n <= m, "the ranges lie within the database (a zero-filled row must not enter a best)")
    else:
        kb.require(s * t * block_n >= m, "the ranges cover the database")
    if exclude_self:
        kb.require(q_n == m, "self-KNN: query i is database row i")
    kb.persistent(min_blocks_per_sm=1)
    swizzle = swizzle_for(min(d, dk), dtype)
    s_q = kb.shared("sQ", dtype, [block_q, d], stages=q_stages, swizzle=swizzle)
    s_x = kb.shared("sX", dtype, [block_n, dk], stages=stages, swizzle=swizzle)
    ring = [s_x]
    s_col = None
    if col is not None:
        s_col = kb.shared("sCol", "f32", [block_n], stages=stages)
        ring.append(s_col)
    acc = kb.registers("acc", "f32", [64, block_n], layout="wgmma_acc", owner="mma")
    if not collect:
        best_v = kb.registers("best_v", "f32", [64, k], layout="wgmma_rows", owner="mma")
        best_i = kb.registers("best_i", "i32", [64, k], layout="wgmma_rows", owner="mma")
    start = kb.registers("start", "f32", [64], layout="wgmma_rows", owner="mma") if seeded or collect else None
    bests = kb.registers("bests", "f32", [64, block_n], layout="wgmma_acc", owner="mma") if minima else None
    q_bytes = kb.tile_bytes(s_q)
    slab_bytes = kb.tile_bytes(*ring)
    q_full = kb.mbarrier("q_full", arrivals=1, count=q_stages, tx_bytes=q_bytes)
    q_empty = kb.mbarrier("q_empty", arrivals=consumers, count=q_stages)
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=slab_bytes)
    empty = kb.mbarrier("empty", arrivals=row_groups, count=stages)
    wg_done = kb.named_barrier("wg_done", threads=128, count=consumers) if col is not None else None
    kb.pipeline("q_ring", q_stages, q_full, q_empty, [s_q], producer="load", consumers=["mma"])
    kb.pipeline("x_ring", stages, full, empty, ring, producer="load", consumers=["mma"])

    q_blocks = ceil_div(q_n, block_q)
    items = b * q_blocks * s

    def item_coords(item):
        return item // (q_blocks * s), (item // s) % q_blocks * block_q, item % s

    producer_regs, consumer_regs = register_split(consumers)

    with kb.role("load", "producer", warpgroups=1, registers=producer_regs) as r:
        init_barriers(r, q_full, q_empty, full, empty)
        with r.if_((r.warp == 0) & r.elected):
            with r.tiles("item", items, counter="it") as (item, it):
                bi, q0, si = item_coords(item)
                r.wait(q_empty.round(it))
                r.expect_tx(q_full.round(it), q_bytes)
                r.tma_load(q[bi, q0, 0], s_q[it % q_stages], q_full.round(it))
                with r.loop("j", 0, t) as j:
                    row0 = (si * t + j) * block_n
                    with _slabs(r, chunks) as c:
                        rnd = (it * t + j) * chunks + c if chunks > 1 else it * t + j
                        r.wait(empty.round(rnd))
                        r.expect_tx(full.round(rnd), slab_bytes)
                        r.tma_load(x[bi, row0, c * dk], s_x[rnd % stages], full.round(rnd))
                        if s_col is not None:
                            r.tma_load(col[bi, row0], s_col[rnd % stages], full.round(rnd))

    with kb.role("mma", "consumer", warpgroups=consumers, registers=consumer_regs) as r:
        r.block_sync()
        leader = (r.warp % 4 == 0) & r.elected
        # Warpgroup w scores queries of row group w % R on the tiles of class w / R (spelled simply
        # when there is one class or one group).
        group = r.warpgroup if interleave == 1 else (0 if row_groups == 1 else r.warpgroup % row_groups)
        cls = 0 if interleave == 1 else (r.warpgroup if row_groups == 1 else r.warpgroup // row_groups)
        with r.tiles("item", items, counter="it") as (item, it):
            bi, q0, si = item_coords(item)
            if collect:
                r.copy(seed[bi, q0 + group * 64], start.all)
            else:
                _start_lists(r, metric, best_v, best_i, seed, start, (bi, q0 + group * 64))
            if minima:
                r.fill(bests.all, -INF if largest(metric) else INF)
            r.wait(q_full.round(it))
            with r.loop("jj", 0, t // interleave if interleave > 1 else t) as jj:
                j = jj * interleave + cls if interleave > 1 else jj
                row0 = (si * t + j) * block_n
                with _slabs(r, chunks) as c:
                    rnd = (it * t + j) * chunks + c if chunks > 1 else it * t + j
                    r.wait(full.round(rnd))
                    qs = s_q.tile(it % q_stages, window=[(group * 64, 64), (c * dk, dk)])
                    r.mma("wgmma", qs, s_x[rnd % stages], acc.all, accumulate=c > 0 if chunks > 1 else 0)
                    r.mma_wait(0)
                    last = jj == (t // interleave if interleave > 1 else t) - 1
                    with r.if_((last & (c == chunks - 1) if chunks > 1 else last) & leader):
                        r.arrive(q_empty.round(it))  # no more wgmma reads this item's queries
                    if s_col is not None:
                        if chunks > 1:
                            with r.if_(c == chunks - 1):
                                _epilogue(r, metric, acc.all, s_col[rnd % stages])
                        else:
                            _epilogue(r, metric, acc.all, s_col[rnd % stages])
                        # Every thread's reads of this slot's norms are done, and ordered before the TMA refill
                        # (ld.shared, then an async-proxy write: CAKE-DATA-011).
                        r.fence("proxy_async")
                        r.named_sync(wg_done, index=r.warpgroup)
                    with r.if_(leader):
                        r.arrive(empty.round(rnd))
                if minima:
                    r.ew("max" if largest(metric) else "min", bests.all, bests.all, acc.all)
                elif collect:
                    origin = (bi, q0 + group * 64)
                    r.top_k_collect(acc.all, start.all, row0, part_v[origin + (0,)], part_i[origin + (0,)], count[origin],
                                    largest=largest(metric), index_limit=m,
                                    exclude_base=q0 + group * 64 if exclude_self else None)
                else:
                    # Seeded lists rarely fill, so each thread's own k-th is the quad's threshold but for the
                    # shuffles on the path to the next wgmma (TopK.own_threshold; on the H200 at Q 128, M 10M, the
                    # score kernel took 45 to 60 us less without them, 32 candidates a vote, docs/gpu_runs.md).
                    r.top_k(acc.all, 1, k, row0, best_v.all, best_i.all, "thread", largest=largest(metric),
                            index_limit=m, exclude_base=q0 + group * 64 if exclude_self else None, vote=True,
                            own_threshold=seeded)
            if minima:
                # A group is named by its first row: the column's row in the class's first tile of the range.
                r.top_k(bests.all, 1, k, (si * t + cls) * block_n, best_v.all, best_i.all, "thread",
                        largest=largest(metric), vote=True, own_threshold=True)  # one insertion into empty lists
            if not collect:
                r.top_k_merge(best_v.all, best_i.all, k, "lanes", largest=largest(metric))
                p = si * interleave + cls if interleave > 1 else si
                r.copy(best_v.all, part_v[bi, p, q0 + group * 64, 0])
                r.copy(best_i.all, part_i[bi, p, q0 + group * 64, 0])
    return kb.build()


def cols_sm90a(d=128, block_q=16, stages=4, consumers=2, k=10, metric="l2", exclude_self=False, seeded=False, dtype="bf16",
               name=None):
    """Small-Q score kernel: database rows on wgmma M (64 per consumer warpgroup), block_q queries on N.

    A ring round holds 64 * consumers database rows; warpgroup w scores rows
    w * 64 .. w * 64 + 63 against the resident queries into a [64, block_q] tile and
    inserts each column (query) into per-column lists. At the end of a range the eight
    lanes of a warp that share a column merge, and each warp writes its lists as one
    partial list: P = S * 4 * consumers.
    """
    _check(metric, k, dtype)
    name = name or "knn_cols_sm90a"
    kb = KernelBuilder(name, target="sm_90a")
    lists = 4 * consumers
    b, q_n, m, dd, s, t, q, x, col, part_v, part_i, seed = _score_contract(kb, d, k, metric, exclude_self, lists, dtype,
                                                                         seeded)
    block_m = 64 * consumers
    kb.require(s * t * block_m >= m, "the ranges cover the database")
    if exclude_self:
        kb.require(q_n == m, "self-KNN: query i is database row i")
    kb.persistent(min_blocks_per_sm=1)
    swizzle = swizzle_for(d, dtype)
    s_q = kb.shared("sQ", dtype, [block_q, d], swizzle=swizzle)
    s_x = kb.shared("sX", dtype, [block_m, d], stages=stages, swizzle=swizzle)
    ring = [s_x]
    s_col = None
    if col is not None:
        s_col = kb.shared("sCol", "f32", [block_m], stages=stages)
        ring.append(s_col)
    acc = kb.registers("acc", "f32", [64, block_q], layout="wgmma_acc", owner="mma")
    rows = kb.registers("rows", "f32", [64], layout="wgmma_rows", owner="mma") if col is not None else None
    best_v = kb.registers("best_v", "f32", [block_q, k], layout="wgmma_cols", owner="mma")
    best_i = kb.registers("best_i", "i32", [block_q, k], layout="wgmma_cols", owner="mma")
    start = kb.registers("start", "f32", [block_q], layout="wgmma_cols", owner="mma") if seeded else None
    q_bytes = kb.tile_bytes(s_q)
    slab_bytes = kb.tile_bytes(*ring)
    q_full = kb.mbarrier("q_full", arrivals=1, tx_bytes=q_bytes)
    q_empty = kb.mbarrier("q_empty", arrivals=consumers)
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=slab_bytes)
    empty = kb.mbarrier("empty", arrivals=consumers, count=stages)
    wg_done = kb.named_barrier("wg_done", threads=128, count=consumers) if col is not None else None
    kb.pipeline("q_ring", 1, q_full, q_empty, [s_q], producer="load", consumers=["mma"])
    kb.pipeline("x_ring", stages, full, empty, ring, producer="load", consumers=["mma"])
    q_blocks = ceil_div(q_n, block_q)
    items = b * q_blocks * s

    def item_coords(item):
        return item // (q_blocks * s), (item // s) % q_blocks * block_q, item % s

    producer_regs, consumer_regs = register_split(consumers)
    with kb.role("load", "producer", warpgroups=1, registers=producer_regs) as r:
        init_barriers(r, q_full, q_empty, full, empty)
        with r.if_((r.warp == 0) & r.elected):
            with r.tiles("item", items, counter="it") as (item, it):
                bi, q0, si = item_coords(item)
                r.wait(q_empty.round(it))
                r.expect_tx(q_full.round(it), q_bytes)
                r.tma_load(q[bi, q0, 0], s_q.all, q_full.round(it))
                with r.loop("j", 0, t) as j:
                    rnd = it * t + j
                    row0 = (si * t + j) * block_m
                    r.wait(empty.round(rnd))
                    r.expect_tx(full.round(rnd), slab_bytes)
                    r.tma_load(x[bi, row0, 0], s_x[rnd % stages], full.round(rnd))
                    if s_col is not None:
                        r.tma_load(col[bi, row0], s_col[rnd % stages], full.round(rnd))

    with kb.role("mma", "consumer", warpgroups=consumers, registers=consumer_regs) as r:
        r.block_sync()
        leader = (r.warp % 4 == 0) & r.elected
        with r.tiles("item", items, counter="it") as (item, it):
            bi, q0, si = item_coords(item)
            _start_lists(r, metric, best_v, best_i, seed, start, (bi, q0))
            r.wait(q_full.round(it))
            with r.loop("j", 0, t) as j:
                rnd = it * t + j
                row0 = (si * t + j) * block_m + r.warpgroup * 64
                r.wait(full.round(rnd))
                r.mma("wgmma", s_x.tile(rnd % stages, window=[(r.warpgroup * 64, 64), (0, d)]), s_q.all, acc.all,
                      accumulate=0)
                r.mma_wait(0)
                with r.if_((j == t - 1) & leader):
                    r.arrive(q_empty.round(it))
                if s_col is not None:
                    r.copy(s_col.tile(rnd % stages, window=[(r.warpgroup * 64, 64)]), rows.all)
                    r.fence("proxy_async")  # the norm reads complete before the TMA refill (CAKE-DATA-011)
                    r.named_sync(wg_done, index=r.warpgroup)  # every thread's norm reads are done
                with r.if_(leader):
                    r.arrive(empty.round(rnd))
                if s_col is not None:
                    _epilogue(r, metric, acc.all, rows.all)
                r.top_k(acc.all, 0, k, row0, best_v.all, best_i.all, "thread", largest=largest(metric),
                        index_limit=m, exclude_base=q0 if exclude_self else None, vote=True)
            r.top_k_merge(best_v.all, best_i.all, k, "lanes", largest=largest(metric))
            p = (si * consumers + r.warpgroup) * 4 + r.warp % 4
            r.copy(best_v.all, part_v[bi, p, q0, 0])
            r.copy(best_i.all, part_i[bi, p, q0, 0])
    return kb.build()


def merge(k=10, warps=4, metric="l2", dtype="bf16", index_dtype="i32", rescore=True, single=False, target="sm_90a",
          name=None):
    """Final lists: one warp per query merges its P partial lists, rescores the k winners exactly, sorts them.

    Lane l takes partial list l as its list and inserts lists l + 32, l + 64, ... (split order, so
    each lane's candidates arrive in index order) into it, skipping a round by warp vote when no
    candidate reaches the warp's best k-th entry; a warp merge combines the lanes' lists;
    Rescore replaces the ranking scores by exact f32 scores from the rows (squared L2
    distance clamped at 0, inner product, or cosine similarity), and a sort restores
    the order (ties to the smaller index). Lane 0 writes the result. `single` is the form
    for P = 1 (one range of one list per query, as all-pairs problems split): every lane
    reads that list, and no lane inserts or merges.
    """
    if metric not in METRICS:
        raise ValueError("metric must be one of %s, got %r" % (METRICS, metric))
    if dtype not in ROW_DTYPES:
        raise ValueError("merge reads bf16, f16 or f32 rows, got %r" % dtype)
    if index_dtype not in ("i32", "i64"):
        raise ValueError("merge writes i32 or i64 indices, got %r" % index_dtype)
    name = name or "knn_merge"
    kb = KernelBuilder(name, target=target)
    b = kb.symbol("B", min=1, max=1 << 16, doc="independent problems (batch)")
    q_n = kb.symbol("Q", min=1, max=1 << 26, doc="queries per problem")
    m = kb.symbol("M", min=1, max=MAX_M, doc="database rows per problem")
    dd = kb.symbol("D", min=1, max=1 << 12, doc="features (the rescore loops over them at run time)")
    if single:
        p_n = kb.symbol("P", min=1, max=1, doc="partial lists per query: one")
    else:
        p_n = kb.symbol("P", min=32, max=1 << 20, doc="partial lists per query, padded to whole warps")
        kb.require(p_n % 32 == 0, "lanes take whole rounds of partial lists (padding lists hold the worst score, index -1)")
    kk = kb.symbol("k", min=k, max=k, value=k, doc="entries per partial list (the kernel is specialized to it)")
    ko = kb.symbol("KO", min=1, max=k, doc="neighbours written per query: the first KO of the k best (a kernel serves "
                   "every k up to its lists' length)")
    what = {"l2": "||q[b, i] - x[b, j]||^2 (smallest)", "ip": "q[b, i].x[b, j] (largest)",
            "cos": "cos(q[b, i], x[b, j]) (largest)"}[metric]
    kb.contract(
        math=("(dist[b, i, :], idx[b, i, :]) = the KO best j of %s among the entries of part_i[b, :, i, :] ranked by"
              " part_v, rescored exactly in f32 and sorted, ties to the smaller j" % what) if rescore else
        "(dist[b, i, :], idx[b, i, :]) = the KO best entries of the partial lists part_v/part_i[b, :, i, :] by their"
        " ranking scores, ties to the smaller index",
        reference="kernels.knn.reference.merge_lists",
        metric="recall",
        tolerance=0.99,
    )
    q = kb.tensor("q", dtype, [b, q_n, dd], doc="queries")
    x = kb.tensor("x", dtype, [b, m, dd], doc="database rows")
    part_v = kb.tensor("part_v", "f32", [b, p_n, q_n, kk], doc="partial lists' ranking scores, best first")
    part_i = kb.tensor("part_i", "i32", [b, p_n, q_n, kk], doc="partial lists' database rows (-1: empty entry)")
    # KO <= k: lane 0's copy of its k sorted entries writes the first KO (the copy is bounds-checked per element).
    dist = kb.tensor("dist", "f32", [b, q_n, ko], access="write", doc="exact scores of the neighbours, best first")
    idx = kb.tensor("idx", index_dtype, [b, q_n, ko], access="write", doc="database rows of the neighbours")
    kb.grid(ceil_div(q_n, warps), b)
    best_v = kb.registers("best_v", "f32", [k], layout="per_thread", owner="main")
    best_i = kb.registers("best_i", "i32", [k], layout="per_thread", owner="main")
    if not single:
        cand_v = kb.registers("cand_v", "f32", [k], layout="per_thread", owner="main")
        cand_i = kb.registers("cand_i", "i32", [k], layout="per_thread", owner="main")
    rescore_metric = {"l2": "l2", "ip": "inner_product", "cos": "cosine"}[metric]
    with kb.role("main", "compute", warps=warps) as r:
        bi, qi = block.y, block.x * warps + r.warp
        with r.if_(qi < q_n):  # the whole warp, or none of it: the merges and Rescore below are warp-collective
            if single:
                r.copy(part_v[bi, 0, qi, 0], best_v.all)
                r.copy(part_i[bi, 0, qi, 0], best_i.all)
            else:
                # Lane l's list starts as partial list l (sorted, as inserting it into an empty list would leave it).
                r.copy(part_v[bi, r.lane, qi, 0], best_v.all)
                r.copy(part_i[bi, r.lane, qi, 0], best_i.all)
                with r.loop("c", 1, p_n // 32, unroll=4) as c:
                    r.copy(part_v[bi, c * 32 + r.lane, qi, 0], cand_v.all)
                    r.copy(part_i[bi, c * 32 + r.lane, qi, 0], cand_i.all)
                    r.top_k(cand_v.all, 0, k, 0, best_v.all, best_i.all, "thread", largest=largest(metric),
                            src_indices=cand_i.all, vote=True)
                r.top_k_merge(best_v.all, best_i.all, k, "warp", largest=largest(metric))
            if rescore:
                r.rescore(best_v.all, best_i.all, q[bi, qi, 0], x[bi, 0, 0], rescore_metric)
                r.top_k_merge(best_v.all, best_i.all, k, "thread", largest=largest(metric))
            with r.if_(r.lane == 0):
                r.copy(best_v.all, dist[bi, qi, 0])
                r.copy(best_i.all, idx[bi, qi, 0])
    return kb.build()


def merge_fanin(k=10, warps=4, metric="l2", target="sm_90a", name=None):
    """Fewer partial lists: warp (query i, group g) merges partial lists 32 g .. 32 g + 31 of i into list g.

    Lane l takes list 32 g + l as its own (each is sorted, best first) and a warp merge leaves
    every lane with their k best; lane 0 writes them. Nothing is inserted, so no lane waits on a
    serial insertion, and the groups of a query run in parallel: the merge kernel after it reads
    one round of lists per query where it read P / 32 rounds one after another (each about 2 us
    on the H200). The partial lists are disjoint but for placeholder entries (index -1), as the
    merge kernel's lanes' are. Output lists past P / 32 are not written (they keep the host's fill).
    """
    if metric not in METRICS:
        raise ValueError("metric must be one of %s, got %r" % (METRICS, metric))
    name = name or "knn_merge_fanin"
    kb = KernelBuilder(name, target=target)
    b = kb.symbol("B", min=1, max=1 << 16, doc="independent problems (batch)")
    q_n = kb.symbol("Q", min=1, max=1 << 26, doc="queries per problem")
    p_n = kb.symbol("P", min=32, max=1 << 20, doc="partial lists per query, padded to whole warps")
    kb.require(p_n % 32 == 0, "each warp takes 32 partial lists (padding lists hold the worst score, index -1)")
    g_n = kb.symbol("G", min=1, max=1 << 15, doc="merged lists per query the workspace holds (lists past P / 32 keep "
                    "the host's fill, the worst score and index -1)")
    kb.require(g_n * 32 >= p_n, "the output holds a list per group of 32 partial lists")
    kk = kb.symbol("k", min=k, max=k, value=k, doc="entries per list (the kernel is specialized to it)")
    kb.contract(
        math="(out_v[b, g, i, :], out_i[b, g, i, :]) = the k best entries of the partial lists part_v/part_i[b, 32 g "
        ".. 32 g + 31, i, :] by their ranking scores, best first, ties to the smaller index",
        reference="kernels.knn.reference.fan_in_lists",
        metric="recall",
        tolerance=0.99,
    )
    part_v = kb.tensor("part_v", "f32", [b, p_n, q_n, kk], doc="partial lists' ranking scores, best first")
    part_i = kb.tensor("part_i", "i32", [b, p_n, q_n, kk], doc="partial lists' database rows (-1: empty entry)")
    # read_write: the kernel writes the first P / 32 lists; the rest keep the host's fill.
    out_v = kb.tensor("out_v", "f32", [b, g_n, q_n, kk], access="read_write", doc="merged lists' ranking scores")
    out_i = kb.tensor("out_i", "i32", [b, g_n, q_n, kk], access="read_write", doc="merged lists' database rows")
    kb.grid(ceil_div(q_n, warps), p_n // 32, b)
    best_v = kb.registers("best_v", "f32", [k], layout="per_thread", owner="main")
    best_i = kb.registers("best_i", "i32", [k], layout="per_thread", owner="main")
    with kb.role("main", "compute", warps=warps) as r:
        bi, g, qi = block.z, block.y, block.x * warps + r.warp
        with r.if_(qi < q_n):  # the whole warp, or none of it: the merge below is warp-collective
            r.copy(part_v[bi, g * 32 + r.lane, qi, 0], best_v.all)
            r.copy(part_i[bi, g * 32 + r.lane, qi, 0], best_i.all)
            r.top_k_merge(best_v.all, best_i.all, k, "warp", largest=largest(metric))
            with r.if_(r.lane == 0):
                r.copy(best_v.all, out_v[bi, g, qi, 0])
                r.copy(best_i.all, out_i[bi, g, qi, 0])
    return kb.build()


def rows_sm80(d=128, block_q=128, block_n=64, stages=3, k=10, metric="l2", dtype="bf16", collect=False, name=None):
    """sm_80 score kernel: a cp.async ring of database tiles; warp w scores queries 16 w .. 16 w + 15 with mma.sync.

    A block per (query block, range, problem): grid (ceil(Q / block_q), S, B); one
    partial list per query and range (P = S). `collect`: the filter form (rows_sm90a's).
    """
    _check(metric, k, dtype)
    name = name or ("knn_filter_sm80" if collect else "knn_rows_sm80")
    kb = KernelBuilder(name, target="sm_80")
    if collect:
        b, q_n, m, dd, s, t, q, x, col, part_v, part_i, count, bound = _collect_contract(kb, d, metric, False, dtype)
    else:
        b, q_n, m, dd, s, t, q, x, col, part_v, part_i, _ = _score_contract(kb, d, k, metric, False, 1, dtype)
    kb.require(s * t * block_n >= m, "the ranges cover the database")
    kb.grid(ceil_div(q_n, block_q), s, b)
    swizzle = swizzle_for(d, dtype)
    s_q = kb.shared("sQ", dtype, [block_q, d], swizzle=swizzle)
    s_x = kb.shared("sX", dtype, [block_n, d], stages=stages, swizzle=swizzle)
    s_col = kb.shared("sCol", "f32", [block_n], stages=stages) if col is not None else None
    acc = kb.registers("acc", "f32", [16, block_n], layout="mma_acc", owner="main")
    if collect:
        start = kb.registers("start", "f32", [16], layout="mma_rows", owner="main")
    else:
        best_v = kb.registers("best_v", "f32", [16, k], layout="mma_rows", owner="main")
        best_i = kb.registers("best_i", "i32", [16, k], layout="mma_rows", owner="main")
    bi, si, q0 = block.z, block.y, block.x * block_q
    with kb.role("main", "compute", warps=block_q // 16) as r:

        def issue(j):
            row0 = (si * t + j) * block_n
            r.cp_async(x[bi, row0, 0], s_x[j % stages])
            if s_col is not None:
                r.cp_async(col[bi, row0], s_col[j % stages])

        origin = (bi, q0 + r.warp * 16)
        if collect:
            r.copy(bound[origin], start.all)
        else:
            r.fill(best_v.all, -INF if largest(metric) else INF)
            r.fill(best_i.all, -1)
        r.cp_async(q[bi, q0, 0], s_q.all)  # the oldest group: complete once round 0's are
        with cp_async_ring(r, "j", t, stages, groups=2 if s_col is not None else 1, issue=issue) as j:
            r.mma("mma_sync", s_q.tile(window=[(r.warp * 16, 16), (0, d)]), s_x[j % stages], acc.all, accumulate=0)
            if s_col is not None:
                _epilogue(r, metric, acc.all, s_col[j % stages])
            if collect:
                r.top_k_collect(acc.all, start.all, (si * t + j) * block_n, part_v[origin + (0,)], part_i[origin + (0,)],
                                count[origin], largest=largest(metric), index_limit=m)
            else:
                r.top_k(acc.all, 1, k, (si * t + j) * block_n, best_v.all, best_i.all, "thread",
                        largest=largest(metric), index_limit=m, vote=True)
        if not collect:
            r.top_k_merge(best_v.all, best_i.all, k, "lanes", largest=largest(metric))
            r.copy(best_v.all, part_v[bi, si, q0 + r.warp * 16, 0])
            r.copy(best_i.all, part_i[bi, si, q0 + r.warp * 16, 0])
    return kb.build()


def rows_sm100a(d=128, block_n=128, stages=3, epilogue_cols=32, k=10, metric="l2", dtype="bf16", collect=False,
                name=None):
    """sm_100a score kernel: tcgen05 [128 queries, block_n] tiles in tensor memory, one query per thread.

    One warpgroup owns the accumulator: an elected thread of warp 0 issues each tile's
    MMA and commits it to the ring's empty barrier and to acc_full; all 128 threads
    drain it epilogue_cols columns at a time (thread t holds query t) and insert into
    their own lists, so no merge is needed. A block per (query block, range, problem).
    `collect`: the filter form (rows_sm90a's).
    """
    _check(metric, k, dtype)
    block_q = 128
    name = name or ("knn_filter_sm100a" if collect else "knn_rows_sm100a")
    kb = KernelBuilder(name, target="sm_100a")
    if collect:
        b, q_n, m, dd, s, t, q, x, col, part_v, part_i, count, bound = _collect_contract(kb, d, metric, False, dtype)
    else:
        b, q_n, m, dd, s, t, q, x, col, part_v, part_i, _ = _score_contract(kb, d, k, metric, False, 1, dtype)
    kb.require(s * t * block_n >= m, "the ranges cover the database")
    kb.grid(ceil_div(q_n, block_q), s, b)
    swizzle = swizzle_for(d, dtype)
    s_q = kb.shared("sQ", dtype, [block_q, d], swizzle=swizzle)
    s_x = kb.shared("sX", dtype, [block_n, d], stages=stages, swizzle=swizzle)
    tacc = kb.tensor_memory("tacc", "f32", [block_q, block_n], owner="mma")
    score = kb.registers("score", "f32", [block_q, epilogue_cols], layout="row_per_thread", owner="mma")
    cvec = kb.registers("cvec", "f32", [epilogue_cols], layout="per_thread", owner="mma") if col is not None else None
    if collect:
        start = kb.registers("start", "f32", [block_q], layout="row_per_thread", owner="mma")
    else:
        best_v = kb.registers("best_v", "f32", [block_q, k], layout="row_per_thread", owner="mma")
        best_i = kb.registers("best_i", "i32", [block_q, k], layout="row_per_thread", owner="mma")
    q_full = kb.mbarrier("q_full", arrivals=1, tx_bytes=kb.tile_bytes(s_q))
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=kb.tile_bytes(s_x))
    empty = kb.mbarrier("empty", arrivals=1, count=stages)
    acc_full = kb.mbarrier("acc_full", arrivals=1)
    wg = kb.named_barrier("wg", threads=block_q)
    kb.pipeline("ring", stages, full, empty, [s_x], producer="load", consumers=["mma"])
    bi, si, q0 = block.z, block.y, block.x * block_q

    with kb.role("mma", "consumer", warpgroups=1) as r:
        issuer = (r.warp == 0) & r.elected
        r.block_sync()
        if collect:
            r.copy(bound[bi, q0], start.all)
        else:
            r.fill(best_v.all, -INF if largest(metric) else INF)
            r.fill(best_i.all, -1)
        with r.if_(issuer):
            r.wait(q_full[0], phase=0)
        with r.loop("j", 0, t) as j:
            row0 = (si * t + j) * block_n
            with r.if_(issuer):
                r.wait(full.round(j))
                r.mma("tcgen05", s_q.all, s_x[j % stages], tacc.all, accumulate=0)
                r.mma_commit(empty.round(j))
                r.mma_commit(acc_full[0])
            r.named_sync(wg)  # the issuer rejoins its warp before the warp-collective tcgen05.ld
            r.wait(acc_full[0], phase=j % 2)
            with r.loop("e", 0, block_n // epilogue_cols) as e:
                c0 = e * epilogue_cols
                r.tmem_load(tacc.tile(window=[(0, block_q), (c0, epilogue_cols)]), score.all)
                if cvec is not None:
                    r.copy(col[bi, row0 + c0], cvec.all)
                    _epilogue(r, metric, score.all, cvec.all)
                if collect:
                    r.top_k_collect(score.all, start.all, row0 + c0, part_v[bi, q0, 0], part_i[bi, q0, 0], count[bi, q0],
                                    largest=largest(metric), index_limit=m)
                else:
                    r.top_k(score.all, 1, k, row0 + c0, best_v.all, best_i.all, "thread", largest=largest(metric),
                            index_limit=m, vote=True)
            r.named_sync(wg)  # the accumulator is drained by every thread before the next issue into it
        if not collect:
            r.copy(best_v.all, part_v[bi, si, q0, 0])
            r.copy(best_i.all, part_i[bi, si, q0, 0])
    with kb.role("load", "producer", warps=1) as r:
        init_barriers(r, q_full, full, empty, acc_full)
        with r.if_(r.elected):
            r.expect_tx(q_full[0], kb.tile_bytes(s_q))
            r.tma_load(q[bi, q0, 0], s_q.all, q_full[0])
            with r.loop("j", 0, t) as j:
                r.wait(empty.round(j))
                r.expect_tx(full.round(j), kb.tile_bytes(s_x))
                r.tma_load(x[bi, (si * t + j) * block_n, 0], s_x[j % stages], full.round(j))
    return kb.build()

