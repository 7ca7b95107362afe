"""The tuned sm_90a Flash-KMeans assignment schedules (what kmeans_assign dispatches to).

`assign_sm90a_tuned` up to 256 features; `assign_sm90a_streamed` (its docstring says why)
for 257-1024.

Where the seed schedule (schedules.assign_sm90a) lets each block hold 128 points and
finish before the next starts, this one is written for the H200's limits:
- 256 points per block (four consumer warpgroups of 64) halve the L2 traffic of
  re-streaming the centroids (each block reads all of c[b]), and four warpgroups
  interleave on the SM: while some run their epilogue (distance, running arg-min) on
  the CUDA cores, the others' wgmma keep the tensor cores busy. (Pipelining two
  accumulators inside one warpgroup would do the same with fewer warps, but ptxas
  serializes wgmma whenever a second group is in flight during an epilogue.)
- Persistent blocks walk (problem, row block) tiles; the resident points are double
  buffered, so the next block's points load while this one's finish.
- Any N, K and D <= d: TMA zero-fills rows and features past the tensors' ends and the
  label store is bounds-checked; the caller pads c_sq to KP (a multiple of block_k)
  with +inf, so padded centroids (zero rows) score +inf and never win.
- `rows` row blocks of 64 points per consumer (each its own accumulator): at small D and
  K a tile's wgmma and epilogue are short, and each consumer's serial chain per tile
  (wait, wgmma, arg-min, fence, release) is paid once for `rows` of them; their wgmma
  are issued back to back and retired by one wait, so none is in flight during an
  epilogue. Points are loaded in TMA boxes of at most 256 rows (the box limit), one
  shared region per box, group g = j * consumers + w of consumer w's j-th row block.
"""

import math

from compiler.ir.builder import KernelBuilder, block
from compiler.ir.expr import E, ceil_div
from compiler.targets import registers
from kernels.gemm.idioms import init_barriers, swizzle_for

INF = math.inf


MAX_BOX_ROWS = 256  # TMA boxes hold at most 256 elements per dimension


def _contract(kb, d, block_k, dtype):
    """The assignment's symbols, contract, requirements and tensors on `kb`: (B, N, KP, x, c, c_sq, labels)."""
    b_sym = kb.symbol("B", min=1, max=1 << 16, doc="independent problems")
    n = kb.symbol("N", min=1, max=1 << 26, doc="points per problem")
    kk = kb.symbol("K", min=1, max=1 << 20, doc="centroids per problem")
    kp = kb.symbol("KP", min=block_k, max=1 << 20, doc="K rounded up to whole centroid tiles (c_sq's length)")
    dd = kb.symbol("D", min=8, max=d, doc="features; tiles are d wide, TMA zero-fills the rest")
    kb.contract(
        math="labels[b, n] = argmin_k (c_sq[b, k] - 2 sum_d x[b, n, d] c[b, k, d]), ties to the smallest k;"
        " c_sq[b, k] = sum_d c[b, k, d]^2",
        reference="kernels.kmeans.reference.assign",
        metric="label_agreement",
        tolerance=0.9999,
    )
    kb.require(dd % 8 == 0, "rows of x and c start 16-byte aligned (TMA)")
    kb.require(kp % block_k == 0, "c_sq is padded to whole %d-centroid tiles" % block_k)
    kb.require((kp >= kk) & (kp < kk + block_k), "KP is K rounded up to a multiple of %d" % block_k)
    x = kb.tensor("x", dtype, [b_sym, n, dd], doc="points, features contiguous")
    c = kb.tensor("c", dtype, [b_sym, kk, dd], doc="centroids, features contiguous")
    c_sq = kb.tensor("c_sq", "f32", [b_sym, kp], doc="squared centroid norms, from c as stored; +inf past K")
    labels = kb.tensor("labels", "i32", [b_sym, n], access="write", doc="nearest centroid of each point")
    kb.persistent(min_blocks_per_sm=1)
    return b_sym, n, kp, x, c, c_sq, labels


