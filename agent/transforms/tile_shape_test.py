"""tile_shape: the block tile grows or shrinks along one axis, with its barriers, bytes and warpgroups."""

import pytest

from agent import rewrites
from agent.ir_edit import NotApplicable
from agent.transforms import axes, testing, tile_shape, tma_ring, wgmma
from compiler.ir.text import print_kernel
from kernels.gemm.naive import gemm_naive
from kernels.kmeans.naive import assign_naive

SIZES = [{"symbol": s, "size": n} for s in ("M", "N", "K") for n in (64, 128, 256)]


def test_property_every_tiled_axis_reshapes():
    applied = testing.check("tile_shape", SIZES)
    seen = {(p.split("+")[0], a["symbol"]) for p, a, _ in applied}
    assert {("kmeans_assign_naive", "N"), ("kmeans_assign_naive", "K"), ("gemm_naive", "M"), ("gemm_naive", "N"),
            ("gemm_naive", "K"), ("gemm_sm90a", "K"), ("kmeans_assign_sm90a", "K")} <= seen
    # Rows split over consumer warpgroups follow the block, in grid and persistent launches alike.
    assert ("kmeans_assign_sm90a", "N") in seen
    assert [p for p, a, _ in applied if p.endswith("persistent") and a["symbol"] == "N" and "kmeans" in p]
    # TMEM lanes and fragment rows are not reshaped: gemm_sm100a's M is 128 lanes of tensor memory.
    assert ("gemm_sm100a", "M") not in seen


def test_more_rows_mean_more_consumer_warpgroups_and_bytes():
    k = wgmma.mma_to_wgmma(tma_ring.loads_to_tma(assign_naive(), 2))
    out = tile_shape.tile_shape(k, "N", 256)
    assert out.roles[0].warpgroups == 4
    text = print_kernel(out)
    assert "N % 256 == 0" in text and "grid: [N / 256, B]" in text and "symbol N { min: 256" in text
    assert "x[block.y, block.x * 256, 0]" in text and "labels[block.y, block.x * 256 + warpgroup * 64]" in text
    bars = {b.name: b for b in out.barriers}
    assert bars["sX_full"].tx_bytes == 256 * 128 * 2 and bars["empty"].arrivals == 4 * 128
    assert "mbarrier_expect_tx { barrier: sX_full[0]  bytes: 65536 }" in text


def test_wider_centroid_tiles_change_the_ring_and_the_accumulator():
    out = tile_shape.tile_shape(tma_ring.loads_to_tma(assign_naive(), 2), "K", 64)
    regions = {r.name: list(r.shape) for r in out.regions}
    assert regions["sC"] == [64, 128] and regions["sCsq"] == [64] and regions["score"] == [16, 64]
    text = print_kernel(out)
    assert "index_base: t * 64" in text and "loop t in 0 .. K / 64" in text and "(t + 1) * 64" in text
    assert next(b for b in out.barriers if b.name == "full").tx_bytes == 64 * 128 * 2 + 64 * 4


def test_the_k_axis_of_a_gemm_keeps_its_swizzle_legal():
    out = tile_shape.tile_shape(gemm_naive(), "K", 32)
    assert {r.name: r.swizzle for r in out.regions}["sA"] == 2  # 64-byte rows: SWIZZLE_64B


def test_axes_tie_tiles_to_their_tensor_dimensions():
    ax = axes.axis(assign_naive(), "K")
    assert {(n[1], n[2]) for n in ax.dims if n[0] == "r"} == {("sC", 0), ("sCsq", 0), ("score", 1)}
    rows = axes.axis(wgmma.mma_to_wgmma(assign_naive()), "N")
    assert {(n[1], n[2]) for n in rows.dims if n[0] == "r"} == {("sX", 0)}
    assert [(s.region, s.unit, s.size) for s in rows.slices] == [("sX", "warpgroup", 64)]


def test_a_persistent_tile_index_over_two_axes_of_one_step_is_ambiguous():
    k = testing.programs()["gemm_sm90a+persistent"]
    k2 = tile_shape.tile_shape(testing.programs()["gemm_sm90a"], "M", 256)  # bm = bn = 256
    with pytest.raises(NotApplicable, match="loop 'tile' walks N and M in steps of 256 alike"):
        tile_shape.tile_shape(rewrites.persistent(k2), "N", 128)
    assert tile_shape.tile_shape(k, "M", 256)  # 128-row and 256-column steps are told apart


@pytest.mark.parametrize("symbol, size, why", [
    ("D", 64, "specialized"),
    ("Q", 64, "no shape symbol"),
    ("N", 64, "64 already"),
    ("N", 96, "not a whole number of warpgroups"),
])
def test_not_applicable_says_why(symbol, size, why):
    k = wgmma.mma_to_wgmma(assign_naive())
    with pytest.raises(NotApplicable, match=why):
        tile_shape.tile_shape(k, symbol, size)
