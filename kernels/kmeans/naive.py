"""The naive Flash-KMeans assignment: the plainest correct sm_90a schedule, where the agent starts.

One warpgroup does everything, one step after the other: it copies its 64 points into
shared memory with plain loads, then for each centroid tile copies the tile and its
squared norms, meets at a block barrier, lets each warp score its 16 points with
mma.sync, folds the tile into a running per-point arg-min, and meets again before the
next tile overwrites the one just read. No roles, no asynchronous copies, no ring, no
wgmma: every one of those is a transformation away (agent/transforms), which is the
point of starting here.
"""

import math

from compiler.ir.builder import KernelBuilder, block
from kernels.gemm.idioms import swizzle_for
from kernels.kmeans.schedules import assign_contract_ir

POINTS = 64  # one warpgroup, 16 points per warp (mma.sync m16)


def assign_naive(d=128, block_k=128, dtype="bf16", name="kmeans_assign_naive"):
    """labels = argmin_k (c_sq[k] - 2 x.c[k]) with one compute warpgroup, plain loads and mma.sync."""
    kb = KernelBuilder(name, target="sm_90a")
    n, kk, x, c, c_sq, labels = assign_contract_ir(kb, d, POINTS, block_k, dtype)
    swizzle = swizzle_for(d, dtype)
    s_x = kb.shared("sX", dtype, [POINTS, d], swizzle=swizzle)
    s_c = kb.shared("sC", dtype, [block_k, d], swizzle=swizzle)
    s_q = kb.shared("sCsq", "f32", [block_k])
    score = kb.registers("score", "f32", [16, block_k], layout="mma_acc", owner="main")
    best_v = kb.registers("best_v", "f32", [16], layout="mma_rows", owner="main")
    best_i = kb.registers("best_i", "i32", [16], layout="mma_rows", owner="main")
    b, n0 = block.y, block.x * POINTS
    with kb.role("main", "compute", warpgroups=1) as r:
        r.fill(best_v.all, math.inf)
        r.fill(best_i.all, 0)
        r.copy(x[b, n0, 0], s_x.all)
        with r.loop("t", 0, kk // block_k) as t:
            r.copy(c[b, t * block_k, 0], s_c.all)
            r.copy(c_sq[b, t * block_k], s_q.all)
            r.block_sync()  # the tile (and, in round 0, the points) are in shared memory
            r.mma("mma_sync", s_x.tile(window=[(r.warp * 16, 16), (0, d)]), s_c.all, score.all, accumulate=0)
            r.ew("fma", score.all, score.all, -2.0, s_q.all)
            r.arg_reduce("argmin", score.all, 1, t * block_k, best_v.all, best_i.all, "lanes", accumulate=True)
            r.block_sync()  # every warp is done with the tile before the next one overwrites it
        r.copy(best_i.all, labels[b, n0 + r.warp * 16])
    return kb.build()
