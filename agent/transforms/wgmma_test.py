"""mma_to_wgmma: warp mma.sync tiles become warpgroup wgmma tiles with their fragment layouts."""

import pytest
from cake.ir.v1 import ir_pb2

from agent.ir_edit import NotApplicable, walk_ops
from agent.transforms import testing, wgmma
from compiler.ir.text import print_kernel
from kernels.kmeans.naive import assign_naive


def test_property_every_warp_row_mma_sync_becomes_wgmma():
    applied = testing.applied_to(testing.check("mma_to_wgmma", [{}]))
    for seed in ("kmeans_assign_naive", "gemm_naive", "kmeans_assign_sm80+retarget"):
        assert [p for p in applied if p.startswith(seed)], seed
    assert "kmeans_assign_naive" in applied  # plain loads: fenced for the async proxy
    assert not [p for p in applied if p.startswith("gemm_sm80")]  # ldmatrix fragments: not this shape


def test_fragments_change_layout_and_rows_move_by_warpgroup():
    out = wgmma.mma_to_wgmma(assign_naive())
    regions = {r.name: r for r in out.regions}
    assert (regions["score"].layout, list(regions["score"].shape)) == (ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC, [64, 128])
    assert (regions["best_i"].layout, list(regions["best_i"].shape)) == (ir_pb2.FRAGMENT_LAYOUT_WGMMA_ROWS, [64])
    text = print_kernel(out)
    assert "a: sX[warpgroup * 64 +: 64, 0 +: 128]" in text and "labels[block.y, block.x * 64 + warpgroup * 64]" in text
    kinds = [op.WhichOneof("kind") for _, _, op in walk_ops(out.roles[0].body)]
    assert kinds[kinds.index("mma") + 1] == "mma_wait"
    assert kinds.count("fence") == 2  # plain copies write the operands: fenced before both block barriers


def test_not_applicable_says_why():
    programs = testing.programs()
    with pytest.raises(NotApplicable, match="no wgmma"):
        wgmma.mma_to_wgmma(programs["kmeans_assign_sm80"])
    with pytest.raises(NotApplicable, match="not a shared tile"):
        wgmma.mma_to_wgmma(programs["gemm_sm80+retarget"])
    with pytest.raises(NotApplicable, match="no role runs mma.sync"):
        wgmma.mma_to_wgmma(programs["kmeans_assign_sm90a"])
    k = assign_naive()
    k.roles[0].ClearField("warpgroups")
    k.roles[0].warps = 2
    with pytest.raises(NotApplicable, match="not whole warpgroups"):
        wgmma.mma_to_wgmma(k)
