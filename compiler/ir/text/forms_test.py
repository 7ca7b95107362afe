"""The text form's spellings, one by one: compact forms, their fallbacks, scalars, layout."""

import math
import re

import pytest
from cake.ir.v1 import ir_pb2
from google.protobuf import wrappers_pb2

from compiler.ir.text.literals import float_bits, float_from_bits
from compiler.ir.text.parse import ParseError, Parser, parse_kernel
from compiler.ir.text.printer import print_kernel, print_node

OP = ir_pb2.BinaryOp


def sym(name):
    return ir_pb2.Expr(sym=name)


def lit(value):
    return ir_pb2.Expr(int=value)


def bin_(op, lhs, rhs):
    lhs = sym(lhs) if isinstance(lhs, str) else lit(lhs) if isinstance(lhs, int) else lhs
    rhs = sym(rhs) if isinstance(rhs, str) else lit(rhs) if isinstance(rhs, int) else rhs
    return ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=getattr(OP, "BINARY_OP_" + op), lhs=lhs, rhs=rhs))


def op_line(**op):
    """Print a kernel whose one role runs `op`; return the op's line, checking the round trip."""
    kernel = ir_pb2.Kernel(name="k")
    kernel.roles.add(name="r").body.add(**op)
    text = print_kernel(kernel)
    assert_round_trip(kernel, text)
    return text.splitlines()[2].strip()


def kernel_text(kernel):
    text = print_kernel(kernel)
    assert_round_trip(kernel, text)
    return text


def assert_round_trip(kernel, text):
    # Bytes, not ==: they also tell -0.0 from 0.0 and NaN payloads apart.
    back = parse_kernel(text).kernel
    assert back.SerializeToString(deterministic=True) == kernel.SerializeToString(deterministic=True)
    assert print_kernel(back) == text


def expr_of(text):
    """The expression `text` as the parser reads it (as a constraint of a kernel)."""
    kernel = parse_kernel("kernel k { contract { constraint { expr: %s } } }" % text).kernel
    return kernel.contract.constraints[0].expr


def expr_line(expr):
    return op_line(mbarrier_wait=ir_pb2.MbarrierWait(phase=expr))


@pytest.mark.parametrize(
    "expr, text",
    [
        (bin_("DIV", bin_("ADD", "M", 127), 128), "(M + 127) / 128"),
        (bin_("AND", bin_("EQ", bin_("MOD", "a", 4), 0), "elected"), "a % 4 == 0 && elected"),
        (bin_("CEIL_DIV", "N", 128), "ceil_div(N, 128)"),
        (bin_("MIN", "a", bin_("MAX", "b", 1)), "min(a, max(b, 1))"),
        (bin_("SUB", "a", bin_("SUB", "b", "c")), "a - (b - c)"),
        (bin_("SUB", bin_("SUB", "a", "b"), "c"), "a - b - c"),
        (bin_("MUL", bin_("ADD", "a", "b"), "c"), "(a + b) * c"),
        (bin_("ADD", "a", bin_("MUL", "b", "c")), "a + b * c"),
        (bin_("AND", bin_("OR", "a", "b"), "c"), "(a || b) && c"),
        (bin_("OR", "a", bin_("AND", "b", "c")), "a || b && c"),
        (bin_("EQ", bin_("LT", "a", "b"), "c"), "a < b == c"),
        (bin_("LE", "a", bin_("GE", "b", "c")), "a <= (b >= c)"),
        (bin_("NE", "block.x", "cluster.rank"), "block.x != cluster.rank"),
        (bin_("GT", "a", 0), "a > 0"),
        (lit(-5), "-5"),
        (bin_("SUB", 0, 5), "0 - 5"),
        (bin_("SUB", "a", -5), "a - -5"),
        (bin_("MUL", -5, "a"), "-5 * a"),
        (lit(-(1 << 63)), "-9223372036854775808"),
        (lit((1 << 63) - 1), "9223372036854775807"),
        (lit(0), "0"),
        (sym("min"), "min"),
    ],
)
def test_expr_infix(expr, text):
    assert expr_line(expr) == "mbarrier_wait { phase: %s }" % text
    assert expr_of(text) == expr


@pytest.mark.parametrize(
    "expr, text",
    [
        (ir_pb2.Expr(), "{}"),
        (sym("a b"), '{ sym: "a b" }'),
        (sym(""), '{ sym: "" }'),  # a oneof member set to its default is still set
        (ir_pb2.Expr(binary=ir_pb2.BinaryExpr(lhs=sym("a"), rhs=lit(1))), "{ binary { lhs: a  rhs: 1 } }"),
        (ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=OP.BINARY_OP_ADD, lhs=sym("a"))), "{ binary { op: add  lhs: a } }"),
        (ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=99, lhs=lit(1), rhs=lit(2))), "{ binary { op: 99  lhs: 1  rhs: 2 } }"),
        (bin_("ADD", "a", sym("?")), '{ binary { op: add  lhs: a  rhs: { sym: "?" } } }'),
    ],
)
def test_expr_without_infix_form_prints_its_block(expr, text):
    assert expr_line(expr) == "mbarrier_wait { phase: %s }" % text


