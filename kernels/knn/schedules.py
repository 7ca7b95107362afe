"""KNN schedule in CAKE IR: exact k nearest neighbours as GEMM tiles with a top-k merge epilogue.

A block keeps 64 * consumers queries resident and streams database tiles with their
squared norms (kernels/gemm/scored.py). Each score tile x_sq[j] - 2 q.x[j] is merged
into running per-query lists of the k smallest scores; after the last tile the
query's own norm is added, so the stored distances are true squared L2 distances.
"""

from compiler.ir.builder import KernelBuilder, block
from kernels.gemm.scored import score_stream_sm90a


def topk_sm90a(d=128, k=16, block_m=128, stages=3, consumers=2, dtype="bf16", name="knn_topk_sm90a"):
    """TMA ring of database tiles + wgmma; top-k merge (k <= 32) across each query's quad per tile."""
    assert 1 <= k <= 32, "the top-k merge keeps at most 32 candidates per query in registers"
    block_q = 64 * consumers
    kb = KernelBuilder(name, target="sm_90a")
    q_n = kb.symbol("Q", min=block_q, max=1 << 24, doc="queries")
    m = kb.symbol("M", min=block_m, max=1 << 28, doc="database rows")
    dd = kb.symbol("D", min=d, max=d, value=d, doc="features (the kernel is specialized to it)")
    kk = kb.symbol("k", min=k, max=k, value=k, doc="neighbours per query (the kernel is specialized to it)")
    kb.contract(
        math="(dist[i, :], idx[i, :]) = the k smallest of q_sq[i] + x_sq[j] - 2 sum_d q[i, d] x[j, d] over j,"
        " ascending, ties to the smaller j; q_sq, x_sq are the rows' squared norms",
        reference="kernels.knn.reference.knn",
        metric="recall",
        tolerance=0.99,
    )
    kb.require(q_n % block_q == 0, "Q comes in whole %d-query blocks" % block_q)
    kb.require(m % block_m == 0, "M comes in whole %d-row tiles" % block_m)
    q = kb.tensor("q", dtype, [q_n, dd], doc="queries, features contiguous")
    x = kb.tensor("x", dtype, [m, dd], doc="database, features contiguous")
    q_sq = kb.tensor("q_sq", "f32", [q_n], doc="squared query norms, from q as stored")
    x_sq = kb.tensor("x_sq", "f32", [m], doc="squared database norms, from x as stored")
    dist = kb.tensor("dist", "f32", [q_n, kk], access="write", doc="squared distances, ascending")
    idx = kb.tensor("idx", "i32", [q_n, kk], access="write", doc="database rows of the neighbours")
    kb.grid(q_n // block_q)
    # Per-query lists: like wgmma_rows, each row's values live with the quad that owns the row.
    best_v = kb.registers("best_v", "f32", [64, k], layout="wgmma_rows", owner="mma")
    best_i = kb.registers("best_i", "i32", [64, k], layout="wgmma_rows", owner="mma")
    qs = kb.registers("qs", "f32", [64], layout="wgmma_rows", owner="mma")

    def start(r):
        r.fill(best_v.all, float("inf"))
        r.fill(best_i.all, 0)

    def tile(r, score, t):
        r.top_k(score, 1, k, t * block_m, best_v.all, best_i.all, "lanes")

    def finish(r, row0):
        r.copy(q_sq[row0], qs.all)
        r.ew("add", best_v.all, best_v.all, qs.all)
        r.copy(best_v.all, dist[row0, 0])
        r.copy(best_i.all, idx[row0, 0])

    score_stream_sm90a(kb, q, x, x_sq, (), m, d, dtype, block_m, stages, consumers, start, tile, finish)
    return kb.build()
