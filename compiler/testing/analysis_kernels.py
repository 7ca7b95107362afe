"""Small schedules the analysis tests measure: a memory-bound copy, an sm_80 mma.sync loop,
a persistent tile walk and a math-heavy row kernel. Not kernels to ship: each
exercises counting rules whose expected numbers are easy to derive by hand.
"""

from compiler.ir.builder import KernelBuilder, block


def _contract(k, rows):
    n = k.symbol("N", min=rows, max=1 << 30, doc="rows")
    k.contract(math="Y[n, c] = f(X[n, c])", reference="tests.none", metric="exact", tolerance=0.0)
    k.require(n % rows == 0, "N comes in whole %d-row tiles" % rows)
    return n


def copy_rows(target="sm_90a", rows=128, cols=64):
    """Y = X, f32 [N, cols]: each thread of one 4-warp role loads and stores one row."""
    k = KernelBuilder("copy_rows", target=target)
    n = _contract(k, rows)
    x = k.tensor("X", "f32", [n, cols])
    y = k.tensor("Y", "f32", [n, cols], access="write")
    k.grid(n // rows)
    t = k.registers("t", "f32", [rows, cols], layout="row_per_thread", owner="copy")
    with k.role("copy", "compute", warps=rows // 32) as r:
        r.copy(x[block.x * rows, 0], t.all)
        r.copy(t.all, y[block.x * rows, 0])
    return k.build()


def softmax_rows(target="sm_90a", rows=128, cols=64):
    """Y = exp(X - rowmax(X)), f32 [N, cols], one row per thread: fp32 and SFU work."""
    k = KernelBuilder("softmax_rows", target=target)
    n = _contract(k, rows)
    x = k.tensor("X", "f32", [n, cols])
    y = k.tensor("Y", "f32", [n, cols], access="write")
    k.grid(n // rows)
    t = k.registers("t", "f32", [rows, cols], layout="row_per_thread", owner="rows")
    mx = k.registers("mx", "f32", [rows], layout="row_per_thread", owner="rows")
    with k.role("rows", "compute", warps=rows // 32) as r:
        r.copy(x[block.x * rows, 0], t.all)
        r.reduce("max", t.all, mx.all, axis=1, scope="thread")
        r.ew("sub", t.all, t.all, mx.all)
        r.ew("exp", t.all, t.all)
        r.copy(t.all, y[block.x * rows, 0])
    return k.build()


def mma_sync_loop(bm=64, bn=64, bk=32, warps=4):
    """sm_80 C += A B^T over K with cp.async into shared, ldmatrix and mma.sync (one stage)."""
    k = KernelBuilder("mma_sync_loop", target="sm_80")
    m = k.symbol("M", min=bm, max=1 << 16)
    n = k.symbol("N", min=bn, max=1 << 16)
    kk = k.symbol("K", min=bk, max=1 << 16)
    k.contract(math="C = A B^T", reference="tests.none", metric="rel_l2", tolerance=1e-2)
    a = k.tensor("A", "bf16", [m, kk])
    b = k.tensor("B", "bf16", [n, kk])
    c = k.tensor("C", "f32", [m, n], access="write")
    k.grid(n // bn, m // bm)
    sa = k.shared("sA", "bf16", [bm, bk])
    sb = k.shared("sB", "bf16", [bn, bk])
    fa = k.registers("fa", "bf16", [bm // warps, bk], layout="mma_a", owner="mma")
    fb = k.registers("fb", "bf16", [bn, bk], layout="mma_b", owner="mma")
    acc = k.registers("acc", "f32", [bm // warps, bn], layout="mma_acc", owner="mma")
    with k.role("mma", "compute", warps=warps) as r:
        with r.loop("kt", 0, kk // bk) as kt:
            r.cp_async(a[block.y * bm, kt * bk], sa.all)
            r.cp_async(b[block.x * bn, kt * bk], sb.all)
            r.cp_async_wait(0)
            r.block_sync()
            r.ldmatrix(sa.tile(window=[(r.warp * (bm // warps), bm // warps)]), fa.all)
            r.ldmatrix(sb.all, fb.all)
            r.mma("mma_sync", fa.all, fb.all, acc.all, accumulate=kt > 0)
            r.block_sync()
        r.copy(acc.all, c[block.y * bm + r.warp * (bm // warps), block.x * bn])
    return k.build()


def persistent_rows(rows=128, cols=64, blocks_per_sm=2):
    """copy_rows as a persistent walk over N / rows tiles, with a prologue on the first tile."""
    k = KernelBuilder("persistent_rows", target="sm_90a")
    n = _contract(k, rows)
    x = k.tensor("X", "f32", [n, cols])
    y = k.tensor("Y", "f32", [n, cols], access="write")
    k.persistent(min_blocks_per_sm=blocks_per_sm)
    t = k.registers("t", "f32", [rows, cols], layout="row_per_thread", owner="copy")
    with k.role("copy", "compute", warps=rows // 32) as r:
        with r.tiles("tile", n // rows, counter="i") as (tile, i):
            with r.if_(i == 0):
                r.fill(t.all, 0.0)
            r.copy(x[tile * rows, 0], t.all)
            r.copy(t.all, y[tile * rows, 0])
    return k.build()
