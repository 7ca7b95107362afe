"""The binding of shape symbols a cost report is computed at.

Given shapes (name -> int) bind what they name; every other shape symbol gets its
representative value:
- its `value` when the kernel is specialized to one;
- else DEFAULT (4096, a mid-sized problem) clamped to [min, max] (max 0, the
  proto default, means unbounded), then moved to the nearest value that
  satisfies the contract's constraints on the symbols bound so far: candidates
  are the clamped value, its round-ups then round-downs to multiples of 2, 4,
  ..., 2^30, then the next 256 integers; the first that satisfies every
  evaluable constraint wins (none does: the clamped value, and the constraint
  check below reports it).
Symbols are bound in declaration order, so a constraint relating two symbols
steers the later one. Scalar params are bound only by `shapes` (they have no
range to choose from). A binding outside a symbol's range or violating a
constraint is an AnalysisError: the kernel is not defined there.
"""

from compiler.analysis.errors import AnalysisError, evaluate
from compiler.ir import expr as ir_expr

DEFAULT = 4096
INT64 = (-(1 << 63), (1 << 63) - 1)
_SEARCH_BITS = 30
_SEARCH_LINEAR = 256


def _candidates(value):
    yield value
    for bits in range(1, _SEARCH_BITS + 1):
        step = 1 << bits
        yield -(-value // step) * step
    for bits in range(1, _SEARCH_BITS + 1):
        step = 1 << bits
        yield value // step * step
    for delta in range(1, _SEARCH_LINEAR + 1):
        yield value + delta


def _satisfied(constraints, env):
    """Whether every constraint that only names bound symbols holds under env."""
    for c in constraints:
        if ir_expr.symbols(c.expr) <= env.keys():
            try:
                if not ir_expr.evaluate(c.expr, env):
                    return False
            except (ValueError, ZeroDivisionError):
                return False
    return True


def _default(symbol, constraints, env):
    lo, hi = symbol.min, symbol.max or INT64[1]
    start = min(max(DEFAULT, lo), hi)
    for value in _candidates(start):
        if lo <= value <= hi and _satisfied(constraints, {**env, symbol.name: value}):
            return value
    return start


def _check_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or not INT64[0] <= value <= INT64[1]:
        raise AnalysisError("shapes[%r] = %r is not a 64-bit integer" % (name, value))


def bind(kernel, shapes=None):
    """name -> int for every shape symbol (and the scalar params `shapes` binds); see the module doc."""
    shapes = dict(shapes or {})
    contract = kernel.contract
    symbols = {s.name: s for s in contract.symbols}
    scalars = {p.name for p in kernel.params}
    unknown = set(shapes) - set(symbols) - scalars
    if unknown:
        raise AnalysisError(
            "shapes bind %s, which the kernel does not declare (its symbols: %s)"
            % (", ".join(sorted(unknown)), ", ".join(symbols) or "none")
        )
    for name, value in shapes.items():
        _check_int(name, value)
    env = {name: value for name, value in shapes.items() if name in scalars}
    for i, symbol in enumerate(contract.symbols):
        path = "kernel.contract.symbols[%d]" % i
        hi = symbol.max or INT64[1]
        if symbol.min > hi:
            raise AnalysisError("%s: symbol %s has min %d > max %d" % (path, symbol.name, symbol.min, hi))
        if symbol.name in shapes:
            value = shapes[symbol.name]
            if symbol.HasField("value") and value != symbol.value:
                raise AnalysisError("%s: %s is specialized to %d, not %d" % (path, symbol.name, symbol.value, value))
            if not symbol.min <= value <= hi:
                raise AnalysisError("%s: %s = %d is outside [%d, %d]" % (path, symbol.name, value, symbol.min, hi))
        elif symbol.HasField("value"):
            value = symbol.value
        else:
            value = _default(symbol, contract.constraints, env)
        env[symbol.name] = value
    for i, c in enumerate(contract.constraints):
        if not evaluate(c.expr, env, "kernel.contract.constraints[%d].expr" % i):
            raise AnalysisError(
                "kernel.contract.constraints[%d]: the shapes %s violate it (%s)"
                % (i, ", ".join("%s=%d" % kv for kv in sorted(env.items())), c.doc or "no doc")
            )
    return env
