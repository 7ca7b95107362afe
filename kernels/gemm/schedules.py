"""GEMM schedules in CAKE IR: C[M, N] = A[M, K] @ B[N, K]^T, bf16 in, fp32 accumulate, bf16 out.

The GEMM is the IR's yardstick: the same math written for each SM family.
- sm_90a: warp-specialized; one producer warpgroup issues TMA loads into a ring of
  `stages` slots, `consumers` warpgroups each run wgmma on a 64-row slice of the
  block tile and release slots back to the producer.
- sm_80: every warp loads with cp.async (multi-stage) and computes with mma.sync.
- sm_100a: TMA ring feeding tcgen05.mma into tensor memory.
"""

from compiler.ir.builder import KernelBuilder, block
from kernels.gemm.idioms import cp_async_ring, init_barriers, swizzle_for

CONTRACT = dict(
    math="C[m, n] = sum_k A[m, k] * B[n, k]",
    reference="kernels.gemm.reference.gemm",
    metric="rel_l2",
    tolerance=1e-2,
)


def gemm_contract_ir(k, bm, bn, bk):
    """Declare the GEMM's IR contract (symbols, constraints, params) on `k`; (M, N, K, A, B, C)."""
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
    m, n, kk, a, b, c = gemm_contract_ir(k, bm, bn, bk)
    k.grid(n // bn, m // bm)
    sa = k.shared("sA", "bf16", [bm, bk], stages=stages, swizzle="128b")
    sb = k.shared("sB", "bf16", [bn, bk], stages=stages, swizzle="128b")
    acc = k.registers("acc", "f32", [64, bn], layout="wgmma_acc", owner="mma")
    full = k.mbarrier("full", arrivals=1, count=stages, tx_bytes=k.tile_bytes(sa, sb))
    empty = k.mbarrier("empty", arrivals=consumers, count=stages)
    k.pipeline("ring", stages, full, empty, [sa, sb], producer="load", consumers=["mma"])
    by, bx = block.y, block.x
    with k.role("load", "producer", warpgroups=1, registers=40) as r:
        init_barriers(r, full, empty)
        with r.if_((r.warp == 0) & r.elected):
            with r.loop("kt", 0, kk // bk) as kt:
                r.wait(empty.round(kt))
                r.expect_tx(full.round(kt), k.tile_bytes(sa, sb))
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


def gemm_sm80(bm=128, bn=128, bk=32, stages=3, warps_m=2, warps_n=4, name="gemm_bf16_sm80"):
    """cp.async ring + ldmatrix + mma.sync; warps_m x warps_n warps each own a [bm / warps_m, bn / warps_n] tile."""
    wm, wn = bm // warps_m, bn // warps_n
    assert wm % 16 == 0 and wn % 16 == 0 and bk % 16 == 0, "warp tiles are m16 x n16 multiples, k in k16 steps"
    k = KernelBuilder(name, target="sm_80")
    m, n, kk, a, b, c = gemm_contract_ir(k, bm, bn, bk)
    k.grid(n // bn, m // bm)
    sa = k.shared("sA", "bf16", [bm, bk], stages=stages, swizzle=swizzle_for(bk, "bf16"))
    sb = k.shared("sB", "bf16", [bn, bk], stages=stages, swizzle=swizzle_for(bk, "bf16"))
    fa = k.registers("fA", "bf16", [wm, 16], layout="mma_a", owner="main")
    fb = k.registers("fB", "bf16", [wn, 16], layout="mma_b", owner="main")
    acc = k.registers("acc", "f32", [wm, wn], layout="mma_acc", owner="main")
    by, bx = block.y, block.x
    with k.role("main", "compute", warps=warps_m * warps_n) as r:

        def issue(kt):
            r.cp_async(a[by * bm, kt * bk], sa[kt % stages])
            r.cp_async(b[bx * bn, kt * bk], sb[kt % stages])

        row, col = (r.warp // warps_n) * wm, (r.warp % warps_n) * wn
        r.fill(acc.all, 0.0)
        with cp_async_ring(r, "kt", kk // bk, stages, groups=2, issue=issue) as kt:
            with r.loop("ks", 0, bk // 16, unroll=bk // 16) as ks:
                r.ldmatrix(sa.tile(kt % stages, window=[(row, wm), (ks * 16, 16)]), fa.all)
                r.ldmatrix(sb.tile(kt % stages, window=[(col, wn), (ks * 16, 16)]), fb.all)
                r.mma("mma_sync", fa.all, fb.all, acc.all)
        r.copy(acc.all, c[by * bm + row, bx * bn + col])
    return k.build()


def gemm_sm100a(bm=128, bn=256, bk=64, stages=4, epilogue_cols=32, name="gemm_bf16_sm100a"):
    """TMA ring + tcgen05.mma into tensor memory, drained by the warpgroup that issues the MMAs.

    Roles: `mma` (warpgroup 0, so warp w reads TMEM lanes 32 (w % 4) ..; one elected
    thread issues every tcgen05.mma and commits each slot's release to `empty`, then
    the finished accumulator to `done`; all 128 threads then drain it) and `load`
    (one warp, one elected thread issues TMA).
    """
    assert bm == 128, "one tcgen05.mma (cta_group::1) covers 128 rows: TMEM lane r holds row r"
    assert bn % epilogue_cols == 0 and epilogue_cols % 8 == 0
    k = KernelBuilder(name, target="sm_100a")
    m, n, kk, a, b, c = gemm_contract_ir(k, bm, bn, bk)
    k.grid(n // bn, m // bm)
    sa = k.shared("sA", "bf16", [bm, bk], stages=stages, swizzle="128b")
    sb = k.shared("sB", "bf16", [bn, bk], stages=stages, swizzle="128b")
    tacc = k.tensor_memory("tacc", "f32", [bm, bn], owner="mma")
    out = k.registers("out", "f32", [bm, epilogue_cols], layout="row_per_thread", owner="mma")
    full = k.mbarrier("full", arrivals=1, count=stages, tx_bytes=k.tile_bytes(sa, sb))
    empty = k.mbarrier("empty", arrivals=1, count=stages)
    done = k.mbarrier("done", arrivals=1)
    rejoin = k.named_barrier("rejoin", threads=128)
    k.pipeline("ring", stages, full, empty, [sa, sb], producer="load", consumers=["mma"])
    by, bx = block.y, block.x
    with k.role("mma", "consumer", warpgroups=1) as r:
        r.block_sync()
        with r.if_((r.warp == 0) & r.elected):
            with r.loop("kt", 0, kk // bk) as kt:
                r.wait(full.round(kt))
                r.mma("tcgen05", sa[kt % stages], sb[kt % stages], tacc.all, accumulate=kt > 0)
                r.mma_commit(empty.round(kt))
            r.mma_commit(done[0])
        r.named_sync(rejoin)  # the issuer rejoins its warp before the warp-collective tcgen05.ld
        r.wait(done[0], phase=0)
        with r.loop("j", 0, bn // epilogue_cols) as j:
            r.tmem_load(tacc.tile(window=[(0, bm), (j * epilogue_cols, epilogue_cols)]), out.all)
            r.copy(out.all, c[by * bm, bx * bn + j * epilogue_cols])
    with k.role("load", "producer", warps=1) as r:
        init_barriers(r, full, empty, done)
        with r.if_(r.elected):
            with r.loop("kt", 0, kk // bk) as kt:
                r.wait(empty.round(kt))
                r.expect_tx(full.round(kt), k.tile_bytes(sa, sb))
                r.tma_load(a[by * bm, kt * bk], sa[kt % stages], full.round(kt))
                r.tma_load(b[bx * bn, kt * bk], sb[kt % stages], full.round(kt))
    return k.build()
