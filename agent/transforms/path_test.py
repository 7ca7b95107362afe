"""From the naive KMeans seed to the hand-tuned schedule's structure, by library transformations alone.

Every step is a generic transformation with generic arguments (ring depths, a block
size, a pipeline the previous step created); none names the tuned schedule or any of
its parts. The result has the tuned kernel's roles, rings, MMA instruction,
persistence, register budgets and epilogue placement, verifies clean and lowers.
"""

from cake.ir.v1 import ir_pb2

from agent import transforms
from agent.compiler_port import process_port
from agent.ir_edit import walk_ops
from agent.transforms import testing
from compiler.lower import lower
from kernels.kmeans.naive import assign_naive
from kernels.kmeans.tuned import assign_sm90a_tuned

PATH = (
    ("loads_to_tma", {"stages": 3}),
    ("split_producer", {}),
    ("mma_to_wgmma", {}),
    ("tile_shape", {"symbol": "N", "size": 256}),
    ("persistent", {}),
    ("ring_depth", {"pipeline": "sX_ring", "stages": 2}),
    ("defer_lane_reduction", {}),
    ("elect_release", {}),
    ("rebalance_registers", {"producer": 24}),
)
PAPER_CELL = {"B": 32, "N": 65536, "K": 1024, "D": 128}


def structure(kernel):
    """What the issue compares: roles, rings (depth and tile shapes), MMA kinds, persistence, epilogue scopes."""
    regions = {r.name: r for r in kernel.regions}
    consumer = next(r for r in kernel.roles if r.kind == ir_pb2.ROLE_KIND_CONSUMER)
    return {
        "roles": sorted((r.kind, r.WhichOneof("size"), getattr(r, r.WhichOneof("size"))) for r in kernel.roles),
        "rings": sorted((p.stages, sorted(tuple(regions[n].shape) for n in p.regions)) for p in kernel.pipelines),
        "mma": sorted({op.mma.kind for r in kernel.roles for _, _, op in walk_ops(r.body)
                       if op.WhichOneof("kind") == "mma"}),
        "persistent": kernel.launch.persistent,
        "registers": sorted((r.kind, r.registers) for r in kernel.roles),
        "argmin scopes": sorted(op.arg_reduce.scope for _, _, op in walk_ops(consumer.body)
                                if op.WhichOneof("kind") == "arg_reduce"),
    }


def test_the_library_reaches_the_tuned_structure_from_the_naive_seed():
    kernel = assign_naive()
    for name, args in PATH:
        kernel = transforms.apply(kernel, name, args)
        assert not testing.errors(kernel), (name, testing.errors(kernel))
    assert structure(kernel) == structure(assign_sm90a_tuned())
    assert lower(kernel).source  # and it lowers to CUDA
    # The cost model takes it (four consumers and a producer fit the register file only once balanced).
    assert process_port().analyze(kernel, PAPER_CELL, "sm_90a/H200").report is not None


def test_the_naive_seed_is_nothing_like_it():
    s = structure(assign_sm90a_tuned())
    naive = assign_naive()
    assert [r.kind for r in naive.roles] == [ir_pb2.ROLE_KIND_COMPUTE] and not naive.pipelines
    assert {op.mma.kind for _, _, op in walk_ops(naive.roles[0].body) if op.WhichOneof("kind") == "mma"} == {
        ir_pb2.MMA_KIND_MMA_SYNC}
    assert s["mma"] == [ir_pb2.MMA_KIND_WGMMA] and s["persistent"]
