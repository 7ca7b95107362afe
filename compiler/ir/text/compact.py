"""The hand-written compact forms of the CAKE IR text form: a registry the printer and parser consult.

Value forms (wherever a field of the type holds a value, after `field:` or in a list):
    Expr        infix: `(M + 127) / 128`, `ceil_div(N, 128)` (see infix.py)
    GlobalRef   `A[m, kt * 64]`
    TileRef     `sA`, `sA@0`, `sA@(kt % 4)[warpgroup * 64 +: 64, 0 +: 64]`
    Window      `start +: size`
    BarrierRef  `full`, `full[i]`, `full@round(kt)`
    Operand     a TileRef, a float `1.0` / `-inf` / `nan`, `int(expr)`, `coord(1)`
Header forms (between an op's keyword and its block):
    Loop        `loop kt in 0 .. K / 64 { ... }` (var, start, end)

A form's `text(message, printer)` returns None when the message has no compact
spelling (a name that is not an identifier, an unset part whose absence the form
cannot show); the printer then writes the generic `{ field: ... }` block, which
the parser accepts in every value position. `parse(parser, message, path)` reads
the form at the parser's position into `message` and records locations.
"""

import collections

from cake.ir.v1 import ir_pb2

from compiler.ir import paths
from compiler.ir.descriptors import INT32, INT64
from compiler.ir.text.infix import (
    ATOM,
    EXPR_FIELDS,
    build,
    expr_text,
    parse_expr,
    parse_primary,
)
from compiler.ir.text.lexer import FLOAT, INT, IDENT
from compiler.ir.text.literals import format_float, is_symbol

Form = collections.namedtuple("Form", "fields text parse")

# Words an operand reads as a float, so a tile of a region with such a name needs the block form.
_FLOAT_WORDS = frozenset(("inf", "nan"))


def _expr_text(expr, printer):
    return expr_text(expr)


def _expr_parse(parser, expr, path):
    build(parser, parse_expr(parser), expr, path)


def _global_text(ref, printer):
    if not is_symbol(ref.param):
        return None
    return "%s[%s]" % (ref.param, ", ".join(printer.value(c) for c in ref.coords))


def _global_parse(parser, ref, path):
    ref.param = _name(parser, path, "a tensor name")
    parser.expect("[", "after the tensor name %r" % ref.param)
    parser.comma_list("]", lambda i: parser.value(ref.coords.add(), paths.join(path, "coords", i)))


def _window_text(window, printer):
    start = expr_text(window.start) if window.HasField("start") else None
    return None if start is None else "%s +: %d" % (start, window.size)


def _window_parse(parser, window, path):
    tree = parse_expr(parser)
    parser.record(path, tree[1])
    build(parser, tree, window.start, paths.join(path, "start"))
    parser.expect("+:", "between a window's start and its size")
    window.size = parser.signed_int(*INT64, "as the window size")


def _tile_text(ref, printer):
    if not is_symbol(ref.region):
        return None
    text = ref.region
    if ref.HasField("stage"):
        text += "@" + (expr_text(ref.stage, ATOM) or printer.inline(ref.stage))
    if ref.window:
        text += "[%s]" % ", ".join(printer.value(w) for w in ref.window)
    return text


def _tile_parse(parser, ref, path):
    ref.region = _name(parser, path, "a region name")
    if parser.accept("@"):
        stage_path = paths.join(path, "stage")
        if parser.peek().text == "{":
            parser.value(ref.stage, stage_path)
        else:
            build(parser, parse_primary(parser), ref.stage, stage_path)
    if parser.accept("["):
        windows = ref.window
        parser.comma_list("]", lambda i: parser.value(windows.add(), paths.join(path, "window", i)))


def _barrier_text(ref, printer):
    if not is_symbol(ref.barrier):
        return None
    slot = ref.WhichOneof("slot")
    if slot == "index":
        return "%s[%s]" % (ref.barrier, printer.value(ref.index))
    if slot == "round":
        return "%s@round(%s)" % (ref.barrier, printer.value(ref.round))
    return ref.barrier


