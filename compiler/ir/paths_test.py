"""IR paths: joining, parents, walking every node, resolving a path back to its node."""

import os
import re

import pytest
from cake.ir.v1 import ir_pb2
from hypothesis import given, settings

from compiler.ir import paths
from compiler.ir.text import parse_kernel
from compiler.testing.strategies import messages

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "text", "testdata", "gemm_sm90a.cake")


@pytest.fixture(scope="module")
def gemm():
    with open(GOLDEN, encoding="utf-8") as f:
        return parse_kernel(f.read()).kernel


def test_join_and_parent():
    op = paths.join(paths.join("kernel", "roles", 1), "body", 4)
    assert op == "kernel.roles[1].body[4]"
    wait = paths.join(paths.join(paths.join(op, "loop"), "body", 0), "mbarrier_wait")
    assert wait == "kernel.roles[1].body[4].loop.body[0].mbarrier_wait"
    assert paths.parent(wait) == "kernel.roles[1].body[4].loop.body[0]"
    assert paths.parent("kernel.roles[1]") == "kernel"
    assert paths.parent("kernel") is None


def test_split():
    assert paths.split("kernel") == []
    assert paths.split("kernel.roles[1].body[4].loop") == [("roles", 1), ("body", 4), ("loop", None)]
    for bad in ("", "kern", "kernel.", "kernel..a", "kernel.roles[]", "kernel.roles[-1]", "kernel.a b"):
        with pytest.raises(ValueError):
            paths.split(bad)


def test_walk_visits_every_node_depth_first_in_declaration_order(gemm):
    walked = [path for path, _ in paths.walk(gemm)]
    assert walked[:4] == ["kernel", "kernel.contract", "kernel.contract.symbols[0]", "kernel.contract.symbols[1]"]
    wait = "kernel.roles[1].body[1].loop.body[0]"
    i = walked.index(wait)
    assert walked[i : i + 5] == [
        wait,
        wait + ".mbarrier_wait",
        wait + ".mbarrier_wait.barrier",
        wait + ".mbarrier_wait.barrier.round",
        "kernel.roles[1].body[1].loop.body[1]",
    ]
    assert len(walked) == len(set(walked))


def test_walk_from_another_root():
    expr = ir_pb2.Expr(binary=ir_pb2.BinaryExpr(lhs=ir_pb2.Expr(int=1)))
    assert [p for p, _ in paths.walk(expr, "e")] == ["e", "e.binary", "e.binary.lhs"]


def test_walk_of_some_types_skips_the_others_and_what_lies_below_them(gemm):
    outside_exprs = frozenset(d.full_name for d in ir_pb2.DESCRIPTOR.message_types_by_name.values()
                              if d.name not in ("Expr", "BinaryExpr"))
    every = list(paths.walk(gemm))
    some = list(paths.walk(gemm, types=outside_exprs))
    assert [p for p, n in some] == [p for p, n in every if ".binary" not in p and n.DESCRIPTOR.name != "Expr"]
    assert len(some) < len(every)
    ops_only = frozenset(("cake.ir.v1.Kernel", "cake.ir.v1.Role", "cake.ir.v1.Op", "cake.ir.v1.Loop"))
    assert {n.DESCRIPTOR.name for _, n in paths.walk(gemm, types=ops_only)} == {"Kernel", "Role", "Op", "Loop"}


def test_resolve_finds_each_walked_node(gemm):
    for path, node in paths.walk(gemm):
        assert paths.resolve(gemm, path) == node


@settings(max_examples=100, deadline=None)
@given(messages(ir_pb2.Kernel, max_nodes=25))
def test_walk_and_resolve_agree_on_any_kernel(kernel):
    for path, node in paths.walk(kernel):
        assert paths.resolve(kernel, path) == node


@pytest.mark.parametrize(
    "path, message",
    [
        ("kernel.nope", "kernel (a Kernel) has no message field 'nope'"),
        ("kernel.name", "has no message field 'name'"),
        ("kernel.roles[7]", "kernel.roles needs an index below 2"),
        ("kernel.roles", "kernel.roles needs an index below 2"),
        ("kernel.launch[0]", "kernel.launch is not repeated"),
        ("kernel.roles[0].body[0].loop", "kernel.roles[0].body[0].loop is not set"),
        ("kernel.roles[0].body[0].branch.else_body[0]", "kernel.roles[0].body[0].branch.else_body is empty"),
        ("Kernel.roles[0]", "does not start at 'kernel'"),
    ],
)
def test_resolve_errors_name_the_bad_step(gemm, path, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        paths.resolve(gemm, path)
