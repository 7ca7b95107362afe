"""ring_depth: any ring, the resident tile's included, gets deeper or shallower."""

import pytest

from agent.ir_edit import NotApplicable
from agent.transforms import ring_depth, testing, tma_ring
from compiler.ir.text import print_kernel
from kernels.kmeans.naive import assign_naive

DEPTHS = [{"stages": 1}, {"stages": 2}, {"stages": 4}]


def test_property_every_ring_changes_depth():
    applied = testing.check("ring_depth", DEPTHS)
    programs = {p for p, _, _ in applied}
    assert {"kmeans_assign_sm90a", "gemm_sm90a", "knn_rows_sm90a", "kda_chain_sm90a",
            "kmeans_assign_sm90a_tuned", "kmeans_assign_naive+loads_to_tma"} <= programs
    for _, args, out in applied:
        p = out.pipelines[0]
        assert p.stages == args["stages"]
        assert {r.stages for r in out.regions if r.name in p.regions} == {args["stages"]}


def test_property_the_resident_ring_of_persistent_kernels_deepens():
    applied = testing.check("ring_depth", [{"pipeline": "sRows_ring", "stages": 2}, {"pipeline": "sX_ring", "stages": 2}])
    assert {p for p, _, _ in applied} >= {"kmeans_assign_sm90a+persistent",
                                          "kmeans_assign_naive+loads_to_tma+split_producer+mma_to_wgmma+persistent"}
    text = print_kernel(next(o for p, _, o in applied if p == "kmeans_assign_sm90a+persistent"))
    assert "dst: sRows@(it % 2)" in text and "a: sRows@(it % 2)[warpgroup * 64 +: 64" in text


def test_a_single_role_ring_prefetches_stages_minus_one_rounds():
    k = tma_ring.loads_to_tma(assign_naive(), 3)
    for stages in (1, 2, 5):
        assert ring_depth.ring_depth(k, None, stages) == tma_ring.loads_to_tma(assign_naive(), stages)


def test_not_applicable_says_why():
    k = tma_ring.loads_to_tma(assign_naive(), 3)
    with pytest.raises(NotApplicable, match="3 stages already"):
        ring_depth.ring_depth(k, None, 3)
    with pytest.raises(NotApplicable, match="no pipeline 'nope'"):
        ring_depth.ring_depth(k, "nope", 2)
    with pytest.raises(NotApplicable, match="at least one stage"):
        ring_depth.ring_depth(k, None, 0)