def _register_split(consumers, producer=None):
    """(producer, consumer) setmaxnreg budgets: the producer warpgroup hands its share to the consumers
    (setmaxnreg moves registers within the block's launch allocation: compiler/targets/registers.py)."""
    producer = producer or (24 if consumers > 2 else 40)
    return registers.producer_consumer_split("sm_90a", 128, producer, 128 * consumers, cap=240)


def assign_sm90a_tuned(d=128, block_k=128, stages=3, x_stages=2, consumers=4, dtype="bf16",
                       name="kmeans_assign_sm90a_tuned", rows=1):
    block_n = 64 * consumers * rows
    box_rows = min(block_n, MAX_BOX_ROWS)
    boxes = block_n // box_rows
    kb = KernelBuilder(name, target="sm_90a")
    b_sym, n, kp, x, c, c_sq, labels = _contract(kb, d, block_k, dtype)

    swizzle = swizzle_for(d, dtype)
    # One region per TMA box of points (named sX, sX1, sX2, ... so rows=1 builds the kernel it always did).
    s_xs = [kb.shared("sX%s" % (p or ""), dtype, [box_rows, d], stages=x_stages, swizzle=swizzle) for p in range(boxes)]
    s_c = kb.shared("sC", dtype, [block_k, d], stages=stages, swizzle=swizzle)
    s_q = kb.shared("sCsq", "f32", [block_k], stages=stages)

    def per_row(name, dtype_, shape, layout):
        return [kb.registers(name + ("%d" % j if j else ""), dtype_, shape, layout=layout, owner="mma") for j in range(rows)]

    accs = per_row("acc", "f32", [64, block_k], "wgmma_acc")
    best_vs = per_row("best_v", "f32", [64], "wgmma_rows")
    best_is = per_row("best_i", "i32", [64], "wgmma_rows")
    x_bytes = kb.tile_bytes(*s_xs)
    tile_bytes = kb.tile_bytes(s_c, s_q)
    x_full = kb.mbarrier("x_full", arrivals=1, count=x_stages, tx_bytes=x_bytes)
    x_empty = kb.mbarrier("x_empty", arrivals=consumers, count=x_stages)
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=tile_bytes)
    empty = kb.mbarrier("empty", arrivals=consumers, count=stages)
    wg_done = kb.named_barrier("wg_done", threads=128, count=consumers)
    kb.pipeline("x_ring", x_stages, x_full, x_empty, s_xs, producer="load", consumers=["mma"])
    kb.pipeline("c_ring", stages, full, empty, [s_c, s_q], producer="load", consumers=["mma"])

    row_blocks = ceil_div(n, block_n)
    k_tiles = kp // block_k
    producer_regs, consumer_regs = _register_split(consumers)

    with kb.role("load", "producer", warpgroups=1, registers=producer_regs) as r:
        init_barriers(r, x_full, x_empty, full, empty)
        with r.if_((r.warp == 0) & r.elected):
            with r.tiles("tile", b_sym * row_blocks, counter="it") as (tile, it):
                bi, n0 = tile // row_blocks, (tile % row_blocks) * block_n
                r.wait(x_empty.round(it))
                r.expect_tx(x_full.round(it), x_bytes)
                for p, s_x in enumerate(s_xs):
                    r.tma_load(x[bi, n0 + p * box_rows if p else n0, 0], s_x[it % x_stages], x_full.round(it))
                with r.loop("k", 0, k_tiles) as k:
                    rnd = it * k_tiles + k
                    r.wait(empty.round(rnd))
                    r.expect_tx(full.round(rnd), tile_bytes)
                    r.tma_load(c[bi, k * block_k, 0], s_c[rnd % stages], full.round(rnd))
                    r.tma_load(c_sq[bi, k * block_k], s_q[rnd % stages], full.round(rnd))

    with kb.role("mma", "consumer", warpgroups=consumers, registers=consumer_regs) as r:
        r.block_sync()
        leader = (r.warp % 4 == 0) & r.elected
        with r.tiles("tile", b_sym * row_blocks, counter="it") as (tile, it):
            bi, n0 = tile // row_blocks, (tile % row_blocks) * block_n
            groups_per_box = box_rows // 64
            # Consumer w's j-th row block: group j * consumers + w, in box (j * consumers) // groups_per_box (static:
            # consumers divides groups_per_box or is a multiple of it).
            xs, row0 = [], []
            for j in range(rows):
                g0 = j * consumers
                box, first = divmod(g0, groups_per_box)
                row0.append(n0 + r.warpgroup * 64 + g0 * 64 if g0 else n0 + r.warpgroup * 64)
                start = r.warpgroup * 64 + first * 64 if first else r.warpgroup * 64
                xs.append(s_xs[box].tile(it % x_stages, window=[(start, 64), (0, d)]))
                r.fill(best_vs[j].all, INF)
                r.fill(best_is[j].all, 0)
            r.wait(x_full.round(it))
            with r.loop("k", 0, k_tiles) as k:
                rnd = it * k_tiles + k
                r.wait(full.round(rnd))
                for j in range(rows):
                    r.mma("wgmma", xs[j], s_c[rnd % stages], accs[j].all, accumulate=0)
                r.mma_wait(0)
                with r.if_((k == k_tiles - 1) & leader):
                    r.arrive(x_empty.round(it))  # no more wgmma reads this row block's points
                for j in range(rows):
                    r.ew("fma", accs[j].all, accs[j].all, -2.0, s_q[rnd % stages])
                    r.arg_reduce("argmin", accs[j].all, 1, k * block_k, best_vs[j].all, best_is[j].all, "thread",
                                 accumulate=True)
                # This warpgroup's wgmma and every thread's c_sq reads of the slot are done, the reads ordered
                # before the TMA refill (ld.shared, then an async-proxy write: CAKE-DATA-011).
                r.fence("proxy_async")
                r.named_sync(wg_done, index=r.warpgroup)
                with r.if_(leader):
                    r.arrive(empty.round(rnd))
            for j in range(rows):
                r.arg_reduce("argmin", best_vs[j].all, 1, 0, best_vs[j].all, best_is[j].all, "lanes", accumulate=True)
                r.copy(best_is[j].all, labels[bi, row0[j]])
    return kb.build()