def test_expr_parentheses_and_whitespace_are_free():
    assert expr_of("((M))+(127)") == bin_("ADD", "M", 127)
    assert expr_of("ceil_div( N ,128 ) # a comment\n") == bin_("CEIL_DIV", "N", 128)


def tile(region, stage=None, windows=()):
    ref = ir_pb2.TileRef(region=region)
    if stage is not None:
        ref.stage.CopyFrom(stage)
    for window in windows:
        ref.window.add().CopyFrom(window)
    return ref


@pytest.mark.parametrize(
    "ref, text",
    [
        (tile("sA"), "sA"),
        (tile("sA", lit(0)), "sA@0"),
        (tile("sA", sym("s")), "sA@s"),
        (tile("sA", bin_("MOD", "kt", 4)), "sA@(kt % 4)"),
        (tile("sA", bin_("MIN", "a", "b")), "sA@min(a, b)"),
        (tile("sA", lit(-1)), "sA@-1"),
        (tile("sA", ir_pb2.Expr()), "sA@{}"),
        (
            tile("sA", sym("s"), [ir_pb2.Window(start=bin_("MUL", "w", 64), size=64), ir_pb2.Window(start=lit(0), size=16)]),
            "sA@s[w * 64 +: 64, 0 +: 16]",
        ),
        (tile("sA", None, [ir_pb2.Window(start=lit(0), size=-1)]), "sA[0 +: -1]"),
        (tile("sA", None, [ir_pb2.Window(size=64)]), "sA[{ size: 64 }]"),
        (tile("sA", None, [ir_pb2.Window(start=sym("a b"))]), 'sA[{ start: { sym: "a b" } }]'),
        (tile("s A"), '{ region: "s A" }'),
        (tile(""), "{}"),
        (ir_pb2.TileRef(stage=lit(1)), "{ stage: 1 }"),
    ],
)
def test_tile_ref(ref, text):
    assert op_line(tma_load=ir_pb2.TmaLoad(dst=ref)) == "tma_load { dst: %s }" % text


@pytest.mark.parametrize(
    "ref, text",
    [
        (ir_pb2.BarrierRef(barrier="full"), "full"),
        (ir_pb2.BarrierRef(barrier="full", index=sym("i")), "full[i]"),
        (ir_pb2.BarrierRef(barrier="full", index=lit(0)), "full[0]"),
        (ir_pb2.BarrierRef(barrier="full", round=bin_("ADD", "kt", 1)), "full@round(kt + 1)"),
        (ir_pb2.BarrierRef(barrier="full", index=ir_pb2.Expr()), "full[{}]"),
        (ir_pb2.BarrierRef(barrier="full", round=ir_pb2.Expr()), "full@round({})"),
        (ir_pb2.BarrierRef(barrier="1st", index=lit(2)), '{ barrier: "1st"  index: 2 }'),
        (ir_pb2.BarrierRef(round=lit(2)), "{ round: 2 }"),
    ],
)
def test_barrier_ref(ref, text):
    assert op_line(mbarrier_arrive=ir_pb2.MbarrierArrive(barrier=ref)) == "mbarrier_arrive { barrier: %s }" % text


@pytest.mark.parametrize(
    "ref, text",
    [
        (ir_pb2.GlobalRef(param="A", coords=[bin_("MUL", "block.y", 128), sym("k")]), "A[block.y * 128, k]"),
        (ir_pb2.GlobalRef(param="A"), "A[]"),
        (ir_pb2.GlobalRef(param="A", coords=[ir_pb2.Expr(), lit(-3)]), "A[{}, -3]"),
        (ir_pb2.GlobalRef(coords=[lit(0)]), "{ coords: [0] }"),
    ],
)
def test_global_ref(ref, text):
    assert op_line(tma_load=ir_pb2.TmaLoad(src=ref)) == "tma_load { src: %s }" % text


