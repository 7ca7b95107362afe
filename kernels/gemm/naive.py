"""The naive GEMM: the plainest correct sm_90a schedule, where the agent starts.

C[M, N] = A[M, K] @ B[N, K]^T with one compute warpgroup: for each K slice it copies
a [64, bk] tile of A and a [bn, bk] tile of B into shared memory with plain loads,
meets at a block barrier, lets each warp multiply its 16 rows by the whole B tile with
mma.sync into its accumulators, and meets again before the next slice overwrites the
tiles. The accumulators are stored straight to C. No roles, rings, TMA or wgmma.
"""

from compiler.ir.builder import KernelBuilder, block
from kernels.gemm.idioms import swizzle_for
from kernels.gemm.schedules import gemm_contract_ir

ROWS = 64  # one warpgroup, 16 rows per warp (mma.sync m16)


def gemm_naive(bn=128, bk=64, name="gemm_bf16_naive"):
    """One warpgroup; a [64, bn] block tile of C per block, bk-deep slices of K through plain loads."""
    k = KernelBuilder(name, target="sm_90a")
    m, n, kk, a, b, c = gemm_contract_ir(k, ROWS, bn, bk)
    k.grid(n // bn, m // ROWS)
    sa = k.shared("sA", "bf16", [ROWS, bk], swizzle=swizzle_for(bk, "bf16"))
    sb = k.shared("sB", "bf16", [bn, bk], swizzle=swizzle_for(bk, "bf16"))
    acc = k.registers("acc", "f32", [16, bn], layout="mma_acc", owner="main")
    by, bx = block.y, block.x
    with k.role("main", "compute", warpgroups=1) as r:
        with r.loop("kt", 0, kk // bk) as kt:
            r.copy(a[by * ROWS, kt * bk], sa.all)
            r.copy(b[bx * bn, kt * bk], sb.all)
            r.block_sync()  # both tiles are in shared memory
            r.mma("mma_sync", sa.tile(window=[(r.warp * 16, 16), (0, bk)]), sb.all, acc.all, accumulate=kt > 0)
            r.block_sync()  # every warp is done with the tiles before the next slice overwrites them
        r.copy(acc.all, c[by * ROWS + r.warp * 16, bx * bn])
    return k.build()
