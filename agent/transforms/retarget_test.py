"""retarget: a kernel moves to a target with all of its target's instruction families."""

import pytest

from agent.ir_edit import NotApplicable
from agent.transforms import retarget, testing


def test_property_sm80_schedules_move_to_sm90a_and_sm100a():
    applied = testing.check("retarget", [{"target": "sm_90a"}, {"target": "sm_100a"}])
    # sm_90a programs do not move to sm_100a: it has no wgmma (and these portable ones target sm_90a).
    assert {(p, a["target"]) for p, a, _ in applied} == {
        (p, t) for p in ("gemm_sm80", "kmeans_assign_sm80", "knn_rows_sm80", "knn_filter_sm80")
        for t in ("sm_90a", "sm_100a")}


@pytest.mark.parametrize("program, target, why", [
    ("gemm_sm90a", "sm_100a", "lacks wgmma"),
    ("gemm_sm90a", "sm_80", "lacks"),
    ("gemm_sm90a", "sm_90a", "already"),
    ("gemm_sm90a", "sm_70", "unknown target"),
])
def test_not_applicable_says_why(program, target, why):
    with pytest.raises(NotApplicable, match=why):
        retarget.retarget(testing.programs()[program], target)
