"""GEMM schedules: each family's instructions, and parameters that reach the IR."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.paths import walk
from kernels.gemm.schedules import gemm_sm80, gemm_sm90a, gemm_sm100a


def _ops(kernel):
    return [node for _, node in walk(kernel) if isinstance(node, ir_pb2.Op)]


def _kinds(kernel):
    return {op.WhichOneof("kind") for op in _ops(kernel)}


def _mma_kinds(kernel):
    return {op.mma.kind for op in _ops(kernel) if op.HasField("mma")}


@pytest.mark.parametrize(
    "build, target, uses, avoids, mma",
    [
        (gemm_sm80, ir_pb2.TARGET_SM_80, {"cp_async", "cp_async_wait", "ldmatrix"}, {"tma_load", "mbarrier_wait"}, ir_pb2.MMA_KIND_MMA_SYNC),
        (gemm_sm90a, ir_pb2.TARGET_SM_90A, {"tma_load", "mbarrier_expect_tx", "mma_wait"}, {"cp_async", "tmem_load"}, ir_pb2.MMA_KIND_WGMMA),
        (gemm_sm100a, ir_pb2.TARGET_SM_100A, {"tma_load", "mma_commit", "tmem_load"}, {"cp_async", "mma_wait"}, ir_pb2.MMA_KIND_TCGEN05),
    ],
)
def test_each_family_uses_its_instructions(build, target, uses, avoids, mma):
    kernel = build()
    assert kernel.target == target
    assert uses <= _kinds(kernel) and not avoids & _kinds(kernel)
    assert _mma_kinds(kernel) == {mma}


def test_sm80_tiles_swizzle_and_ring_waits_follow_the_parameters():
    k = gemm_sm80(bm=64, bn=128, bk=64, stages=4, warps_m=2, warps_n=2)
    regions = {r.name: r for r in k.regions}
    assert list(regions["sA"].shape) == [64, 64] and regions["sA"].stages == 4
    assert regions["sA"].swizzle == ir_pb2.SWIZZLE_128B
    assert list(regions["acc"].shape) == [32, 64] and list(regions["fB"].shape) == [64, 16]
    assert k.roles[0].warps == 4
    waits = sorted(op.cp_async_wait.pending for op in _ops(k) if op.HasField("cp_async_wait"))
    assert waits == [0, 4]  # two groups per round, two rounds in flight; all at the tail
    assert gemm_sm80(bk=32).regions[0].swizzle == ir_pb2.SWIZZLE_64B
    assert [op.cp_async_wait.pending for op in _ops(gemm_sm80(stages=2)) if op.HasField("cp_async_wait")] == [0]


def test_sm100a_drains_tensor_memory_in_epilogue_column_chunks():
    k = gemm_sm100a(bn=128, epilogue_cols=64)
    tacc = next(r for r in k.regions if r.name == "tacc")
    assert tacc.space == ir_pb2.MEMORY_SPACE_TENSOR and list(tacc.shape) == [128, 128]
    loads = [op.tmem_load for op in _ops(k) if op.HasField("tmem_load")]
    assert [w.size for w in loads[0].src.window] == [128, 64]
    assert [r.name for r in k.roles] == ["mma", "load"] and k.roles[0].warpgroups == 1


def test_sm90a_consumers_own_64_rows_each():
    k = gemm_sm90a(bm=64, consumers=1, bn=128, stages=3)
    assert k.roles[1].warpgroups == 1
    assert next(b for b in k.barriers if b.name == "empty").arrivals == 1
    with pytest.raises(AssertionError):
        gemm_sm90a(bm=128, consumers=1)
