"""The tuned sm_90a Flash-KMeans assignment schedule (what kmeans_assign dispatches to).

Where the seed schedule (schedules.assign_sm90a) lets each block hold 128 points and
finish before the next starts, this one is written for the H200's limits:
- 256 points per block halve the L2 traffic of re-streaming the centroids (each block
  reads all of c[b]); two consumer warpgroups own 128 points each, as two 64-row halves.
- Software pipelining inside each warpgroup: while the tensor cores run one half's
  wgmma for the next centroid tile, the CUDA cores run the other half's epilogue
  (distance, running arg-min), so the epilogue hides behind the MMA.
- Persistent blocks walk (problem, row block) tiles; the resident points are double
  buffered, so the next block's points load while this one's finish.
- Any N, K and D <= d: TMA zero-fills rows and features past the tensors' ends and the
  label store is bounds-checked; the caller pads c_sq to KP (a multiple of block_k)
  with +inf, so padded centroids (zero rows) score +inf and never win.
"""

import math

from compiler.ir.builder import KernelBuilder
from kernels.gemm.idioms import init_barriers, swizzle_for

INF = math.inf


def assign_sm90a_tuned(d=128, block_k=128, stages=3, x_stages=2, dtype="bf16", name="kmeans_assign_sm90a_tuned"):
    consumers, halves = 2, 2
    block_n = 64 * halves * consumers
    esize = 2
    kb = KernelBuilder(name, target="sm_90a")
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
        tolerance=0.999,
    )
    kb.require(dd % 8 == 0, "rows of x and c start 16-byte aligned (TMA)")
    kb.require(kp % block_k == 0, "c_sq is padded to whole %d-centroid tiles" % block_k)
    kb.require((kp >= kk) & (kp < kk + block_k), "KP is K rounded up to a multiple of %d" % block_k)
    x = kb.tensor("x", dtype, [b_sym, n, dd], doc="points, features contiguous")
    c = kb.tensor("c", dtype, [b_sym, kk, dd], doc="centroids, features contiguous")
    c_sq = kb.tensor("c_sq", "f32", [b_sym, kp], doc="squared centroid norms, from c as stored; +inf past K")
    labels = kb.tensor("labels", "i32", [b_sym, n], access="write", doc="nearest centroid of each point")
    kb.persistent(min_blocks_per_sm=1)

    swizzle = swizzle_for(d * esize)
    s_x = kb.shared("sX", dtype, [block_n, d], stages=x_stages, swizzle=swizzle)
    s_c = kb.shared("sC", dtype, [block_k, d], stages=stages, swizzle=swizzle)
    s_q = kb.shared("sCsq", "f32", [block_k], stages=stages)
    acc = [kb.registers("acc%d" % h, "f32", [64, block_k], layout="wgmma_acc", owner="mma") for h in range(halves)]
    best_v = [kb.registers("best_v%d" % h, "f32", [64], layout="wgmma_rows", owner="mma") for h in range(halves)]
    best_i = [kb.registers("best_i%d" % h, "i32", [64], layout="wgmma_rows", owner="mma") for h in range(halves)]
    x_bytes = block_n * d * esize
    tile_bytes = block_k * d * esize + block_k * 4
    x_full = kb.mbarrier("x_full", arrivals=1, count=x_stages, tx_bytes=x_bytes)
    x_empty = kb.mbarrier("x_empty", arrivals=consumers, count=x_stages)
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=tile_bytes)
    empty = kb.mbarrier("empty", arrivals=consumers, count=stages)
    wg_done = kb.named_barrier("wg_done", threads=128, count=consumers)
    kb.pipeline("x_ring", x_stages, x_full, x_empty, [s_x], producer="load", consumers=["mma"])
    kb.pipeline("c_ring", stages, full, empty, [s_c, s_q], producer="load", consumers=["mma"])

    row_blocks = (n + (block_n - 1)) // block_n
    k_tiles = kp // block_k

    with kb.role("load", "producer", warpgroups=1, registers=40) as r:
        init_barriers(r, x_full, x_empty, full, empty)
        with r.if_((r.warp == 0) & r.elected):
            with r.tiles("tile", b_sym * row_blocks, counter="it") as (tile, it):
                bi, n0 = tile // row_blocks, (tile % row_blocks) * block_n
                r.wait(x_empty.round(it))
                r.expect_tx(x_full.round(it), x_bytes)
                r.tma_load(x[bi, n0, 0], s_x[it % x_stages], x_full.round(it))
                with r.loop("k", 0, k_tiles) as k:
                    rnd = it * k_tiles + k
                    r.wait(empty.round(rnd))
                    r.expect_tx(full.round(rnd), tile_bytes)
                    r.tma_load(c[bi, k * block_k, 0], s_c[rnd % stages], full.round(rnd))
                    r.tma_load(c_sq[bi, k * block_k], s_q[rnd % stages], full.round(rnd))

    with kb.role("mma", "consumer", warpgroups=consumers, registers=232) as r:
        r.block_sync()
        leader = (r.warp % 4 == 0) & r.elected
        with r.tiles("tile", b_sym * row_blocks, counter="it") as (tile, it):
            bi, n0 = tile // row_blocks, (tile % row_blocks) * block_n
            row0 = n0 + r.warpgroup * (64 * halves)
            for h in range(halves):
                r.fill(best_v[h].all, INF)
                r.fill(best_i[h].all, 0)
            r.wait(x_full.round(it))
            xs = [s_x.tile(it % x_stages, window=[(r.warpgroup * (64 * halves) + 64 * h, 64), (0, d)]) for h in range(halves)]
            first = it * k_tiles

            def issue(h, rnd):
                r.mma("wgmma", xs[h], s_c[rnd % stages], acc[h].all, accumulate=0)

            def epilogue(h, rnd, k):
                r.ew("fma", acc[h].all, acc[h].all, -2.0, s_q[rnd % stages])
                r.arg_reduce("argmin", acc[h].all, 1, k * block_k, best_v[h].all, best_i[h].all, "thread", accumulate=True)

            r.wait(full.round(first))
            issue(0, first)
            issue(1, first)
            with r.loop("k", 0, k_tiles) as k:
                rnd = first + k
                # In flight: half 0 and half 1 of tile k. Half 0 finishes first.
                r.mma_wait(1)
                epilogue(0, rnd, k)
                with r.if_(k + 1 < k_tiles):
                    r.wait(full.round(rnd + 1))
                    issue(0, rnd + 1)
                    r.mma_wait(1)
                with r.else_():
                    r.mma_wait(0)
                    with r.if_(leader):
                        r.arrive(x_empty.round(it))
                epilogue(1, rnd, k)
                # Both halves' wgmma and every thread's c_sq reads of this slot are done.
                r.named_sync(wg_done, index=r.warpgroup)
                with r.if_(leader):
                    r.arrive(empty.round(rnd))
                with r.if_(k + 1 < k_tiles):
                    issue(1, rnd + 1)
            for h in range(halves):
                r.arg_reduce("argmin", best_v[h].all, 1, 0, best_v[h].all, best_i[h].all, "lanes", accumulate=True)
                r.copy(best_i[h].all, labels[bi, row0 + 64 * h])
    return kb.build()
