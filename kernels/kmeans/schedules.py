"""Flash-KMeans schedules in CAKE IR: the fused assignment and the centroid update.

Assignment is a GEMM whose epilogue never leaves the chip: a block keeps 128 points
resident, streams centroid tiles past them, turns each score tile into
c_sq[k] - 2 x.c (the squared distance less ||x||^2) and folds it into a running
per-point arg-min, so only the labels reach global memory.
- sm_90a: TMA ring + wgmma (kernels/gemm/scored.py), arg-min across each row's quad.
- sm_80: cp.async ring + mma.sync, one warp per 16 points.
- sm_100a: TMA ring + tcgen05.mma into two ping-pong TMEM accumulators, drained by a
  warpgroup that holds a point per thread, so its arg-min needs no shuffles.
The update is two small kernels: `update` scatters every point into its cluster's
sums and count with warp-aggregated atomics; `finalize` divides, keeping the previous
centroid of an empty cluster.
"""

import math

from compiler.ir.builder import KernelBuilder, block
from compiler.ir.expr import ceil_div
from kernels.gemm.idioms import cp_async_ring, init_barriers, swizzle_for
from kernels.gemm.scored import score_stream_sm90a

INF = math.inf


def assign_contract_ir(kb, d, block_n, block_k, dtype):
    """Declare the assignment's IR contract (symbols, constraints, params, grid) on `kb`; (N, K, x, c, c_sq, labels)."""
    b = kb.symbol("B", min=1, max=1 << 16, doc="independent problems")
    n = kb.symbol("N", min=block_n, max=1 << 26, doc="points per problem")
    kk = kb.symbol("K", min=block_k, max=1 << 20, doc="centroids per problem")
    dd = kb.symbol("D", min=d, max=d, value=d, doc="features (the kernel is specialized to it)")
    kb.contract(
        math="labels[b, n] = argmin_k (c_sq[b, k] - 2 sum_d x[b, n, d] c[b, k, d]), ties to the smallest k;"
        " c_sq[b, k] = sum_d c[b, k, d]^2",
        reference="kernels.kmeans.reference.assign",
        metric="label_agreement",
        tolerance=0.999,
    )
    kb.require(n % block_n == 0, "N comes in whole %d-point blocks" % block_n)
    kb.require(kk % block_k == 0, "K comes in whole %d-centroid tiles" % block_k)
    x = kb.tensor("x", dtype, [b, n, dd], doc="points, features contiguous")
    c = kb.tensor("c", dtype, [b, kk, dd], doc="centroids, features contiguous")
    c_sq = kb.tensor("c_sq", "f32", [b, kk], doc="squared centroid norms, from c as stored")
    labels = kb.tensor("labels", "i32", [b, n], access="write", doc="nearest centroid of each point")
    kb.grid(n // block_n, b)
    return n, kk, x, c, c_sq, labels


def assign_sm90a(d=128, block_k=128, stages=3, consumers=2, dtype="bf16", name="kmeans_assign_sm90a"):
    """wgmma score tiles [64 points, block_k centroids] per consumer warpgroup, running arg-min per point."""
    kb = KernelBuilder(name, target="sm_90a")
    n, kk, x, c, c_sq, labels = assign_contract_ir(kb, d, 64 * consumers, block_k, dtype)
    best_v = kb.registers("best_v", "f32", [64], layout="wgmma_rows", owner="mma")
    best_i = kb.registers("best_i", "i32", [64], layout="wgmma_rows", owner="mma")

    def start(r):
        r.fill(best_v.all, INF)
        r.fill(best_i.all, 0)

    def tile(r, score, t):
        # scope lanes: the four lanes of a row's quad agree on the running winner after every tile.
        r.arg_reduce("argmin", score, 1, t * block_k, best_v.all, best_i.all, "lanes", accumulate=True)

    def finish(r, row0):
        r.copy(best_i.all, labels[block.y, row0])

    score_stream_sm90a(kb, x, c, c_sq, (block.y,), kk, d, dtype, block_k, stages, consumers, start, tile, finish)
    return kb.build()


def assign_sm80(d=128, block_n=128, block_k=64, stages=3, dtype="bf16", name="kmeans_assign_sm80"):
    """cp.async ring of centroid tiles; warp w computes points 16 w .. 16 w + 15 against each tile with mma.sync."""
    kb = KernelBuilder(name, target="sm_80")
    n, kk, x, c, c_sq, labels = assign_contract_ir(kb, d, block_n, block_k, dtype)
    swizzle = swizzle_for(d, dtype)
    s_x = kb.shared("sX", dtype, [block_n, d], swizzle=swizzle)
    s_c = kb.shared("sC", dtype, [block_k, d], stages=stages, swizzle=swizzle)
    s_csq = kb.shared("sCsq", "f32", [block_k], stages=stages)
    score = kb.registers("score", "f32", [16, block_k], layout="mma_acc", owner="main")
    best_v = kb.registers("best_v", "f32", [16], layout="mma_rows", owner="main")
    best_i = kb.registers("best_i", "i32", [16], layout="mma_rows", owner="main")
    b, n0 = block.y, block.x * block_n
    with kb.role("main", "compute", warps=block_n // 16) as r:

        def issue(t):
            r.cp_async(c[b, t * block_k, 0], s_c[t % stages])
            r.cp_async(c_sq[b, t * block_k], s_csq[t % stages])

        r.fill(best_v.all, INF)
        r.fill(best_i.all, 0)
        r.cp_async(x[b, n0, 0], s_x.all)  # the oldest group: complete once round 0's are
        with cp_async_ring(r, "t", kk // block_k, stages, groups=2, issue=issue) as t:
            r.mma("mma_sync", s_x.tile(window=[(r.warp * 16, 16), (0, d)]), s_c[t % stages], score.all, accumulate=0)
            r.ew("fma", score.all, score.all, -2.0, s_csq[t % stages])
            r.arg_reduce("argmin", score.all, 1, t * block_k, best_v.all, best_i.all, "lanes", accumulate=True)
        r.copy(best_i.all, labels[b, n0 + r.warp * 16])
    return kb.build()


def assign_sm100a(d=128, block_k=128, stages=3, epilogue_cols=32, dtype="bf16", name="kmeans_assign_sm100a"):
    """tcgen05 score tiles [128 points, block_k centroids] in TMEM, ranked by a point-per-thread warpgroup.

    One warpgroup owns the tensor-memory accumulators: an elected thread of its warp 0
    issues the MMAs, and all 128 threads (thread t holds point t) drain them. Two
    accumulators ping-pong (even tiles in tacc0, odd tiles in tacc1, so the loop walks
    tile pairs): the next tile is issued before the current one is ranked, so the
    tensor cores run while the threads rank. A named barrier after each issue lets the
    issuing thread rejoin its warp before the warp-collective TMEM loads, and one after
    each ranking guarantees the accumulator is drained before it is issued into again.
    The centroid ring is released by the MMA's commit, before the ranking, so c_sq is
    read from global memory (four bytes per centroid, the same addresses in every thread).
    """
    block_n = 128
    kb = KernelBuilder(name, target="sm_100a")
    n, kk, x, c, c_sq, labels = assign_contract_ir(kb, d, block_n, block_k, dtype)
    swizzle = swizzle_for(d, dtype)
    s_x = kb.shared("sX", dtype, [block_n, d], swizzle=swizzle)
    s_c = kb.shared("sC", dtype, [block_k, d], stages=stages, swizzle=swizzle)
    taccs = [kb.tensor_memory("tacc%d" % i, "f32", [block_n, block_k], owner="mma") for i in (0, 1)]
    score = kb.registers("score", "f32", [block_n, epilogue_cols], layout="row_per_thread", owner="mma")
    csq = kb.registers("csq", "f32", [epilogue_cols], layout="per_thread", owner="mma")
    best_v = kb.registers("best_v", "f32", [block_n], layout="row_per_thread", owner="mma")
    best_i = kb.registers("best_i", "i32", [block_n], layout="row_per_thread", owner="mma")
    x_full = kb.mbarrier("x_full", arrivals=1, tx_bytes=kb.tile_bytes(s_x))
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=kb.tile_bytes(s_c))
    empty = kb.mbarrier("empty", arrivals=1, count=stages)
    acc_full = kb.mbarrier("acc_full", arrivals=1, count=2)  # [i]: tacc<i> holds a finished tile
    wg = kb.named_barrier("wg", threads=block_n)
    kb.pipeline("ring", stages, full, empty, [s_c], producer="load", consumers=["mma"])
    b, n0 = block.y, block.x * block_n
    n_tiles = kk // block_k

    with kb.role("mma", "consumer", warpgroups=1) as r:
        issuer = (r.warp == 0) & r.elected

        def issue(t, i):
            r.wait(full.round(t))
            r.mma("tcgen05", s_x.all, s_c[t % stages], taccs[i].all, accumulate=0)
            r.mma_commit(empty.round(t))
            r.mma_commit(acc_full[i])

        def rank(t, i, pair):
            r.named_sync(wg)  # the issuer rejoins its warp before the warp-collective tcgen05.ld
            r.wait(acc_full[i], phase=pair % 2)
            with r.loop("j%d" % i, 0, block_k // epilogue_cols) as j:
                col = j * epilogue_cols
                r.tmem_load(taccs[i].tile(window=[(0, block_n), (col, epilogue_cols)]), score.all)
                r.copy(c_sq[b, t * block_k + col], csq.all)
                r.ew("fma", score.all, score.all, -2.0, csq.all)
                r.arg_reduce("argmin", score.all, 1, t * block_k + col, best_v.all, best_i.all, "thread", accumulate=True)
            r.named_sync(wg)  # tacc<i> is drained by every thread before the next issue into it

        r.block_sync()
        r.fill(best_v.all, INF)
        r.fill(best_i.all, 0)
        with r.if_(issuer):
            r.wait(x_full[0], phase=0)
            issue(0, 0)
        with r.loop("p", 0, ceil_div(n_tiles, 2)) as p:
            even, odd = 2 * p, 2 * p + 1
            with r.if_(issuer & (odd < n_tiles)):
                issue(odd, 1)
            rank(even, 0, p)
            with r.if_(odd < n_tiles):
                with r.if_(issuer & (2 * p + 2 < n_tiles)):
                    issue(2 * p + 2, 0)
                rank(odd, 1, p)
        r.copy(best_i.all, labels[b, n0])
    with kb.role("load", "producer", warps=1) as r:
        init_barriers(r, x_full, full, empty, acc_full)
        with r.if_(r.elected):
            r.expect_tx(x_full[0], kb.tile_bytes(s_x))
            r.tma_load(x[b, n0, 0], s_x.all, x_full[0])
            with r.loop("t", 0, n_tiles) as t:
                r.wait(empty.round(t))
                r.expect_tx(full.round(t), kb.tile_bytes(s_c))
                r.tma_load(c[b, t * block_k, 0], s_c[t % stages], full.round(t))
    return kb.build()


def _update_symbols(kb, d):
    b = kb.symbol("B", min=1, max=1 << 16, doc="independent problems")
    kk = kb.symbol("K", min=1, max=1 << 20, doc="centroids per problem")
    dd = kb.symbol("D", min=d, max=d, value=d, doc="features (the kernel is specialized to it)")
    return b, kk, dd


def update(d=128, rows=128, cols=32, dtype="bf16", target="sm_90a", name="kmeans_update"):
    """Thread t adds point n0 + t to its cluster: counts first, then the features `cols` at a time."""
    kb = KernelBuilder(name, target=target)
    b, kk, dd = _update_symbols(kb, d)
    n = kb.symbol("N", min=rows, max=1 << 26, doc="points per problem")
    kb.contract(
        math="sums[b, k, :] += sum over n with labels[b, n] = k of x[b, n, :];"
        " counts[b, k, 0] += |{n : labels[b, n] = k}|",
        reference="kernels.kmeans.reference.accumulate",
        metric="rel_l2",
        tolerance=1e-5,
    )
    kb.require(n % rows == 0, "N comes in whole %d-point blocks" % rows)
    x = kb.tensor("x", dtype, [b, n, dd], doc="points")
    labels = kb.tensor("labels", "i32", [b, n], doc="cluster of each point, in [0, K)")
    sums = kb.tensor("sums", "f32", [b, kk, dd], access="read_write", doc="per-cluster feature sums, added to")
    counts = kb.tensor("counts", "i32", [b, kk, 1], access="read_write", doc="per-cluster sizes, added to")
    kb.grid(n // rows, b)
    lab = kb.registers("lab", "i32", [rows], layout="row_per_thread", owner="main")
    one = kb.registers("one", "i32", [rows, 1], layout="row_per_thread", owner="main")
    xs = kb.registers("xs", "f32", [rows, cols], layout="row_per_thread", owner="main")
    bb, n0 = block.y, block.x * rows
    with kb.role("main", "compute", warps=rows // 32) as r:
        r.copy(labels[bb, n0], lab.all)
        r.fill(one.all, 1)
        r.atomic("add", one.all, counts[bb, 0, 0], index=lab.all, index_axis=1, aggregation="warp")
        with r.loop("j", 0, d // cols) as j:
            r.copy(x[bb, n0, j * cols], xs.all)
            r.atomic("add", xs.all, sums[bb, 0, j * cols], index=lab.all, index_axis=1, aggregation="warp")
    return kb.build()


def finalize(d=128, rows=128, cols=32, target="sm_90a", name="kmeans_finalize"):
    """Thread t finishes centroid k0 + t: sums / count, or the previous centroid when the count is 0."""
    kb = KernelBuilder(name, target=target)
    b, kk, dd = _update_symbols(kb, d)
    kb.contract(
        math="c_new[b, k, :] = counts[b, k, 0] > 0 ? sums[b, k, :] / counts[b, k, 0] : c_prev[b, k, :]",
        reference="kernels.kmeans.reference.finalize",
        metric="rel_l2",
        tolerance=1e-6,
    )
    kb.require(kk % rows == 0, "K comes in whole %d-centroid blocks" % rows)
    sums = kb.tensor("sums", "f32", [b, kk, dd], doc="per-cluster feature sums")
    counts = kb.tensor("counts", "i32", [b, kk, 1], doc="per-cluster sizes")
    c_prev = kb.tensor("c_prev", "f32", [b, kk, dd], doc="centroids before the update")
    c_new = kb.tensor("c_new", "f32", [b, kk, dd], access="write", doc="centroids after the update")
    kb.grid(kk // rows, b)
    cnt = kb.registers("cnt", "f32", [rows, 1], layout="row_per_thread", owner="main")
    div = kb.registers("div", "f32", [rows, 1], layout="row_per_thread", owner="main")
    s = kb.registers("s", "f32", [rows, cols], layout="row_per_thread", owner="main")
    old = kb.registers("old", "f32", [rows, cols], layout="row_per_thread", owner="main")
    bb, k0 = block.y, block.x * rows
    with kb.role("main", "compute", warps=rows // 32) as r:
        r.copy(counts[bb, k0, 0], cnt.all)
        r.ew("max", div.all, cnt.all, 1.0)  # an empty cluster's quotient is discarded below; keep it finite
        with r.loop("j", 0, d // cols) as j:
            r.copy(sums[bb, k0, j * cols], s.all)
            r.copy(c_prev[bb, k0, j * cols], old.all)
            r.ew("div", s.all, s.all, div.all)
            r.ew("select", s.all, cnt.all, s.all, old.all)
            r.copy(s.all, c_new[bb, k0, j * cols])
    return kb.build()
