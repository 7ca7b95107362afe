"""Contract rules: names are declared, ranges and constraints admit inputs, the grid covers the output,
outputs are written and inputs left alone, the metric and its tolerance make sense."""

import re

from cake.ir.v1 import ir_pb2

from compiler.ir import oprefs
from compiler.verify import exprs
from compiler.verify.protocol import findings
from compiler.verify.registry import Finding, rule

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+\Z")


def _scoped_exprs(ctx, known):
    """(path, Expr, loop variables in scope, role index or None) for every expression of the kernel that may read
    a name outside `known` (an op whose expressions read only known names, loop variables in scope and its role's
    register scalars is passed over whole)."""
    k = ctx.kernel
    for i, c in enumerate(k.contract.constraints):
        yield "kernel.contract.constraints[%d]" % i, c.expr, (), None
    for i, g in enumerate(k.launch.grid):
        yield "kernel.launch.grid[%d]" % i, g, (), None
    for i, p in enumerate(k.params):
        for d in p.shape:
            yield "kernel.params[%d]" % i, d, (), None
    for site in ctx.ops:
        if site.msg is None:
            continue
        names = ctx.names_read(site.path, site.msg) - known
        if names and not names <= set(site.loop_vars) | ctx.scalars[site.role_index].keys():
            for _, _, e in ctx.expressions(site.path, site.msg):
                yield site.path, e, site.loop_vars, site.role_index


@rule(
    "CAKE-CONTRACT-001", "contract", "error",
    doc="Every name an expression uses is a declared symbol, a scalar param, an enclosing loop variable, a builtin or, "
    "in a role's ops, a register scalar that role owns (a one-element register region: its run-time value).",
    fix_hint="Declare the symbol in the contract (or the scalar param), or use a loop variable that encloses this op.",
)
def declared_names(ctx):
    known = ctx.static_names
    # Register scalars read by another role are the ownership rule's (CAKE-STRUCT-010) to report.
    anyone = set().union(*ctx.scalars)
    for path, e, scope, role in _scoped_exprs(ctx, known):
        own = ctx.scalars[role].keys() if role is not None else ()
        for name in sorted(exprs.names(e) - known - set(scope) - set(own)):
            if role is not None and name in anyone:
                continue
            region = ctx.region(name)
            if role is not None and region is not None and region.space == ir_pb2.MEMORY_SPACE_REGISTER:
                yield Finding(path, "`%s` is a register region but not a one-element one (PER_THREAD [1], ROW_PER_THREAD "
                              "[threads] or [threads, 1]); expressions read only those" % name,
                              (("`%s` is declared here" % name, ctx.region_path(name)),))
            else:
                yield Finding(path, "`%s` is not declared here" % name)


@rule(
    "CAKE-CONTRACT-002", "contract", "error",
    doc="Each symbol's range is non-empty (min <= max) and a specialized value lies in it.",
    fix_hint="Fix the symbol's min, max or value so that min <= value <= max.",
)
def symbol_ranges(ctx):
    for i, s in enumerate(ctx.kernel.contract.symbols):
        path = "kernel.contract.symbols[%d]" % i
        if s.min > s.max:
            yield Finding(path, "symbol `%s` has min %d > max %d" % (s.name, s.min, s.max))
        elif s.HasField("value") and not s.min <= s.value <= s.max:
            yield Finding(path, "symbol `%s` is specialized to %d outside [%d, %d]" % (s.name, s.value, s.min, s.max))


@rule(
    "CAKE-CONTRACT-003", "contract", "error",
    doc="Some input satisfies all constraints within the symbols' ranges (sampled: the smallest valid values and a few more).",
    fix_hint="Relax the constraints or widen the ranges so that a valid input exists.",
)
def satisfiable(ctx):
    if ctx.has_errors(ids=("CAKE-CONTRACT-001", "CAKE-CONTRACT-002", "CAKE-STRUCT-005")) or not ctx.symbols:
        return
    if ctx.binder.base() is None:
        yield Finding("kernel.contract", "no sampled input satisfies every constraint within the symbols' ranges")


def _floor_divisions(expr, depth=0):
    """(dividend, divisor) of every floor division by a constant in an expression."""
    if expr.WhichOneof("kind") != "binary" or depth > exprs.MAX_DEPTH:
        return
    b = expr.binary
    if b.op == ir_pb2.BINARY_OP_DIV:
        d = exprs.constant(b.rhs)
        if d and d > 1:
            yield b.lhs, d
    yield from _floor_divisions(b.lhs, depth + 1)
    yield from _floor_divisions(b.rhs, depth + 1)


@rule(
    "CAKE-CONTRACT-004", "contract", "error",
    doc="The grid covers every output tile: a floor division X / c in a grid dimension needs the contract to guarantee c | X.",
    fix_hint="Add the constraint `X % c == 0` to the contract, or size the grid with ceil_div and guard the edge tiles.",
)
def grid_covers(ctx):
    if ctx.kernel.launch.persistent:
        return
    for i, g in enumerate(ctx.kernel.launch.grid):
        for x, c in _floor_divisions(g):
            d = exprs.divisor(x, ctx.facts)
            if d == 0 or d % c == 0:
                continue
            yield Finding(
                "kernel.launch.grid[%d]" % i,
                "grid dimension divides by %d without the contract guaranteeing divisibility: the last partial tile "
                "would never be computed" % c,
            )


