"""Tests of the work counts: trip counts, branches, tile units and per-op costs."""

import pytest

from compiler.analysis import counts
from compiler.analysis.errors import AnalysisError
from compiler.ir.builder import KernelBuilder
from compiler.testing import analysis_kernels
from kernels.gemm.schedules import gemm_sm90a


def _count(kernel, env, grid=(1,)):
    per_block, tiles = counts.count(kernel, {**env, **counts.builtins(list(grid))}, launched=grid[0])
    return per_block


def test_gemm_block_counts():
    c = _count(gemm_sm90a(), {"M": 1024, "N": 1024, "K": 512})
    assert c["mma:wgmma:bf16"] == 2 * 128 * 256 * 512
    assert c["read:A"] == 128 * 512 * 2 and c["read:B"] == 256 * 512 * 2
    assert c["write:C"] == 128 * 256 * 2 and c["epilogue"] == 128 * 256
    # Each consumer warpgroup's wgmma reads its 64-row A window and all of B, per k-step.
    assert c["shared"] == (512 // 64) * 2 * (64 * 64 + 256 * 64) * 2
    assert c["tma_loads"] == 2 * 512 // 64


def test_wgmma_instructions_narrower_than_the_tile_read_a_once_each():
    k = gemm_sm90a()
    mma = next(op.mma for op in k.roles[1].body[1].loop.body if op.WhichOneof("kind") == "mma")
    mma.instr_shape.extend([64, 64, 16])
    c = _count(k, {"M": 1024, "N": 1024, "K": 512})
    assert c["mma:wgmma:bf16"] == 2 * 128 * 256 * 512
    assert c["shared"] == (512 // 64) * 2 * (4 * 64 * 64 + 256 * 64) * 2  # four N=64 instructions per k-step


def test_mma_sync_with_ldmatrix_counts_per_warp_fragments():
    c = _count(analysis_kernels.mma_sync_loop(bm=64, bn=64, bk=32, warps=4), {"M": 64, "N": 64, "K": 256})
    k_steps = 256 // 32
    assert c["mma:mma_sync:bf16"] == 2 * 64 * 64 * 256  # acc [16, 64] per warp x 4 warps
    # ldmatrix: each warp loads its 16-row A slice and the whole 64-row B tile.
    assert c["shared"] == k_steps * (4 * 16 * 32 + 4 * 64 * 32) * 2
    assert c["write:C"] == 64 * 64 * 4


def test_elementwise_and_reduction_costs():
    c = _count(analysis_kernels.softmax_rows(rows=128, cols=64), {"N": 128})
    n = 128 * 64
    assert c["fp32"] == n * (1 + 1 + 1)  # max over the row, subtract, scale before ex2
    assert c["sfu"] == n


def _loop_kernel(build):
    k = KernelBuilder("k", target="sm_90a")
    k.symbol("N", min=1, max=1 << 20)
    k.tensor("X", "f32", [1 << 20])
    t = k.registers("t", "f32", [4], layout="per_thread", owner="r")
    with k.role("r", "compute", warps=1) as r:
        build(r, t)
    return k.build()


def test_branches_on_the_loop_variable_are_counted_per_iteration():
    def build(r, t):
        with r.loop("i", 0, 1000) as i:
            with r.if_(i == 0):
                r.ew("exp", t.all, t.all)  # once
            with r.if_(i < 10):
                r.ew("add", t.all, t.all, t.all)  # ten times (3 samples: first, middle, last)
            r.ew("mul", t.all, t.all, t.all)  # every iteration

    c = _count(_loop_kernel(build), {"N": 1})
    per = 32 * 4  # a per-thread [4] region over one warp
    assert c["sfu"] == per
    assert c["fp32"] == per * (1 + 1000) + per * 1  # exp's scale; mul; add counted at the first sample
    small = _loop_kernel(lambda r, t: _nested(r, t))
    assert _count(small, {"N": 1})["fp32"] == 32 * 4 * sum(range(8))  # triangular: enumerated exactly


def _nested(r, t):
    with r.loop("i", 0, 8) as i:
        with r.loop("j", 0, i):
            r.ew("add", t.all, t.all, t.all)


def test_thread_dependent_branches_count_both_arms():
    def build(r, t):
        with r.if_(r.lane == 0):
            r.ew("exp", t.all, t.all)
        with r.else_():
            r.ew("add", t.all, t.all, t.all)

    c = _count(_loop_kernel(build), {"N": 1})
    assert c["sfu"] == 128 and c["fp32"] == 2 * 128


def test_symbolic_bounds_use_the_binding_and_bad_steps_are_errors():
    def build(r, t):
        with r.loop("i", 0, "N", step=2):
            r.ew("add", t.all, t.all, t.all)

    assert _count(_loop_kernel(build), {"N": 9})["fp32"] == 5 * 128

    def zero_step(r, t):
        with r.loop("i", 0, 10, step=0):
            r.ew("add", t.all, t.all, t.all)

    with pytest.raises(AnalysisError, match=r"kernel.roles\[0\].body\[0\].loop.step: the step is 0"):
        _count(_loop_kernel(zero_step), {"N": 1})


def test_persistent_loops_count_the_average_block():
    k = analysis_kernels.persistent_rows(rows=128, cols=64)
    per_block, tiles = counts.count(k, {"N": 128 * 1000, **counts.builtins([250])}, launched=250)
    assert tiles == 1000
    assert per_block["read:X"] == pytest.approx(4 * 128 * 64 * 4)  # 1000 / 250 tiles per block
    assert per_block["shared"] == 0.0  # the first-tile fill is of registers


def test_deep_var_dependent_nests_stay_within_the_budget():
    def build(r, t):
        def nest(depth):
            if depth == 0:
                r.ew("add", t.all, t.all, t.all)
                return
            with r.loop("v%d" % depth, 0, 64) as v:
                with r.if_(v < 32):
                    nest(depth - 1)

        nest(6)

    c = _count(_loop_kernel(build), {"N": 1})
    assert c["fp32"] > 0  # finished: past the budget each loop samples its middle only