def assign_sm90a_streamed(d=512, block_k=128, dk=64, stages=4, consumers=4, dtype="bf16",
                          name="kmeans_assign_sm90a_streamed"):
    """The assignment for wide features: points and centroids stream together in slabs of dk features.

    assign_sm90a_tuned keeps a block's points resident at their full width; past 256
    features that leaves room for one buffer of 64 points beside whole centroid tiles,
    and each block waited for its points with no wgmma running (0.37x flashlib at B 49
    N 21596 K 88 D 692 on the 768-wide tile). Here each ring slot holds a [64 *
    consumers, dk] slab of points, the [block_k, dk] slab of centroids it meets and
    the tile's c_sq: round (tile, k, slab) feeds one wgmma per consumer, accumulated
    over the d / dk slabs of a centroid tile, ranked at the last one. Points are read
    once per centroid tile (from L2 after the first), so a 128-wide tile reads them
    once for K <= 128, the common case at these widths (embedding clustering).
    """
    if d % dk or dk % 64 or d // dk < 2:
        raise ValueError("d must be two or more slabs of dk features (a multiple of 64)")
    chunks = d // dk
    block_n = 64 * consumers
    kb = KernelBuilder(name, target="sm_90a")
    b_sym, n, kp, x, c, c_sq, labels = _contract(kb, d, block_k, dtype)
    swizzle = swizzle_for(dk, dtype)
    s_x = kb.shared("sX", dtype, [block_n, dk], stages=stages, swizzle=swizzle)
    s_c = kb.shared("sC", dtype, [block_k, dk], stages=stages, swizzle=swizzle)
    s_q = kb.shared("sCsq", "f32", [block_k], stages=stages)
    acc = kb.registers("acc", "f32", [64, block_k], layout="wgmma_acc", owner="mma")
    best_v = kb.registers("best_v", "f32", [64], layout="wgmma_rows", owner="mma")
    best_i = kb.registers("best_i", "i32", [64], layout="wgmma_rows", owner="mma")
    slab_bytes = kb.tile_bytes(s_x, s_c, s_q)
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=slab_bytes)
    empty = kb.mbarrier("empty", arrivals=consumers, count=stages)
    wg_done = kb.named_barrier("wg_done", threads=128, count=consumers)
    kb.pipeline("ring", stages, full, empty, [s_x, s_c, s_q], producer="load", consumers=["mma"])
    row_blocks = ceil_div(n, block_n)
    k_tiles = kp // block_k
    # The producer's walk over (tile, centroid tile, slab) spills 56-104 bytes in 24 registers.
    producer_regs, consumer_regs = _register_split(consumers, producer=40)

    with kb.role("load", "producer", warpgroups=1, registers=producer_regs) as r:
        init_barriers(r, full, empty)
        with r.if_((r.warp == 0) & r.elected):
            with r.tiles("tile", b_sym * row_blocks, counter="it") as (tile, it):
                bi, n0 = tile // row_blocks, (tile % row_blocks) * block_n
                with r.loop("k", 0, k_tiles) as k:
                    with r.loop("sl", 0, chunks) as sl:  # not "c": the centroids' tensor
                        rnd = (it * k_tiles + k) * chunks + sl
                        r.wait(empty.round(rnd))
                        r.expect_tx(full.round(rnd), slab_bytes)
                        r.tma_load(x[bi, n0, sl * dk], s_x[rnd % stages], full.round(rnd))
                        r.tma_load(c[bi, k * block_k, sl * dk], s_c[rnd % stages], full.round(rnd))
                        r.tma_load(c_sq[bi, k * block_k], s_q[rnd % stages], full.round(rnd))

    with kb.role("mma", "consumer", warpgroups=consumers, registers=consumer_regs) as r:
        r.block_sync()
        leader = (r.warp % 4 == 0) & r.elected
        with r.tiles("tile", b_sym * row_blocks, counter="it") as (tile, it):
            bi, n0 = tile // row_blocks, (tile % row_blocks) * block_n
            r.fill(best_v.all, INF)
            r.fill(best_i.all, 0)
            with r.loop("k", 0, k_tiles) as k:
                with r.loop("sl", 0, chunks) as sl:
                    rnd = (it * k_tiles + k) * chunks + sl
                    r.wait(full.round(rnd))
                    xs = s_x.tile(rnd % stages, window=[(r.warpgroup * 64, 64), (0, dk)])
                    r.mma("wgmma", xs, s_c[rnd % stages], acc.all, accumulate=sl > 0)
                    r.mma_wait(0)
                    with r.if_(sl == chunks - 1):
                        r.ew("fma", acc.all, acc.all, -2.0, s_q[rnd % stages])
                        r.arg_reduce("argmin", acc.all, 1, k * block_k, best_v.all, best_i.all, "thread",
                                     accumulate=True)
                    # As in assign_sm90a_tuned: wgmma and c_sq reads done, ordered before the TMA refill.
                    r.fence("proxy_async")
                    r.named_sync(wg_done, index=r.warpgroup)
                    with r.if_(leader):
                        r.arrive(empty.round(rnd))
            r.arg_reduce("argmin", best_v.all, 1, 0, best_v.all, best_i.all, "lanes", accumulate=True)
            r.copy(best_i.all, labels[bi, n0 + r.warpgroup * 64])
    return kb.build()