@pytest.mark.parametrize(
    "operand, text",
    [
        (ir_pb2.Operand(tile=tile("x", sym("s"))), "x@s"),
        (ir_pb2.Operand(tile=tile("int")), "int"),
        (ir_pb2.Operand(tile=tile("coord", lit(1))), "coord@1"),
        (ir_pb2.Operand(tile=tile("inf")), "{ tile: inf }"),
        (ir_pb2.Operand(tile=tile("nan")), "{ tile: nan }"),
        (ir_pb2.Operand(tile=tile("a b")), '{ tile: { region: "a b" } }'),
        (ir_pb2.Operand(imm=1.0), "1.0"),
        (ir_pb2.Operand(imm=0.0), "0.0"),
        (ir_pb2.Operand(imm=-0.0), "-0.0"),
        (ir_pb2.Operand(imm=1e-300), "1e-300"),
        (ir_pb2.Operand(imm=1e16), "1e+16"),
        (ir_pb2.Operand(imm=math.inf), "inf"),
        (ir_pb2.Operand(imm=-math.inf), "-inf"),
        (ir_pb2.Operand(scalar=bin_("ADD", "kt", 1)), "int(kt + 1)"),
        (ir_pb2.Operand(scalar=ir_pb2.Expr()), "int({})"),
        (ir_pb2.Operand(coord=1), "coord(1)"),
        (ir_pb2.Operand(coord=-1), "coord(-1)"),
        (ir_pb2.Operand(), "{}"),
    ],
)
def test_operand(operand, text):
    line = op_line(elementwise=ir_pb2.Elementwise(srcs=[operand, ir_pb2.Operand(imm=2.5)]))
    assert line == "elementwise { srcs: [%s, 2.5] }" % text


@pytest.mark.parametrize(
    "bits, text",
    [
        (0x7FF8000000000000, "nan"),
        (0xFFF8000000000000, "-nan"),
        (0x7FF0000000000001, "nan(0x7ff0000000000001)"),
        (0xFFF8000000000001, "nan(0xfff8000000000001)"),
    ],
)
def test_nan_keeps_its_bits(bits, text):
    line = op_line(fill=ir_pb2.Fill(value=float_from_bits(bits)))
    assert line == "fill { value: %s }" % text
    back = parse_kernel("kernel k { role r { %s } }" % line).kernel
    assert float_bits(back.roles[0].body[0].fill.value) == bits


def test_ints_in_float_fields_and_case_of_enum_names_are_accepted():
    kernel = parse_kernel("kernel k { contract { tolerance: 1  metric: REL_L2 } }").kernel
    assert kernel.contract.tolerance == 1.0
    assert kernel.contract.metric == ir_pb2.METRIC_REL_L2


def test_loop_header():
    loop = ir_pb2.Loop(var="kt", start=lit(0), end=bin_("DIV", "K", 64), step=lit(2), unroll=1)
    loop.body.add(block_sync=ir_pb2.BlockSync())
    text = kernel_text(_one_op(loop=loop))
    assert "    loop kt in 0 .. K / 64 {\n      step: 2\n      unroll: 1\n      block_sync {}\n    }\n" in text


@pytest.mark.parametrize(
    "loop, text",
    [
        (ir_pb2.Loop(var="kt", start=lit(0)), 'loop { var: "kt"  start: 0 }'),
        (ir_pb2.Loop(var="k t", start=lit(0), end=lit(1)), 'loop { var: "k t"  start: 0  end: 1 }'),
        (ir_pb2.Loop(var="i", start=ir_pb2.Expr(), end=lit(1)), 'loop { var: "i"  start: {}  end: 1 }'),
        (ir_pb2.Loop(var="in", start=sym("in"), end=lit(1)), "loop in in in .. 1 {}"),
        (ir_pb2.Loop(), "loop {}"),
    ],
)
def test_loop_without_header(loop, text):
    assert op_line(loop=loop) == text


def _one_op(**op):
    kernel = ir_pb2.Kernel(name="k")
    kernel.roles.add(name="r").body.add(**op)
    return kernel


def test_op_lists_stand_in_their_block_or_are_wrapped():
    branch = ir_pb2.Branch(cond=sym("c"))
    branch.then_body.add(block_sync=ir_pb2.BlockSync())
    branch.else_body.add()  # an op with no member set
    text = kernel_text(_one_op(branch=branch))
    assert text == (
        "kernel k {\n  role r {\n    branch {\n      cond: c\n      then_body {\n        block_sync {}\n"
        "      }\n      else_body {\n        {}\n      }\n    }\n  }\n}\n"
    )


@pytest.mark.parametrize(
    "value, text",
    [
        ("", None),
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
        ("a\nb\tc\rd", '"a\\nb\\tc\\rd"'),
        ("h\u00e9llo \u4e16\u754c \U0001f600", '"h\u00e9llo \u4e16\u754c \U0001f600"'),
        ("\x07\x7f\u2028", '"\\u{7}\\u{7f}\\u{2028}"'),
    ],
)
def test_strings(value, text):
    kernel = ir_pb2.Kernel(name="k", contract=ir_pb2.Contract(math=value))
    line = kernel_text(kernel).splitlines()[1].strip()
    assert line == ("contract {}" if text is None else "contract { math: %s }" % text)


