"""AnalysisError, and expression evaluation that fails with it.

The analysis reports what a kernel costs or says, with AnalysisError, which
required information is missing (an unbound symbol, an empty loop bound); the
service turns the error into a diagnostic. Every expression the analysis
evaluates goes through `evaluate`, so a bad expression names its IR path.
"""

from compiler.ir import expr as ir_expr


class AnalysisError(ValueError):
    """The kernel lacks information the cost analysis needs; the message says what and where."""


def evaluate(expr, env, path):
    """The value of the expression at `path` under `env`; AnalysisError when it has none."""
    try:
        return ir_expr.evaluate(expr, env)
    except ir_expr.UnboundSymbol as e:
        raise AnalysisError(
            "%s: unbound symbol %r (bind it in shapes, or it is not a symbol, scalar param, loop variable or builtin)"
            % (path, e.args[0])
        ) from None
    except (ValueError, ZeroDivisionError) as e:
        raise AnalysisError("%s: %s" % (path, e)) from None


def as_float(value, path):
    """A count as a float; AnalysisError when it is beyond floating point."""
    try:
        return float(value)
    except OverflowError:
        raise AnalysisError("%s: %d is too large to count with" % (path, value)) from None
