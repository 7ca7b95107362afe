"""loads_to_tma / tma_to_loads: plain and cp.async loads become a TMA ring in their own role, and back."""

import pytest
from cake.ir.v1 import ir_pb2

from agent.ir_edit import NotApplicable, walk_ops
from agent.transforms import testing, tma_ring
from compiler.ir.text import print_kernel
from kernels.kmeans.naive import assign_naive

STAGES = [{"stages": 1}, {"stages": 3}]


def test_property_every_plain_or_cp_async_loop_becomes_a_ring_that_verifies():
    applied = testing.applied_to(testing.check("loads_to_tma", STAGES))
    # The naive seeds (plain loads) and the sm_80 schedules retargeted to sm_90a (cp.async rings).
    assert {"kmeans_assign_naive", "gemm_naive", "kmeans_assign_sm80+retarget", "gemm_sm80+retarget"} <= set(applied)
    assert not [p for p in applied if "loads_to_tma" in p or "sm90a" in p or "sm100a" in p]


def test_property_single_role_rings_go_back_to_plain_loads():
    applied = testing.check("tma_to_loads", [{}])
    assert {p for p, _, _ in applied} >= {"kmeans_assign_naive+loads_to_tma", "gemm_naive+loads_to_tma"}
    programs = testing.programs()
    for program, _, out in applied:
        if program.startswith(("kmeans_assign_naive", "gemm_naive")):
            assert out == programs[program.split("+")[0]]  # the naive seed, exactly


def test_the_ring_is_filled_by_thread_zero_ahead_of_its_readers():
    text = print_kernel(tma_ring.loads_to_tma(assign_naive(), 3))
    assert "cond: thread == 0 && t + 2 < K / 128" in text
    assert "mbarrier_wait { barrier: empty@round(t + 2) }" in text
    assert "mbarrier_expect_tx { barrier: full@round(t + 2)  bytes: 33280 }" in text  # 128 x 128 bf16 + 128 f32
    assert "mbarrier_arrive { barrier: empty@round(t) }" in text
    assert "block_sync" in text and text.count("block_sync") == 1  # only the barrier set-up's
    out = tma_ring.loads_to_tma(assign_naive(), 3)
    ring = out.pipelines[0]
    assert (ring.stages, list(ring.regions), ring.producer, list(ring.consumers)) == (3, ["sC", "sCsq"], "main", ["main"])
    assert {b.name: (b.count, b.arrivals) for b in out.barriers} == {"sX_full": (1, 1), "full": (3, 1), "empty": (3, 128)}


def test_cp_async_rings_keep_their_regions_and_lose_their_waits():
    programs = testing.programs()
    out = tma_ring.loads_to_tma(programs["kmeans_assign_sm80+retarget"], 3)
    kinds = {op.WhichOneof("kind") for role in out.roles for _, _, op in walk_ops(role.body)}
    assert "cp_async" not in kinds and "cp_async_wait" not in kinds and "tma_load" in kinds




@pytest.mark.parametrize("program, why", [
    ("kmeans_assign_sm80", "no TMA"),
    ("kmeans_assign_sm90a", "roles"),
    ("kmeans_update", "no loop of plain or cp.async tile loads"),
])
def test_not_applicable_says_why(program, why):
    with pytest.raises(NotApplicable, match=why):
        tma_ring.loads_to_tma(testing.programs()[program], 2)


def test_a_loop_that_writes_other_shared_memory_is_left_alone():
    k = assign_naive()
    role = k.roles[0]
    loop = next(op.loop for op in role.body if op.WhichOneof("kind") == "loop")
    loop.body.insert(3, ir_pb2.Op(fill=ir_pb2.Fill(dst=ir_pb2.TileRef(region="sX"), value=0.0)))
    with pytest.raises(NotApplicable, match="writes shared region 'sX' besides its loads"):
        tma_ring.loads_to_tma(k, 2)
