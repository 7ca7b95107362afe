"""GEMM schedules in CAKE IR: C[M, N] = A[M, K] @ B[N, K]^T, bf16 in, fp32 accumulate, bf16 out.

The GEMM is the IR's yardstick: the same math written for each SM family.
- sm_90a: warp-specialized; one producer warpgroup issues TMA loads into a ring of
  `stages` slots, `consumers` warpgroups each run wgmma on a 64-row slice of the
  block tile and release slots back to the producer.
- sm_80: every warp loads with cp.async (multi-stage) and computes with mma.sync.
- sm_100a: TMA ring feeding tcgen05.mma into tensor memory.
"""

from compiler.ir.builder import KernelBuilder, block

CONTRACT = dict(
    math="C[m, n] = sum_k A[m, k] * B[n, k]",
    reference="kernels.gemm.reference.gemm",
    metric="rel_l2",
    tolerance=1e-2,
)


def _gemm_contract(k, bm, bn, bk):
    m = k.symbol("M", min=bm, max=1 << 16, doc="rows of A and C")
    n = k.symbol("N", min=bn, max=1 << 16, doc="rows of B, columns of C")
    kk = k.symbol("K", min=bk, max=1 << 16, doc="reduction length")
    k.contract(**CONTRACT)
    k.require(m % bm == 0, "M comes in whole %d-row block tiles" % bm)
    k.require(n % bn == 0, "N comes in whole %d-column block tiles" % bn)
    k.require(kk % bk == 0, "K comes in whole %d-deep slices" % bk)
    a = k.tensor("A", "bf16", [m, kk], doc="left operand, K contiguous")
    b = k.tensor("B", "bf16", [n, kk], doc="right operand, K contiguous (C = A B^T)")
    c = k.tensor("C", "bf16", [m, n], access="write", doc="result")
    return m, n, kk, a, b, c


def gemm_sm90a(bm=128, bn=256, bk=64, stages=4, consumers=2, name="gemm_bf16_sm90a"):
    """TMA + wgmma, one producer warpgroup and `consumers` consumer warpgroups (bm = 64 * consumers)."""
    assert bm == 64 * consumers, "each consumer warpgroup owns 64 rows of the block tile"
    k = KernelBuilder(name, target="sm_90a")
    m, n, kk, a, b, c = _gemm_contract(k, bm, bn, bk)
    k.grid(n // bn, m // bm)
    sa = k.shared("sA", "bf16", [bm, bk], stages=stages, swizzle="128b")
    sb = k.shared("sB", "bf16", [bn, bk], stages=stages, swizzle="128b")
    acc = k.registers("acc", "f32", [64, bn], layout="wgmma_acc", owner="mma")
    full = k.mbarrier("full", arrivals=1, count=stages, tx_bytes=(bm + bn) * bk * 2)
    empty = k.mbarrier("empty", arrivals=consumers, count=stages)
    k.pipeline("ring", stages, full, empty, [sa, sb], producer="load", consumers=["mma"])
    by, bx = block.y, block.x
    with k.role("load", "producer", warpgroups=1, registers=40) as r:
        with r.if_(r.thread == 0):
            r.mbarrier_init(full)
            r.mbarrier_init(empty)
            r.fence("mbarrier_init")
        r.block_sync()
        with r.if_((r.warp == 0) & r.elected):
            with r.loop("kt", 0, kk // bk) as kt:
                r.wait(empty.round(kt))
                r.expect_tx(full.round(kt), (bm + bn) * bk * 2)
                r.tma_load(a[by * bm, kt * bk], sa[kt % stages], full.round(kt))
                r.tma_load(b[bx * bn, kt * bk], sb[kt % stages], full.round(kt))
    with k.role("mma", "consumer", warpgroups=consumers, registers=232) as r:
        r.block_sync()
        with r.loop("kt", 0, kk // bk) as kt:
            r.wait(full.round(kt))
            r.mma(
                "wgmma",
                sa.tile(kt % stages, window=[(r.warpgroup * 64, 64), (0, bk)]),
                sb[kt % stages],
                acc.all,
                accumulate=kt > 0,
            )
            r.mma_wait(0)
            with r.if_((r.warp % 4 == 0) & r.elected):
                r.arrive(empty.round(kt))
        r.copy(acc.all, c[by * bm + r.warpgroup * 64, bx * bn])
    return k.build()
