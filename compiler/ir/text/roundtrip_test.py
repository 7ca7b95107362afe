"""Exact round trips of the text form, and the source map: parse(print(k)) == k for any kernel."""

import os
import re
import time

import hypothesis.strategies as st
from cake.ir.v1 import ir_pb2
from hypothesis import HealthCheck, given, settings

from compiler.ir import paths
from compiler.ir.text.parse import parse_kernel
from compiler.ir.text.printer import print_kernel
from compiler.testing.strategies import NAMES, messages

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "gemm_sm90a.cake")
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def golden_text():
    with open(GOLDEN, encoding="utf-8") as f:
        return f.read()


def assert_round_trip(kernel):
    text = print_kernel(kernel)
    parsed = parse_kernel(text)
    # Bytes, not ==: NaN != NaN, and the bytes also tell -0.0 from 0.0.
    assert parsed.kernel.SerializeToString(deterministic=True) == kernel.SerializeToString(deterministic=True)
    assert print_kernel(parsed.kernel) == text
    return text, parsed


@PROPERTY
@given(messages(ir_pb2.Kernel))
def test_any_kernel_round_trips(kernel):
    assert_round_trip(kernel)


@PROPERTY
@given(messages(ir_pb2.Role, max_depth=12, max_nodes=30))
def test_any_role_round_trips(role):
    # Deeper op nests than whole kernels reach within their node budget.
    kernel = ir_pb2.Kernel(name="k")
    kernel.roles.add().CopyFrom(role)
    assert_round_trip(kernel)


def _binary(children):
    ops = st.sampled_from([v.number for v in ir_pb2.BinaryOp.DESCRIPTOR.values if v.number])
    return st.builds(lambda op, lhs, rhs: ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=op, lhs=lhs, rhs=rhs)), ops, children, children)


# Well-formed trees of every operator, deep enough to need every kind of parenthesis.
_LEAVES = st.one_of(
    st.builds(lambda v: ir_pb2.Expr(int=v), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.builds(lambda s: ir_pb2.Expr(sym=s), st.sampled_from(NAMES)),
)
_TREES = st.recursive(_LEAVES, _binary, max_leaves=24)


@PROPERTY
@given(st.one_of(_TREES, messages(ir_pb2.Expr, max_depth=24, max_nodes=40)))
def test_any_expression_round_trips(expr):
    kernel = ir_pb2.Kernel(name="k")
    kernel.contract.constraints.add(expr=expr)
    kernel.roles.add(name="r").body.add(tma_load=ir_pb2.TmaLoad(dst=ir_pb2.TileRef(region="s", stage=expr)))
    assert_round_trip(kernel)


@PROPERTY
@given(messages(ir_pb2.Kernel, max_nodes=25))
def test_every_node_has_a_location_in_document_order(kernel):
    _, parsed = assert_round_trip(kernel)
    assert_locations_cover(parsed)


def assert_locations_cover(parsed):
    nodes = list(paths.walk(parsed.kernel))
    assert [p for p, _ in nodes if p not in parsed.source_map] == []
    assert set(parsed.source_map) == {p for p, _ in nodes}
    locations = [parsed.source_map[p] for p, _ in nodes]
    assert locations == sorted(locations)


def test_golden_text_is_canonical():
    text = golden_text()
    parsed = parse_kernel(text, GOLDEN)
    assert print_kernel(parsed.kernel) == text
    assert_locations_cover(parsed)


def test_source_map_points_at_each_node():
    text = golden_text()
    source_map = parse_kernel(text).source_map
    lines = text.splitlines()

    def at(path):
        line, column = source_map[path]
        return lines[line - 1][column - 1:]

    assert at("kernel").startswith("kernel gemm_bf16_sm90a {")
    assert at("kernel.params[1]").startswith("param B {")
    assert at("kernel.roles[0].body[2].branch.then_body[0].loop").startswith("loop kt in 0 .. K / 64 {")
    assert at("kernel.roles[0].body[2].branch.then_body[0].loop.end").startswith("K / 64 {")
    wait = "kernel.roles[1].body[1].loop.body[0]"
    assert at(wait) == at(wait + ".mbarrier_wait") == "mbarrier_wait { barrier: full@round(kt) }"
    assert at(wait + ".mbarrier_wait.barrier") == "full@round(kt) }"
    assert at(wait + ".mbarrier_wait.barrier.round") == "kt) }"
    mma = "kernel.roles[1].body[1].loop.body[1].mma"
    assert at(mma + ".a.window[0].start.binary.rhs") == "64 +: 64, 0 +: 64]"
    assert source_map.lookup(mma + ".a.window[0]") == source_map[mma + ".a.window[0]"]
    assert source_map.lookup(mma + ".no.such[3].node") == source_map[mma]
    assert source_map.lookup("elsewhere") is None
    assert source_map.filename == "<text>"


def test_layout_comments_and_field_order_do_not_matter():
    text = golden_text()
    kernel = parse_kernel(text).kernel
    # Everything on one line, with a comment in front: the same kernel.
    flat = "# a comment\n" + re.sub(r"\s+", " ", text)
    assert parse_kernel(flat).kernel == kernel
    reordered = text.replace("  target: sm_90a\n", "").replace("kernel gemm_bf16_sm90a {\n", "kernel gemm_bf16_sm90a {\n  target: sm_90a # here\n")
    assert parse_kernel(reordered).kernel == kernel


def test_a_500_op_kernel_prints_and_parses_quickly():
    kernel = parse_kernel(golden_text()).kernel
    body = kernel.roles[1].body
    ops = list(body)
    while _count_ops(kernel) < 500:
        for op in ops:
            body.add().CopyFrom(op)
    start = time.perf_counter()
    text = print_kernel(kernel)
    printed = time.perf_counter()
    parse_kernel(text)
    parsed = time.perf_counter()
    # The budget is 100 ms each; the bound leaves room for slow CI machines.
    assert printed - start < 0.3 and parsed - printed < 0.3, (printed - start, parsed - printed)


def _count_ops(kernel):
    return sum(1 for path, _ in paths.walk(kernel) if re.search(r"body\[\d+\]$", path))
