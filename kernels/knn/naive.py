"""The naive KNN score kernel: the plainest correct sm_90a schedule, where the agent starts.

One warpgroup does everything, one step after the other: it copies its 64 queries into
shared memory with plain loads, then for each database tile of its range copies the
tile (and its norms), meets at a block barrier, lets each warp score its 16 queries
with mma.sync, turns the scores into the ranking score, inserts them into each
thread's running top-k lists, and meets again before the next tile overwrites the one
just read; after the range the lanes sharing a list merge once and the warp writes its
queries' partial list. No roles, no asynchronous copies, no ring, no wgmma, no
persistence: every one of those is a transformation away (agent/transforms).

It implements the score kernels' contract (schedules._score_contract: one partial list
per query and range, P >= S), so the merge kernel and the runtime binding
(kernels/knn/binding.py) are those of every score kernel. Plain loads are bounds-checked
(rows past M or Q and features past D read as zero) and the top-k skips indices past M,
so any Q, M and D <= d are admitted.
"""

from compiler.ir.builder import KernelBuilder, block
from compiler.ir.expr import ceil_div
from kernels.gemm.idioms import swizzle_for
from kernels.knn.schedules import INF, _check, _epilogue, _score_contract, largest

QUERIES = 64  # one warpgroup, 16 queries per warp (mma.sync m16)


def rows_naive(d=128, block_n=64, k=10, metric="l2", dtype="bf16", name="knn_rows_naive"):
    """Partial top-k lists of 64 queries per block over one database range: one warpgroup, plain loads, mma.sync."""
    _check(metric, k, dtype)
    kb = KernelBuilder(name, target="sm_90a")
    b, q_n, m, dd, s, t, q, x, col, part_v, part_i, _ = _score_contract(kb, d, k, metric, False, 1, dtype)
    kb.require(s * t * block_n >= m, "the ranges cover the database")
    kb.grid(ceil_div(q_n, QUERIES), s, b)
    swizzle = swizzle_for(d, dtype)
    s_q = kb.shared("sQ", dtype, [QUERIES, d], swizzle=swizzle)
    s_x = kb.shared("sX", dtype, [block_n, d], swizzle=swizzle)
    s_col = kb.shared("sCol", "f32", [block_n]) if col is not None else None
    acc = kb.registers("acc", "f32", [16, block_n], layout="mma_acc", owner="main")
    best_v = kb.registers("best_v", "f32", [16, k], layout="mma_rows", owner="main")
    best_i = kb.registers("best_i", "i32", [16, k], layout="mma_rows", owner="main")
    bi, si, q0 = block.z, block.y, block.x * QUERIES
    with kb.role("main", "compute", warpgroups=1) as r:
        r.fill(best_v.all, -INF if largest(metric) else INF)
        r.fill(best_i.all, -1)
        r.copy(q[bi, q0, 0], s_q.all)
        with r.loop("j", 0, t) as j:
            row0 = (si * t + j) * block_n
            r.copy(x[bi, row0, 0], s_x.all)
            if s_col is not None:
                r.copy(col[bi, row0], s_col.all)
            r.block_sync()  # the tile (and, in round 0, the queries) are in shared memory
            r.mma("mma_sync", s_q.tile(window=[(r.warp * 16, 16), (0, d)]), s_x.all, acc.all, accumulate=0)
            if s_col is not None:
                _epilogue(r, metric, acc.all, s_col.all)
            r.top_k(acc.all, 1, k, row0, best_v.all, best_i.all, "thread", largest=largest(metric), index_limit=m)
            r.block_sync()  # every warp is done with the tile before the next one overwrites it
        r.top_k_merge(best_v.all, best_i.all, k, "lanes", largest=largest(metric))
        r.copy(best_v.all, part_v[bi, si, q0 + r.warp * 16, 0])
        r.copy(best_i.all, part_i[bi, si, q0 + r.warp * 16, 0])
    return kb.build()