def update_sorted(d=128, points_per_warp=64, warps=4, dtype="bf16", target="sm_90a", name="kmeans_update_sorted"):
    """Centroid sums and counts from points visited in label order (the sort-inverse update).

    The caller sorts each problem's labels (`order` is the permutation, `sorted` the sorted
    labels). Each warp walks `points_per_warp` consecutive sorted points with its lanes
    across the features, accumulating in registers while the label stays the same; when
    it changes (and at the end) the warp flushes one atomic add per feature and one for
    the count. Runs of one label average N / K points, so atomics drop by about that
    factor against one atomic per point and feature, and each point is read once.
    """
    per_lane = -(-d // 32)
    kb = KernelBuilder(name, target=target)
    b_sym = kb.symbol("B", min=1, max=1 << 16, doc="independent problems")
    n = kb.symbol("N", min=1, max=1 << 26, doc="points per problem")
    kk = kb.symbol("K", min=1, max=1 << 20, doc="centroids per problem")
    dd = kb.symbol("D", min=1, max=d, doc="features (lanes hold %d each)" % per_lane)
    kb.contract(
        math="sums[b, k, :] += sum over n with labels[b, n] = k of x[b, n, :]; counts[b, k] += |{n : labels[b, n] = k}|;"
        " sorted[b, i] = labels[b, order[b, i]] is non-decreasing in i",
        reference="kernels.kmeans.reference.accumulate",
        metric="rel_l2",
        tolerance=1e-5,
    )
    x = kb.tensor("x", dtype, [b_sym, n, dd], align_bytes=16, doc="points")
    order = kb.tensor("order", "i64", [b_sym, n], doc="points' indices sorted by label")
    srt = kb.tensor("sorted", "i32", [b_sym, n], doc="labels in sorted order, in [0, K)")
    sums = kb.tensor("sums", "f32", [b_sym, kk, dd], access="read_write", doc="per-cluster feature sums, added to")
    counts = kb.tensor("counts", "i32", [b_sym, kk], access="read_write", doc="per-cluster sizes, added to")
    chunk = points_per_warp * warps
    kb.grid(ceil_div(n, chunk), b_sym)
    lab = kb.registers("lab", "i32", [1], layout="per_thread", owner="main")
    cur = kb.registers("cur", "i32", [1], layout="per_thread", owner="main")
    row = kb.registers("row", "i64", [1], layout="per_thread", owner="main")
    cnt = kb.registers("cnt", "f32", [1], layout="per_thread", owner="main")
    acc = kb.registers("acc", "f32", [per_lane], layout="per_thread", owner="main")
    xv = kb.registers("xv", "f32", [per_lane], layout="per_thread", owner="main")
    bb = block.y
    with kb.role("main", "compute", warps=warps) as r:
        first = block.x * chunk + r.warp * points_per_warp
        feat = r.lane * per_lane

        def flush():
            r.atomic("add", acc.all, sums[bb, "cur", feat])
            with r.if_(r.lane == 0):
                r.atomic("add", cnt.all, counts[bb, "cur"])
            r.fill(acc.all, 0.0)
            r.fill(cnt.all, 0.0)

        r.fill(acc.all, 0.0)
        r.fill(cnt.all, 0.0)
        r.fill(cur.all, -1)
        with r.loop("j", 0, points_per_warp) as j:
            with r.if_(first + j < n):
                r.copy(srt[bb, first + j], lab.all)
                with r.if_((E.sym("lab") != E.sym("cur")) & (E.sym("cur") >= 0)):
                    flush()
                r.copy(lab.all, cur.all)
                r.copy(order[bb, first + j], row.all)
                r.copy(x[bb, "row", feat], xv.all)
                r.ew("add", acc.all, acc.all, xv.all)
                r.ew("add", cnt.all, cnt.all, 1.0)
        with r.if_(E.sym("cur") >= 0):
            flush()
    return kb.build()
