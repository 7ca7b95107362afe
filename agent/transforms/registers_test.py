"""Register budgets: rebalancing fits a block's register file, from budgets or from none; one role's budget moves."""

import pytest
from cake.ir.v1 import ir_pb2

from agent.compiler_port import process_port
from agent.ir_edit import NotApplicable
from agent.transforms import registers, split_roles, testing, tile_shape, tma_ring, wgmma
from compiler.ir.roles import role_threads
from compiler.targets import database
from compiler.targets import registers as target_registers
from kernels.kmeans.naive import assign_naive
from kernels.kmeans.schedules import assign_sm80, assign_sm90a

PRODUCERS = [{"producer": 24}, {"producer": 40}]


def _four_consumer_split():
    """The naive seed's path to four consumer warpgroups and a producer: 640 threads, no budgets."""
    k = wgmma.mma_to_wgmma(split_roles.split_producer(tma_ring.loads_to_tma(assign_naive(), 3)))
    return tile_shape.tile_shape(k, "N", 256)


def _fits(kernel):
    limits = database.limits("sm_90a")
    return sum(target_registers.pool_use(kernel, limits)) <= target_registers.pool(kernel, limits)


def test_property_every_warp_specialized_block_is_balanced_within_its_pool():
    applied = testing.check("rebalance_registers", PRODUCERS)
    programs = testing.applied_to(applied)
    # Blocks with budgets already, and producer splits that have none yet.
    assert {"kmeans_assign_sm90a", "gemm_sm90a", "kmeans_assign_naive+loads_to_tma+split_producer"} <= set(programs)
    for program, args, out in applied:
        assert all(r.registers for r in out.roles), program
        assert {r.registers for r in out.roles if r.kind == ir_pb2.ROLE_KIND_PRODUCER} <= {args["producer"]}
        assert _fits(out), program


def test_the_four_consumer_split_fits_only_once_balanced():
    k = _four_consumer_split()
    assert sum(role_threads(r) for r in k.roles) == 640 and not any(r.registers for r in k.roles)
    refused = process_port().analyze(k, {"B": 32, "N": 65536, "K": 1024, "D": 128}, "sm_90a/H200")
    assert refused.report is None and "registers per thread" in refused.diagnostics[0].message
    out = registers.rebalance_registers(k)
    assert [r.registers for r in out.roles] == [24, 112]
    assert process_port().analyze(out, {"B": 32, "N": 65536, "K": 1024, "D": 128}, "sm_90a/H200").report is not None


def test_two_blocks_per_sm_then_rebalance_fits_the_register_file():
    from agent.rewrites import min_blocks
    from compiler.verify import has_errors, verify

    two = min_blocks(assign_sm90a(stages=2, block_k=64), 2)
    assert "CAKE-RES-004" in [d.id for d in verify(two)]
    fixed = registers.rebalance_registers(two)
    assert not has_errors(verify(fixed))
    assert [r.registers for r in fixed.roles] == [24, 104]


def test_budgets_move_one_role():
    out = testing.check("registers", [{"role": "load", "value": 32}], only=lambda p: p == "kmeans_assign_sm90a")
    assert [o.roles[0].registers for _, _, o in out] == [32]


@pytest.mark.parametrize("build,args,why", [
    (assign_sm80, {}, "sm_90a and sm_100a"),
    (assign_naive, {}, "no producer role"),
    (lambda: tma_ring.loads_to_tma(assign_naive(), 2), {}, "no producer role"),
    (assign_sm90a, {"producer": 20}, "not a setmaxnreg value"),
    (lambda: registers.rebalance_registers(assign_sm90a()), {}, "already balanced"),
])
def test_not_applicable_says_why(build, args, why):
    with pytest.raises(NotApplicable, match=why):
        registers.rebalance_registers(build(), **args)
    with pytest.raises(NotApplicable, match="not a setmaxnreg value"):
        registers.registers(assign_sm90a(), "mma", 100)
    with pytest.raises(NotApplicable, match="no role"):
        registers.registers(assign_sm90a(), "nobody", 64)