@rule(
    "CAKE-CONTRACT-005", "contract", "error",
    doc="Every write-access (or read-write) tensor param is written by some op.",
    fix_hint="Store the result into the param (copy, tma_store or atomic), or declare it read-only.",
)
def outputs_written(ctx):
    written = {ref.param for site in ctx.ops for _, ref, access in site.globals() if access != oprefs.R}
    for i, p in enumerate(ctx.kernel.params):
        if p.kind != ir_pb2.PARAM_KIND_TENSOR or p.access not in (ir_pb2.ACCESS_WRITE, ir_pb2.ACCESS_READ_WRITE):
            continue
        if p.name not in written:
            yield Finding("kernel.params[%d]" % i, "output `%s` is never written" % p.name)


@rule(
    "CAKE-CONTRACT-006", "contract", "error",
    doc="Read-only tensor params are never written.",
    fix_hint="Declare the param `write` or `read_write`, or stop writing it.",
)
def inputs_untouched(ctx):
    for site in ctx.ops:
        if site.msg is None:
            continue
        for field, g, access in site.globals():
            hit = ctx.params.get(g.param)
            if hit and access != oprefs.R and hit[1].access == ir_pb2.ACCESS_READ:
                yield Finding(site.path, "writes `%s`, which the contract declares read-only" % g.param,
                              (("the param", ctx.param_path(g.param)),))


# Metric -> (lowest, highest) sensible tolerance.
_TOLERANCE = {
    ir_pb2.METRIC_REL_L2: (0.0, 0.1),
    ir_pb2.METRIC_EXACT: (0.0, 0.0),
    ir_pb2.METRIC_LABEL_AGREEMENT: (0.9, 1.0),
    ir_pb2.METRIC_RECALL: (0.5, 1.0),
}


@rule(
    "CAKE-CONTRACT-007", "contract", "error",
    doc="The metric is set and its tolerance is sensible (rel_l2 in (0, 0.1], label agreement >= 0.9, recall >= 0.5, exact 0).",
    fix_hint="Choose the metric that judges this output and a tolerance in its sensible range.",
)
def metric(ctx):
    c = ctx.kernel.contract
    span = _TOLERANCE.get(c.metric)
    if span is None:
        yield Finding("kernel.contract", "the contract has no metric (rel_l2, exact, label_agreement or recall)")
        return
    lo, hi = span
    if hi == 0:
        ok, expected = c.tolerance == 0, "0"
    elif lo == 0:
        ok, expected = 0 < c.tolerance <= hi, "in (0, %g]" % hi
    else:
        ok, expected = lo <= c.tolerance <= hi, "in [%g, %g]" % (lo, hi)
    if not ok:
        yield Finding("kernel.contract", "tolerance %r is not sensible for this metric (expected %s)" % (c.tolerance, expected))


@rule(
    "CAKE-CONTRACT-008", "contract", "error",
    doc="The contract names its reference implementation as a dotted Python name.",
    fix_hint="Set `reference` to the dotted name of the torch reference, e.g. kernels.gemm.reference.gemm.",
)
def reference(ctx):
    if not _DOTTED.match(ctx.kernel.contract.reference):
        yield Finding("kernel.contract", "reference %r is not a dotted Python name" % ctx.kernel.contract.reference)


def _input_exprs(ctx):
    """(path, Expr) of grid dims and loop bounds that depend on inputs only (no loop variables)."""
    for i, g in enumerate(ctx.kernel.launch.grid):
        yield "kernel.launch.grid[%d]" % i, g
    for site in ctx.sites("loop"):
        for f in ("start", "end", "step"):
            e = getattr(site.msg, f)
            if site.msg.HasField(f) and not exprs.names(e) & set(site.loop_vars):
                yield site.path, e


@rule(
    "CAKE-CONTRACT-009", "contract", "error",
    doc="Grid sizes, loop bounds, conditions and barrier slots have a value on every valid input (no division by zero, positive steps): sampled inputs, and the protocol model's runs.",
    fix_hint="Guard the expression or constrain the symbols so it is defined on every valid input.",
    model=True,
)
def defined(ctx):
    if ctx.has_errors(ids=("CAKE-CONTRACT-001", "CAKE-CONTRACT-002", "CAKE-CONTRACT-003", "CAKE-STRUCT-005",
                           "CAKE-STRUCT-018")):
        return
    base = ctx.binder.base()
    samples = [ctx.binder.environment(base)] + [env for _, env in ctx.binder.scenarios(3)] if base is not None else []
    for path, e in _input_exprs(ctx):
        fn = exprs.compile_expr(e)
        for env in samples:
            try:
                fn(env)
            except exprs.ExprError as err:
                inputs = ", ".join("%s=%d" % (n, env[n]) for n in ctx.symbols if n in env)
                yield Finding(path, "this expression has no value for the valid input %s (%s)" % (inputs, err))
                return
    v = findings.violation(ctx, "undefined")
    if v:
        yield v
