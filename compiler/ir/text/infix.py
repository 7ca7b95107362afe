"""The infix form of CAKE IR integer expressions: `(M + 127) / 128`, `kt % 4 == 0 && elected`.

Operators bind as in C, loosest first: `||`, `&&`, comparisons (`==` `!=` `<`
`<=` `>` `>=`), `+ -`, `* / %`; all are left-associative, and `/` and `%` are
the IR's floor division and modulo. ceil_div, min and max are calls. The
printer adds exactly the parentheses the tree needs, so `a - (b - c)` keeps
its shape and every tree reads back as itself. A minus sign directly before
a literal belongs to the literal: `-5` is the int -5, `0 - 5` a subtraction.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import paths
from compiler.ir.descriptors import INT64
from compiler.ir.text.lexer import IDENT, INT, MAX_DEPTH
from compiler.ir.text.literals import is_symbol

_OPS = ir_pb2.BinaryOp
_INFIX = {
    "BINARY_OP_OR": ("||", 1),
    "BINARY_OP_AND": ("&&", 2),
    "BINARY_OP_EQ": ("==", 3),
    "BINARY_OP_NE": ("!=", 3),
    "BINARY_OP_LT": ("<", 3),
    "BINARY_OP_LE": ("<=", 3),
    "BINARY_OP_GT": (">", 3),
    "BINARY_OP_GE": (">=", 3),
    "BINARY_OP_ADD": ("+", 4),
    "BINARY_OP_SUB": ("-", 4),
    "BINARY_OP_MUL": ("*", 5),
    "BINARY_OP_DIV": ("/", 5),
    "BINARY_OP_MOD": ("%", 5),
}
_CALLS = {"BINARY_OP_CEIL_DIV": "ceil_div", "BINARY_OP_MIN": "min", "BINARY_OP_MAX": "max"}

# Binding strength of literals, symbols, calls and parenthesized expressions.
ATOM = 6
_INFIX_BY_OP = {_OPS.Value(name): spelling for name, spelling in _INFIX.items()}
_INFIX_BY_TEXT = {text: (_OPS.Value(name), prec) for name, (text, prec) in _INFIX.items()}
_CALL_BY_OP = {_OPS.Value(name): text for name, text in _CALLS.items()}
_CALL_BY_TEXT = {text: _OPS.Value(name) for name, text in _CALLS.items()}
# The fields the infix form expresses; a node with any other field set has no infix form.
EXPR_FIELDS = frozenset(("int", "sym", "binary"))
_BINARY_FIELDS = frozenset(("op", "lhs", "rhs"))


def expr_text(expr, min_prec=0):
    """`expr` in infix form, parenthesized if it binds looser than `min_prec`;
    None when some node of the tree has no infix form (an unset kind or operator,
    a symbol that is not an identifier, an unset operand, an unknown field)."""
    kind = expr.WhichOneof("kind")
    if kind is None or not _only(expr, EXPR_FIELDS):
        return None
    if kind == "int":
        return str(expr.int)
    if kind == "sym":
        return expr.sym if is_symbol(expr.sym) else None
    node = expr.binary
    if not (node.HasField("lhs") and node.HasField("rhs") and _only(node, _BINARY_FIELDS)):
        return None
    infix = _INFIX_BY_OP.get(node.op)
    if infix is not None:
        symbol, prec = infix
        lhs, rhs = expr_text(node.lhs, prec), expr_text(node.rhs, prec + 1)
        if lhs is None or rhs is None:
            return None
        text = "%s %s %s" % (lhs, symbol, rhs)
        return "(%s)" % text if prec < min_prec else text
    call = _CALL_BY_OP.get(node.op)
    lhs, rhs = expr_text(node.lhs), expr_text(node.rhs)
    if call is None or lhs is None or rhs is None:
        return None
    return "%s(%s, %s)" % (call, lhs, rhs)


def _only(message, names):
    return all(field.name in names for field, _ in message.ListFields())


# Parsing builds a tree of tuples first, because a node's IR path (and so its
# source-map key) is known only once the operators around it have been read:
#   ("int", token, value) | ("sym", token, name) | ("bin", token, op, lhs, rhs, depth)
# where token is the node's first token and depth its height in binary nodes.


def parse_expr(parser, min_prec=1, nesting=0):
    """Read an expression whose operators bind at least as tight as `min_prec`."""
    if nesting > MAX_DEPTH:
        parser.fail(parser.peek(), "expression nested deeper than %d levels" % MAX_DEPTH)
    lhs = parse_primary(parser, nesting)
    while True:
        token = parser.peek()
        infix = _INFIX_BY_TEXT.get(token.text)
        if infix is None or infix[1] < min_prec:
            return lhs
        parser.next()
        rhs = parse_expr(parser, infix[1] + 1, nesting + 1)
        lhs = _binary(parser, lhs[1], token, infix[0], lhs, rhs)


def parse_primary(parser, nesting=0):
    """Read a literal, a symbol, a call or a parenthesized expression."""
    token = parser.next()
    if token.kind == INT or token.text == "-":
        sign = 1
        if token.text == "-":
            sign, digits = -1, parser.next()
            if digits.kind != INT:
                parser.fail(digits, "expected an integer after '-', found %s" % digits.describe())
        else:
            digits = token
        return ("int", token, parser.int_value(token, sign, digits, *INT64))
    if token.text == "(":
        inner = parse_expr(parser, 1, nesting + 1)
        parser.expect(")", "to close the '(' at %d:%d" % (token.line, token.column))
        return inner[:1] + (token,) + inner[2:]
    if token.text in _CALL_BY_TEXT and parser.peek().text == "(":
        parser.next()
        lhs = parse_expr(parser, 1, nesting + 1)
        parser.expect(",", "between the arguments of %s" % token.text)
        rhs = parse_expr(parser, 1, nesting + 1)
        parser.expect(")", "after the arguments of %s" % token.text)
        return _binary(parser, token, token, _CALL_BY_TEXT[token.text], lhs, rhs)
    if token.kind == IDENT:
        return ("sym", token, token.text)
    parser.fail(token, "expected an expression, found %s" % token.describe())


def _binary(parser, start, operator, op, lhs, rhs):
    # `start` is the node's first token; `operator` is where a too-deep tree is reported.
    depth = 1 + max(_depth(lhs), _depth(rhs))
    if 2 * depth > MAX_DEPTH:
        parser.fail(operator, "expression nested deeper than %d levels" % MAX_DEPTH)
    return ("bin", start, op, lhs, rhs, depth)


def _depth(node):
    return node[5] if node[0] == "bin" else 0


def build(parser, node, expr, path):
    """Write a parsed tree into `expr` (the Expr at `path`), recording each node's location."""
    parser.record(path, node[1])
    kind = node[0]
    if kind == "int":
        expr.int = node[2]
    elif kind == "sym":
        expr.sym = node[2]
    else:
        binary = expr.binary
        binary_path = paths.join(path, "binary")
        parser.record(binary_path, node[1])
        binary.op = node[2]
        build(parser, node[3], binary.lhs, paths.join(binary_path, "lhs"))
        build(parser, node[4], binary.rhs, paths.join(binary_path, "rhs"))