def _barrier_parse(parser, ref, path):
    ref.barrier = _name(parser, path, "a barrier name")
    if parser.accept("["):
        parser.value(ref.index, paths.join(path, "index"))
        parser.expect("]", "after the barrier index")
    elif parser.accept("@"):
        parser.expect("round", "after '@' in a barrier reference (full@round(kt))")
        parser.expect("(", "after 'round'")
        parser.value(ref.round, paths.join(path, "round"))
        parser.expect(")", "after the round")


def _operand_text(operand, printer):
    kind = operand.WhichOneof("kind")
    if kind == "tile":
        return None if operand.tile.region in _FLOAT_WORDS else printer.compact(operand.tile)
    if kind == "imm":
        return format_float(operand.imm)
    if kind == "scalar":
        return "int(%s)" % printer.value(operand.scalar)
    if kind == "coord":
        return "coord(%d)" % operand.coord
    return None


def _operand_parse(parser, operand, path):
    token, after = parser.peek(), parser.peek(1)
    if token.text == "int" and after.text == "(":
        parser.record(path, token)
        parser.skip(2)
        parser.value(operand.scalar, paths.join(path, "scalar"))
        parser.expect(")", "to close int(")
    elif token.text == "coord" and after.text == "(":
        parser.record(path, token)
        parser.skip(2)
        operand.coord = parser.signed_int(*INT32, "as the coordinate axis")
        parser.expect(")", "to close coord(")
    elif token.kind in (FLOAT, INT) or token.text == "-" or token.text in _FLOAT_WORDS:
        parser.record(path, token)
        operand.imm = parser.float_literal("as an operand")
    elif token.kind == IDENT:
        parser.record(path, token)
        _tile_parse(parser, operand.tile, paths.join(path, "tile"))
    else:
        parser.fail(
            token,
            "expected an operand (a tile, a float, int(expr) or coord(axis)), found %s"
            % token.describe(),
        )


def _loop_text(loop, printer):
    if not (is_symbol(loop.var) and loop.HasField("start") and loop.HasField("end")):
        return None
    start, end = expr_text(loop.start), expr_text(loop.end)
    if start is None or end is None:
        return None
    return "%s in %s .. %s" % (loop.var, start, end)


def _loop_parse(parser, loop, path):
    loop.var = parser.ident("as the loop variable")
    parser.expect("in", "after the loop variable (loop kt in 0 .. K)")
    _expr_parse(parser, loop.start, paths.join(path, "start"))
    parser.expect("..", "between the loop's start and end")
    _expr_parse(parser, loop.end, paths.join(path, "end"))


def _name(parser, path, what):
    parser.record(path, parser.peek())
    return parser.ident("as " + what)


def _form(message_type, fields, text, parse):
    return message_type.DESCRIPTOR.full_name, Form(frozenset(fields), text, parse)


VALUE_FORMS = dict(
    (
        _form(ir_pb2.Expr, EXPR_FIELDS, _expr_text, _expr_parse),
        _form(ir_pb2.GlobalRef, ("param", "coords"), _global_text, _global_parse),
        _form(ir_pb2.Window, ("start", "size"), _window_text, _window_parse),
        _form(ir_pb2.TileRef, ("region", "stage", "window"), _tile_text, _tile_parse),
        _form(ir_pb2.BarrierRef, ("barrier", "index", "round"), _barrier_text, _barrier_parse),
        _form(ir_pb2.Operand, ("tile", "imm", "scalar", "coord"), _operand_text, _operand_parse),
    )
)
HEADER_FORMS = dict((_form(ir_pb2.Loop, ("var", "start", "end"), _loop_text, _loop_parse),))
# Repeated fields of this type are op lists: one `member { ... }` item per element.
OP = ir_pb2.Op.DESCRIPTOR