def test_string_escapes_are_read():
    kernel = parse_kernel(r'kernel k { contract { math: "\x41\u{1F600}\"" } }').kernel
    assert kernel.contract.math == 'A\U0001f600"'


@pytest.mark.parametrize("name, head", [("gemm", "kernel gemm"), ("", 'kernel ""'), ("a-b", 'kernel "a-b"')])
def test_names_print_bare_or_quoted(name, head):
    assert kernel_text(ir_pb2.Kernel(name=name)) == head + " {}\n"


def test_enums_print_short_names_and_unknown_numbers():
    kernel = ir_pb2.Kernel(name="k", target=ir_pb2.TARGET_SM_90A)
    kernel.regions.add(name="s", dtype=ir_pb2.DTYPE_BF16, swizzle=ir_pb2.SWIZZLE_128B, space=77)
    text = kernel_text(kernel)
    assert "  target: sm_90a\n  region s { space: 77  dtype: bf16  swizzle: 128b }\n" in text
    assert parse_kernel("kernel k { target: unspecified }").kernel == ir_pb2.Kernel(name="k")


def test_defaults_are_omitted_but_presence_is_kept():
    kernel = ir_pb2.Kernel(name="k", launch=ir_pb2.Launch())
    kernel.contract.symbols.add(name="M", value=0)
    kernel.contract.symbols.add(name="N")
    kernel.roles.add(name="r", warps=0)
    text = kernel_text(kernel)
    assert "symbol M { value: 0 }" in text and "symbol N {}" in text
    assert "  launch {}\n" in text and "role r { warps: 0 }" in text


def test_blocks_go_multiline_past_the_width():
    kernel = ir_pb2.Kernel(name="k")
    kernel.params.add(name="short", align_bytes=16)
    kernel.params.add(name="long", doc="x" * 100)
    text = kernel_text(kernel)
    assert "  param short { align_bytes: 16 }\n" in text
    assert '  param long {\n    doc: "%s"\n  }\n' % ("x" * 100) in text


def test_print_node():
    kernel = parse_kernel(
        "kernel k { role r { loop i in 0 .. 2 { tma_load { dst: s@(i % 2) } } } }"
    ).kernel
    loop_op = kernel.roles[0].body[0]
    load = loop_op.loop.body[0]
    assert print_node(load) == "tma_load { dst: s@(i % 2) }"
    assert print_node(load.tma_load) == "{ dst: s@(i % 2) }"
    assert print_node(load.tma_load.dst) == "s@(i % 2)"
    assert print_node(load.tma_load.dst.stage) == "i % 2"
    assert print_node(loop_op) == "loop i in 0 .. 2 {\n  tma_load { dst: s@(i % 2) }\n}"
    assert print_node(ir_pb2.Expr()) == "{}"


@pytest.mark.parametrize(
    "message, text",
    [
        (wrappers_pb2.FloatValue(value=0.1), "{ value: 0.10000000149011612 }"),
        (wrappers_pb2.FloatValue(value=-math.inf), "{ value: -inf }"),
        (wrappers_pb2.BytesValue(value=b'\x00\xff"\\a'), '{ value: "\\x00\\xff\\"\\\\a" }'),
        (wrappers_pb2.UInt64Value(value=(1 << 64) - 1), "{ value: 18446744073709551615 }"),
        (wrappers_pb2.UInt32Value(value=(1 << 32) - 1), "{ value: 4294967295 }"),
        (wrappers_pb2.Int64Value(value=-(1 << 63)), "{ value: -9223372036854775808 }"),
        (wrappers_pb2.BoolValue(value=True), "{ value: true }"),
        (wrappers_pb2.StringValue(value=""), "{}"),
    ],
)
def test_scalar_types_the_ir_does_not_use_yet(message, text):
    # The printer and parser follow the descriptors, so other field types work as they appear.
    assert print_node(message) == text
    back = type(message)()
    Parser(text, "t").block(back, "kernel")
    assert back == message


@pytest.mark.parametrize(
    "message, text, error",
    [
        (wrappers_pb2.FloatValue(), "{ value: 1e39 }", "1e+39 is out of range for float"),
        (wrappers_pb2.BytesValue(), '{ value: "\\u{100}" }', "a bytes value holds characters up to \\xff only"),
        (wrappers_pb2.UInt32Value(), "{ value: -1 }", "-1 is out of range for uint32"),
    ],
)
def test_scalar_range_errors(message, text, error):
    with pytest.raises(ParseError, match=re.escape(error)):
        Parser(text, "t").block(message, "kernel")
