"""Score streams: the sm_90a main loop of the KMeans assignment seed schedule.

A block keeps a tile of `rows` (points, queries) resident in shared memory, loaded
once by TMA, and streams tiles of `cols` (centroids, database rows) with their
precomputed squared norms through a TMA ring. Each consumer warpgroup multiplies its
64 rows with the column tile on wgmma and turns the product into the ranking score

    score[i, j] = col_sq[j] - 2 rows[i] . cols[j]

(the squared distance minus the row's own norm, which no ranking over j needs), then
hands the tile to the kernel's epilogue (a running arg-min). (KNN's score kernels,
kernels/knn/schedules.py, add interleaved warpgroups, D slabs and seeded lists.)
"""

from compiler.ir.builder import block
from kernels.gemm.idioms import init_barriers, swizzle_for


def score_stream_sm90a(
    kb, rows, cols, col_sq, lead, n_cols, d, dtype, block_cols, stages, consumers, start, tile_epilogue, finish
):
    """Declare the stream's regions, barriers and roles on KernelBuilder `kb`.

    rows/cols/col_sq are tensor handles indexed as rows[*lead, i, 0], cols[*lead, j, 0],
    col_sq[*lead, j]; block.x picks the 64 * consumers resident rows, `n_cols` is the
    symbolic column count. Each consumer warpgroup calls start(r) before the first
    tile (to initialise its running results); for column tile t it calls
    tile_epilogue(r, score, t) on the [64, block_cols] wgmma_acc score tile (already
    the ranking score, slot released); after the last tile, finish(r, row0) with row0
    the first row this warpgroup owns.
    """
    block_rows = 64 * consumers
    swizzle = swizzle_for(d, dtype)
    s_rows = kb.shared("sRows", dtype, [block_rows, d], swizzle=swizzle)
    s_cols = kb.shared("sCols", dtype, [block_cols, d], stages=stages, swizzle=swizzle)
    s_col_sq = kb.shared("sColSq", "f32", [block_cols], stages=stages)
    score = kb.registers("score", "f32", [64, block_cols], layout="wgmma_acc", owner="mma")
    rows_bytes = kb.tile_bytes(s_rows)
    tile_bytes = kb.tile_bytes(s_cols, s_col_sq)
    rows_full = kb.mbarrier("rows_full", arrivals=1, tx_bytes=rows_bytes)
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=tile_bytes)
    # Every consumer thread arrives: each reads its own sColSq entries after the wgmma.
    empty = kb.mbarrier("empty", arrivals=consumers * 128, count=stages)
    kb.pipeline("ring", stages, full, empty, [s_cols, s_col_sq], producer="load", consumers=["mma"])
    row0 = block.x * block_rows
    n_tiles = n_cols // block_cols
    with kb.role("load", "producer", warpgroups=1, registers=40) as r:
        init_barriers(r, rows_full, full, empty)
        with r.if_((r.warp == 0) & r.elected):
            r.expect_tx(rows_full[0], rows_bytes)
            r.tma_load(rows[(*lead, row0, 0)], s_rows.all, rows_full[0])
            with r.loop("t", 0, n_tiles) as t:
                r.wait(empty.round(t))
                r.expect_tx(full.round(t), tile_bytes)
                r.tma_load(cols[(*lead, t * block_cols, 0)], s_cols[t % stages], full.round(t))
                r.tma_load(col_sq[(*lead, t * block_cols)], s_col_sq[t % stages], full.round(t))
    with kb.role("mma", "consumer", warpgroups=consumers, registers=232) as r:
        r.block_sync()
        start(r)
        r.wait(rows_full[0], phase=0)
        with r.loop("t", 0, n_tiles) as t:
            r.wait(full.round(t))
            r.mma("wgmma", s_rows.tile(window=[(r.warpgroup * 64, 64), (0, d)]), s_cols[t % stages], score.all, accumulate=0)
            r.mma_wait(0)
            r.ew("fma", score.all, score.all, -2.0, s_col_sq[t % stages])
            r.fence("proxy_async")  # the ld.shared of sColSq complete before the TMA refill (CAKE-DATA-011)
            r.arrive(empty.round(t))
            tile_epilogue(r, score.all, t)
        finish(r, row0 + r.warpgroup * 64)
