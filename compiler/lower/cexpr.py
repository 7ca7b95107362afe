"""CAKE IR integer expressions -> C++ expressions.

Constant subexpressions are folded (with the IR's semantics, compiler/ir/expr.py) and
identities dropped (x + 0, x - 0, x * 1, x / 1), so a schedule's `block.x * 128 + 0`
prints as a person would write it. Floor division and modulo become plain `/` and `%`
when both operands are provably non-negative (the common case: loop counters, symbols,
builtins), and the cake::floordiv/floormod helpers otherwise, so the IR's semantics
hold for any sign.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir.expr import constant

OP = ir_pb2.BinaryOp

BUILTINS = {
    "block.x": "int(blockIdx.x)",
    "block.y": "int(blockIdx.y)",
    "block.z": "int(blockIdx.z)",
    "grid.x": "int(gridDim.x)",
    "grid.y": "int(gridDim.y)",
    "grid.z": "int(gridDim.z)",
    "thread": "cake_thread",
    "warp": "cake_warp",
    "warpgroup": "cake_warpgroup",
    "lane": "cake_lane",
    "elected": "cake_elected",
    "cluster.rank": "cake_cluster_rank",
}

_INFIX = {
    OP.BINARY_OP_ADD: "+",
    OP.BINARY_OP_SUB: "-",
    OP.BINARY_OP_MUL: "*",
    OP.BINARY_OP_EQ: "==",
    OP.BINARY_OP_NE: "!=",
    OP.BINARY_OP_LT: "<",
    OP.BINARY_OP_LE: "<=",
    OP.BINARY_OP_GT: ">",
    OP.BINARY_OP_GE: ">=",
    OP.BINARY_OP_AND: "&&",
    OP.BINARY_OP_OR: "||",
}

class ExprError(ValueError):
    """An expression lowering cannot print (unset, or an operator it does not know)."""


_CALL = {OP.BINARY_OP_MIN: "cake::imin", OP.BINARY_OP_MAX: "cake::imax", OP.BINARY_OP_CEIL_DIV: "cake::ceildiv<long long>"}


def _int(value):
    return "%dLL" % value if abs(value) >= 1 << 31 else str(value)


def ident(name):
    """The C++ name of an IR symbol, loop variable or scalar param."""
    return BUILTINS.get(name, "v_" + name.replace(".", "_"))


def nonneg(expr, scope):
    """True when `expr` is provably >= 0; `scope` maps names to their non-negativity."""
    kind = expr.WhichOneof("kind")
    if kind == "int":
        return expr.int >= 0
    if kind == "sym":
        return expr.sym in BUILTINS or scope.get(expr.sym, False)
    if kind == "binary":
        op = expr.binary.op
        if op in (OP.BINARY_OP_SUB,):
            return False
        return nonneg(expr.binary.lhs, scope) and nonneg(expr.binary.rhs, scope)
    return False


def cexpr(expr, scope, registers=()):
    """C++ text of an IR expression (fully parenthesised below the top level).

    `registers` names the role's one-element register regions: a symbol naming one is
    that register's run-time value (a label read from memory, a running count).
    """
    kind = expr.WhichOneof("kind")
    if kind == "int":
        return _int(expr.int)
    if kind == "sym":
        if expr.sym in registers:
            return "r_%s[0]" % expr.sym
        return ident(expr.sym)
    if kind != "binary":
        raise ExprError("an expression is unset (an empty Expr: no int, sym or binary)")
    b = expr.binary
    if b.op in _INFIX or b.op in _CALL or b.op in (OP.BINARY_OP_DIV, OP.BINARY_OP_MOD):
        value = constant(expr)
        if value is not None:
            return _int(value)
    lhs, rhs = cexpr(b.lhs, scope, registers), cexpr(b.rhs, scope, registers)
    left, right = constant(b.lhs), constant(b.rhs)
    if (b.op == OP.BINARY_OP_ADD and left == 0) or (b.op == OP.BINARY_OP_MUL and left == 1):
        return rhs
    if (b.op in (OP.BINARY_OP_ADD, OP.BINARY_OP_SUB) and right == 0) or (
            b.op in (OP.BINARY_OP_MUL, OP.BINARY_OP_DIV) and right == 1):
        return lhs
    if b.op in _INFIX:
        return "(%s %s %s)" % (lhs, _INFIX[b.op], rhs)
    if b.op in (OP.BINARY_OP_DIV, OP.BINARY_OP_MOD):
        if nonneg(b.lhs, scope) and nonneg(b.rhs, scope):
            return "(%s %s %s)" % (lhs, "/" if b.op == OP.BINARY_OP_DIV else "%", rhs)
        fn = "cake::floordiv" if b.op == OP.BINARY_OP_DIV else "cake::floormod"
        return "%s<long long>(%s, %s)" % (fn, lhs, rhs)
    if b.op in _CALL:
        if b.op == OP.BINARY_OP_CEIL_DIV and nonneg(b.lhs, scope) and nonneg(b.rhs, scope):
            return "((%s + %s - 1) / %s)" % (lhs, rhs, rhs)
        return "%s(%s, %s)" % (_CALL[b.op], lhs, rhs)
    raise ExprError("binary operator %d is not one lowering knows" % b.op)
