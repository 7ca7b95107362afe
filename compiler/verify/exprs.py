"""Integer expressions as the verifier needs them: compiled to closures, their names, divisibility.

`compile_expr` turns an `ir_pb2.Expr` into a Python closure once, so the protocol
model can evaluate loop bounds, conditions and rounds thousands of times cheaply.
The operators are compiler.ir.expr's (the one table of IR semantics); the verifier
adds what untrusted IR needs: a closure raises `ExprError` (never anything else)
when the expression is empty, has an unset operator, divides by zero, names an
unbound symbol, nests absurdly deep or leaves the range of machine integers.

`divisor` proves divisibility symbolically: the largest d known to divide an
expression under the contract's `S % d == 0` constraints and specialized values.
"""

import math

from cake.ir.v1 import ir_pb2

from compiler.ir.expr import OPERATORS

OP = ir_pb2.BinaryOp

# Builtins every role body sees (see the Expr comment in ir.proto).
THREAD_BUILTINS = ("thread", "warp", "warpgroup", "lane", "elected")
BLOCK_BUILTINS = ("block.x", "block.y", "block.z", "grid.x", "grid.y", "grid.z", "cluster.rank")
BUILTINS = frozenset(THREAD_BUILTINS + BLOCK_BUILTINS)
# The binary operators an expression may name (0 is BINARY_OP_UNSPECIFIED: no operator).
DEFINED_OPS = frozenset(v.number for v in OP.DESCRIPTOR.values if v.number)


class ExprError(Exception):
    """An expression has no value: empty, unset operator, division by zero, unbound symbol."""


# Values beyond this magnitude are treated as undefined (they overflow every machine integer).
_LIMIT = 1 << 63
# Nesting beyond this is refused rather than recursed into (mutated IR can nest arbitrarily).
MAX_DEPTH = 200


def _fail(message):
    def f(env):
        raise ExprError(message)

    return f


def compile_expr(expr, depth=0):
    """A closure env -> int for `expr`; it raises ExprError when the expression has no value."""
    fn, leaf = _compile(expr, depth)
    return fn


def _compile(expr, depth):
    """(closure, leaf): leaf is ("int", value) or ("sym", name) for a leaf or a constant subexpression (its
    parent reads it inline rather than calling its closure), else None."""
    kind = expr.WhichOneof("kind")
    if depth > MAX_DEPTH:
        return _fail("expression nested too deeply"), None
    if kind == "int":
        value = expr.int
        return (lambda env: value), ("int", value)
    if kind == "sym":
        name = expr.sym

        def sym(env):
            try:
                return env[name]
            except KeyError:
                raise ExprError("unbound symbol %r" % name) from None

        return sym, ("sym", name)
    if kind == "binary":
        fn = OPERATORS.get(expr.binary.op)
        if fn is None:
            return _fail("unset binary operator"), None
        lhs = _compile(expr.binary.lhs, depth + 1)
        rhs = _compile(expr.binary.rhs, depth + 1)
        return _binary(fn, lhs, rhs)
    return _fail("empty expression"), None


def _binary(fn, lhs, rhs):
    """The closure of fn(lhs, rhs), reading constant and symbol operands inline (the common `k * 64`,
    `N / 256`, `B * N`); operands are evaluated left to right, and every result is range checked. The model
    evaluates these millions of times, so each variant inlines the operator's checks rather than calling a
    helper."""
    (lfn, lleaf), (rfn, rleaf) = lhs, rhs
    lkind, a = lleaf or (None, None)
    rkind, b = rleaf or (None, None)
    if lkind == "int" and rkind == "int":
        try:
            value = _checked(fn, a, b)
        except ExprError:
            pass
        else:
            return (lambda env: value), ("int", value)
    if lkind == "sym" and rkind == "int":

        def sym_int(env):
            try:
                v = fn(env[a], b)
            except KeyError:
                raise ExprError("unbound symbol %r" % a) from None
            except ZeroDivisionError as e:  # the IR's operators raise it; untrusted IR gets an ExprError
                raise ExprError(str(e)) from None
            if -_LIMIT < v < _LIMIT:
                return v
            raise ExprError("value out of range")

        return sym_int, None
    if lkind == "sym" and rkind == "sym":

        def sym_sym(env):
            try:
                x = env[a]
                y = env[b]
                v = fn(x, y)
            except KeyError as e:  # (the operators raise none)
                raise ExprError("unbound symbol %r" % e.args[0]) from None
            except ZeroDivisionError as e:
                raise ExprError(str(e)) from None
            if -_LIMIT < v < _LIMIT:
                return v
            raise ExprError("value out of range")

        return sym_sym, None
    if lkind == "int":

        def int_any(env):
            y = rfn(env)
            try:
                v = fn(a, y)
            except ZeroDivisionError as e:
                raise ExprError(str(e)) from None
            if -_LIMIT < v < _LIMIT:
                return v
            raise ExprError("value out of range")

        return int_any, None
    if rkind == "sym":  # `it * T + jj`

        def any_sym(env):
            x = lfn(env)
            try:
                y = env[b]
            except KeyError:
                raise ExprError("unbound symbol %r" % b) from None
            try:
                v = fn(x, y)
            except ZeroDivisionError as e:
                raise ExprError(str(e)) from None
            if -_LIMIT < v < _LIMIT:
                return v
            raise ExprError("value out of range")

        return any_sym, None
    if rkind == "int":

        def any_int(env):
            x = lfn(env)
            try:
                v = fn(x, b)
            except ZeroDivisionError as e:
                raise ExprError(str(e)) from None
            if -_LIMIT < v < _LIMIT:
                return v
            raise ExprError("value out of range")

        return any_int, None

    def any_any(env):
        x = lfn(env)
        y = rfn(env)
        try:
            v = fn(x, y)
        except ZeroDivisionError as e:
            raise ExprError(str(e)) from None
        if -_LIMIT < v < _LIMIT:
            return v
        raise ExprError("value out of range")

    return any_any, None


