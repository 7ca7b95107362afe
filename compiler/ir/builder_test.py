"""Builder tests: each call records the IR it names, and misuse fails at the call."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.builder import KernelBuilder, coord
from compiler.ir.expr import ceil_div, evaluate


def _tiny():
    k = KernelBuilder("tiny", target="sm_90a")
    n = k.symbol("N", min=64, max=1 << 20)
    k.require(n % 64 == 0, "whole tiles")
    x = k.tensor("x", "f32", [n])
    k.grid(ceil_div(n, 64))
    s = k.shared("s", "f32", [64], stages=2)
    bar = k.mbarrier("bar", arrivals=1, count=2, tx_bytes=256)
    with k.role("all", "compute", warps=2) as r:
        with r.if_(r.thread == 0):
            r.mbarrier_init(bar)
        with r.else_():
            r.block_sync()
        with r.loop("i", 0, 4) as i:
            r.tma_load(x[i * 64], s[i % 2], bar.round(i))
            r.wait(bar.round(i))
            r.ew("add", s[i % 2], s[i % 2], 1.0, coord(0))
    return k.build()


def test_records_declarations_and_nested_bodies():
    k = _tiny()
    assert k.target == ir_pb2.TARGET_SM_90A
    assert k.contract.symbols[0].name == "N"
    assert [p.name for p in k.params] == ["x"]
    assert k.regions[0].stages == 2 and k.regions[0].space == ir_pb2.MEMORY_SPACE_SHARED
    body = k.roles[0].body
    assert [op.WhichOneof("kind") for op in body] == ["branch", "loop"]
    assert body[0].branch.then_body[0].mbarrier_init.barrier == "bar"
    assert body[0].branch.else_body[0].HasField("block_sync")
    loop = body[1].loop
    assert [op.WhichOneof("kind") for op in loop.body] == ["tma_load", "mbarrier_wait", "elementwise"]
    assert loop.body[0].tma_load.barrier.WhichOneof("slot") == "round"
    srcs = loop.body[2].elementwise.srcs
    assert [s.WhichOneof("kind") for s in srcs] == ["tile", "imm", "coord"]


def test_expressions_evaluate_with_floor_semantics():
    k = _tiny()
    grid = k.launch.grid[0]
    assert evaluate(grid, {"N": 65}) == 2
    assert evaluate(k.contract.constraints[0].expr, {"N": 128}) == 1


def test_role_needs_exactly_one_size():
    k = KernelBuilder("bad", target="sm_80")
    with pytest.raises(ValueError, match="exactly one of warps= or warpgroups="):
        with k.role("r", "compute"):
            pass


def test_unknown_enum_short_name_lists_valid_ones():
    with pytest.raises(ValueError, match="expected one of: .*sm_90a"):
        KernelBuilder("bad", target="sm_91")


def test_else_without_if_is_rejected():
    k = KernelBuilder("bad", target="sm_80")
    with k.role("r", "compute", warps=1) as r:
        with pytest.raises(ValueError, match="must directly follow"):
            with r.else_():
                pass
