"""Integer expressions of CAKE IR: Python operators that build them, and their evaluation.

`E` wraps an `ir_pb2.Expr` so schedules read like arithmetic: `(M + 127) // 128`,
`(kt % 4 == 0) & elected`. Python's `//` and `%` are the IR's floor division and
modulo; `&` and `|` are logical and/or of booleans. `evaluate` gives an expression's
value under a binding of its symbols (the runtime uses it for grid sizes).
"""

import operator

from cake.ir.v1 import ir_pb2

OP = ir_pb2.BinaryOp


class UnboundSymbol(KeyError):
    """An expression names a symbol the environment does not bind."""

    def __str__(self):
        return "unbound symbol %r in expression" % self.args[0]


class E:
    """An IR integer expression with Python operators."""

    __slots__ = ("proto",)
    __hash__ = None  # == builds an expression, so E cannot be a dict key

    def __init__(self, proto):
        self.proto = proto

    @staticmethod
    def sym(name):
        return E(ir_pb2.Expr(sym=name))

    def _bin(self, op, other, swap=False):
        lhs, rhs = (as_expr(other), self.proto) if swap else (self.proto, as_expr(other))
        return E(ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=op, lhs=lhs, rhs=rhs)))

    def __add__(self, o):
        return self._bin(OP.BINARY_OP_ADD, o)

    def __radd__(self, o):
        return self._bin(OP.BINARY_OP_ADD, o, swap=True)

    def __sub__(self, o):
        return self._bin(OP.BINARY_OP_SUB, o)

    def __rsub__(self, o):
        return self._bin(OP.BINARY_OP_SUB, o, swap=True)

    def __mul__(self, o):
        return self._bin(OP.BINARY_OP_MUL, o)

    def __rmul__(self, o):
        return self._bin(OP.BINARY_OP_MUL, o, swap=True)

    def __floordiv__(self, o):
        return self._bin(OP.BINARY_OP_DIV, o)

    def __rfloordiv__(self, o):
        return self._bin(OP.BINARY_OP_DIV, o, swap=True)

    def __mod__(self, o):
        return self._bin(OP.BINARY_OP_MOD, o)

    def __rmod__(self, o):
        return self._bin(OP.BINARY_OP_MOD, o, swap=True)

    def __eq__(self, o):
        return self._bin(OP.BINARY_OP_EQ, o)

    def __ne__(self, o):
        return self._bin(OP.BINARY_OP_NE, o)

    def __lt__(self, o):
        return self._bin(OP.BINARY_OP_LT, o)

    def __le__(self, o):
        return self._bin(OP.BINARY_OP_LE, o)

    def __gt__(self, o):
        return self._bin(OP.BINARY_OP_GT, o)

    def __ge__(self, o):
        return self._bin(OP.BINARY_OP_GE, o)

    def __and__(self, o):
        return self._bin(OP.BINARY_OP_AND, o)

    def __rand__(self, o):
        return self._bin(OP.BINARY_OP_AND, o, swap=True)

    def __or__(self, o):
        return self._bin(OP.BINARY_OP_OR, o)

    def __ror__(self, o):
        return self._bin(OP.BINARY_OP_OR, o, swap=True)

    def __bool__(self):
        raise TypeError("an IR expression has no truth value while building; use & and | for logic")

    def __repr__(self):
        return "E(%s)" % str(self.proto).replace("\n", " ").strip()


def as_expr(value):
    """An `ir_pb2.Expr` for an int, a symbol name, an `E` or an `ir_pb2.Expr`."""
    if isinstance(value, E):
        return value.proto
    if isinstance(value, ir_pb2.Expr):
        return value
    if isinstance(value, bool):
        return ir_pb2.Expr(int=int(value))
    if isinstance(value, int):
        return ir_pb2.Expr(int=value)
    if isinstance(value, str):
        return ir_pb2.Expr(sym=value)
    raise TypeError("cannot make an IR expression from %r (%s)" % (value, type(value).__name__))


def ceil_div(a, b):
    return E(as_expr(a))._bin(OP.BINARY_OP_CEIL_DIV, b)


def min_(a, b):
    return E(as_expr(a))._bin(OP.BINARY_OP_MIN, b)


def max_(a, b):
    return E(as_expr(a))._bin(OP.BINARY_OP_MAX, b)


def _floordiv(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero in IR expression")
    return a // b


def _mod(a, b):
    if b == 0:
        raise ZeroDivisionError("modulo by zero in IR expression")
    return a % b


def _ceildiv(a, b):
    return -_floordiv(-a, b)


# BinaryOp -> its Python function (ZeroDivisionError for division or modulo by zero): the one operator table.
OPERATORS = {
    OP.BINARY_OP_ADD: operator.add,  # (the builtins, not lambdas: the verifier's model calls them millions of times)
    OP.BINARY_OP_SUB: operator.sub,
    OP.BINARY_OP_MUL: operator.mul,
    OP.BINARY_OP_DIV: _floordiv,
    OP.BINARY_OP_MOD: _mod,
    OP.BINARY_OP_CEIL_DIV: _ceildiv,
    OP.BINARY_OP_MIN: min,
    OP.BINARY_OP_MAX: max,
    OP.BINARY_OP_EQ: lambda a, b: int(a == b),
    OP.BINARY_OP_NE: lambda a, b: int(a != b),
    OP.BINARY_OP_LT: lambda a, b: int(a < b),
    OP.BINARY_OP_LE: lambda a, b: int(a <= b),
    OP.BINARY_OP_GT: lambda a, b: int(a > b),
    OP.BINARY_OP_GE: lambda a, b: int(a >= b),
    OP.BINARY_OP_AND: lambda a, b: int(bool(a) and bool(b)),
    OP.BINARY_OP_OR: lambda a, b: int(bool(a) or bool(b)),
}


def evaluate(expr, env):
    """The value of `expr` (an E or ir_pb2.Expr) with symbols bound by `env` (name -> int)."""
    expr = as_expr(expr)
    kind = expr.WhichOneof("kind")
    if kind == "int":
        return expr.int
    if kind == "sym":
        try:
            return env[expr.sym]
        except KeyError:
            raise UnboundSymbol(expr.sym) from None
    if kind == "binary":
        fn = OPERATORS.get(expr.binary.op)
        if fn is None:
            raise ValueError("expression has an unset binary operator")
        return fn(evaluate(expr.binary.lhs, env), evaluate(expr.binary.rhs, env))
    raise ValueError("empty expression")


def symbols(expr):
    """The set of symbol names an expression mentions."""
    expr = as_expr(expr)
    kind = expr.WhichOneof("kind")
    if kind == "sym":
        return {expr.sym}
    if kind == "binary":
        return symbols(expr.binary.lhs) | symbols(expr.binary.rhs)
    return set()


def constant(expr):
    """The expression's value if it mentions no symbols, else None."""
    try:
        return evaluate(expr, {})
    except (UnboundSymbol, ValueError, ZeroDivisionError):
        return None