def _checked(fn, a, b):
    try:
        v = fn(a, b)
    except ZeroDivisionError as e:  # the IR's operators raise it; untrusted IR gets an ExprError
        raise ExprError(str(e)) from None
    if -_LIMIT < v < _LIMIT:
        return v
    raise ExprError("value out of range")


def evaluate(expr, env):
    """The value of `expr` under env; ExprError when it has none."""
    return compile_expr(expr)(env)


def names(expr, depth=0):
    """The symbol names `expr` mentions."""
    kind = expr.WhichOneof("kind")
    if kind == "sym":
        return {expr.sym}
    if kind == "binary" and depth <= MAX_DEPTH:
        return names(expr.binary.lhs, depth + 1) | names(expr.binary.rhs, depth + 1)
    return set()


def constant(expr):
    """The value of an expression without symbols, else None."""
    try:
        return compile_expr(expr)({})
    except ExprError:
        return None


def conjuncts(expr, depth=0):
    """The operands of a chain of logical ands (the expression itself when it is no and)."""
    if expr.WhichOneof("kind") == "binary" and expr.binary.op == OP.BINARY_OP_AND and depth <= MAX_DEPTH:
        return conjuncts(expr.binary.lhs, depth + 1) + conjuncts(expr.binary.rhs, depth + 1)
    return [expr]


def modulus_fact(expr):
    """(symbol, d) when `expr` reads `S % d == 0` (either side), else None."""
    if expr.WhichOneof("kind") != "binary" or expr.binary.op != OP.BINARY_OP_EQ:
        return None
    lhs, rhs = expr.binary.lhs, expr.binary.rhs
    if constant(lhs) == 0:
        lhs, rhs = rhs, lhs
    if constant(rhs) != 0 or lhs.WhichOneof("kind") != "binary" or lhs.binary.op != OP.BINARY_OP_MOD:
        return None
    sym, mod = lhs.binary.lhs, constant(lhs.binary.rhs)
    if sym.WhichOneof("kind") != "sym" or not mod or mod <= 0:
        return None
    return sym.sym, mod


def divisibility_facts(contract):
    """Symbol -> the largest d the contract guarantees divides it (constraints and specialized values)."""
    facts = {}
    for c in contract.constraints:
        for part in conjuncts(c.expr):
            fact = modulus_fact(part)
            if fact:
                name, d = fact
                facts[name] = facts.get(name, 1) * d // math.gcd(facts.get(name, 1), d)
    for s in contract.symbols:
        if s.HasField("value"):
            facts[s.name] = abs(s.value) or 0
    return facts


def divisor(expr, facts, depth=0):
    """The largest d known to divide `expr` for every valid input (0 means the value is 0)."""
    kind = expr.WhichOneof("kind")
    if kind == "int":
        return abs(expr.int)
    if kind == "sym":
        return facts.get(expr.sym, 1)
    if kind != "binary" or depth > MAX_DEPTH:
        return 1
    op = expr.binary.op
    a = divisor(expr.binary.lhs, facts, depth + 1)
    if op == OP.BINARY_OP_MUL:
        return a * divisor(expr.binary.rhs, facts, depth + 1)
    if op in (OP.BINARY_OP_ADD, OP.BINARY_OP_SUB):
        return math.gcd(a, divisor(expr.binary.rhs, facts, depth + 1))
    if op == OP.BINARY_OP_DIV:
        c = constant(expr.binary.rhs)
        if c and a and a % abs(c) == 0:
            return a // abs(c)
    return 1
