"""IR rewrites produce kernels that verify (or name why they cannot apply), and never touch their input."""

import pytest
from cake.ir.v1 import ir_pb2

from agent import rewrites
from agent.transforms.registers import rebalance_registers
from compiler.ir.text import parse_kernel, print_kernel
from compiler.verify import has_errors, verify
from kernels.kmeans.schedules import assign_sm90a

SEED = assign_sm90a()

VALID = [
    ("swizzle", {"region": "sCols", "mode": "64b"}),
    ("swizzle", {"region": "sRows", "mode": "32b"}),
    ("instr_n", {"n": 64}),
    ("unroll", {"var": "t", "factor": 2}),
    ("defer_lane_reduction", {}),
    ("split_reduction", {"parts": 2}),
    ("persistent", {}),
]


@pytest.mark.parametrize("name,args", VALID, ids=["%s%s" % (n, list(a.values())) for n, a in VALID])
def test_rewrite_verifies_round_trips_and_leaves_the_input_alone(name, args):
    before = ir_pb2.Kernel()
    before.CopyFrom(SEED)
    out = rewrites.apply(SEED, name, args)
    assert SEED == before
    assert out != SEED
    assert not has_errors(verify(out)), [d.id for d in verify(out)]
    assert parse_kernel(print_kernel(out)).kernel == out


def test_defer_lane_reduction_moves_the_quad_merge_after_the_loop():
    out = rewrites.defer_lane_reduction(SEED)
    body = next(r for r in out.roles if r.name == "mma").body
    kinds = [op.WhichOneof("kind") for op in body]
    loop = body[kinds.index("loop")].loop
    inner = [op.arg_reduce for op in loop.body if op.WhichOneof("kind") == "arg_reduce"]
    assert [a.scope for a in inner] == [ir_pb2.SCOPE_THREAD]
    merge = body[kinds.index("loop") + 1].arg_reduce
    assert (merge.scope, merge.src.region, merge.values.region) == (ir_pb2.SCOPE_LANES, "best_v", "best_v")


def test_persistent_walks_the_tiles_and_continues_the_rings():
    out = rewrites.persistent(SEED)
    assert out.launch.persistent and not out.launch.grid
    for role in out.roles:
        tiles = role.body[-1].loop
        assert (tiles.var, tiles.counter, tiles.kind) == ("tile", "it", ir_pb2.LOOP_KIND_PERSISTENT)
    text = print_kernel(out)
    assert "full@round(it * (K / 128) + t)" in text and "sCols@((it * (K / 128) + t) % 3)" in text
    assert "x[tile / (N / 128), tile % (N / 128) * 128, 0]" in text
    ring = next(p for p in out.pipelines if p.name == "sRows_ring")
    assert (ring.stages, ring.full, ring.empty, list(ring.regions)) == (1, "rows_full", "sRows_empty", ["sRows"])
    # Composes with the other rewrites, in either order where both apply.
    for k in (rewrites.defer_lane_reduction(out), rewrites.persistent(rewrites.defer_lane_reduction(SEED)),
              rewrites.persistent(rebalance_registers(assign_sm90a(consumers=4)))):
        assert not has_errors(verify(k)), [d.id for d in verify(k)]
    with pytest.raises(rewrites.NotApplicable, match="persistent already"):
        rewrites.persistent(out)


def test_elect_release_gives_one_arrival_per_warpgroup():
    out = rewrites.elect_release(SEED)
    empty = next(b for b in out.barriers if b.name == "empty")
    sync = next(b for b in out.barriers if b.name == "release_sync")
    assert (empty.arrivals, sync.kind, sync.count, sync.arrivals) == (2, ir_pb2.BARRIER_KIND_NAMED, 2, 128)


@pytest.mark.parametrize("name,args,why", [
    ("swizzle", {"region": "sColSq", "mode": "64b"}, "unswizzled"),
    ("instr_n", {"n": 48}, "does not tile"),
    ("unroll", {"var": "nope", "factor": 2}, "no serial loop"),
    ("min_blocks", {"n": 1}, "already"),
    ("split_reduction", {"parts": 4}, "swizzle-aligned"),
    ("unknown", {}, "unknown rewrite"),
])
def test_not_applicable_says_why(name, args, why):
    with pytest.raises(rewrites.NotApplicable, match=why):
        rewrites.apply(SEED, name, args)

