"""The protocol model as the rules see it: run once per verification, gated on a well-formed kernel.

Model rules (sync, pipeline, data consistency) each claim one kind of
violation. The model runs only when the static rules found no error in the
structure, contract, synchronization, pipeline or data-consistency families:
on a malformed kernel its findings would be consequences, not causes.
"""

from cake.compiler.v1 import diagnostics_pb2

from compiler.verify.protocol import program, simulate
from compiler.verify.registry import Finding, rule

C = diagnostics_pb2
_GATES = (
    C.CATEGORY_STRUCTURE,
    C.CATEGORY_CONTRACT,
    C.CATEGORY_SYNCHRONIZATION,
    C.CATEGORY_PIPELINE,
    C.CATEGORY_DATA_CONSISTENCY,
)


def gated(ctx):
    """Whether static errors (structure, contract, synchronization, pipeline, data consistency) gate the model off."""
    return any(ctx.has_errors(category=c) for c in _GATES)


def result(ctx):
    """The ModelResult for ctx's kernel, or None when static errors gate the model off."""
    cached = getattr(ctx, "_model_result", False)
    if cached is not False:
        return cached
    out = None if gated(ctx) else simulate.run(ctx)
    ctx._model_result = out
    return out


def violation(ctx, *kinds):
    """A Finding for the model's violation when it is one of `kinds`, else None."""
    res = result(ctx)
    if res is None or res.violation is None or res.violation.kind not in kinds:
        return None
    v = res.violation
    env = res.scenarios[-1][1]
    inputs = ", ".join("%s=%d" % (name, env[name]) for name in ctx.symbols if name in env)
    if program.DATA in env:  # a kernel with conditions on register values runs each input twice
        taken = "taken" if env[program.DATA] else "not taken"
        inputs += "%sconditions on register values %s" % (", " if inputs else "", taken)
    where = " (found with %s)" % inputs if inputs else ""
    return Finding(v.path, v.message + where, v.notes, v.hint)


def model_rule(id, category, doc, fix_hint, *kinds):
    """Register a rule that reports the protocol model's violations of `kinds`."""

    def check(ctx):
        v = violation(ctx, *kinds)
        if v:
            yield v

    check.__name__ = "model_" + kinds[0]
    rule(id, category, "error", doc=doc, fix_hint=fix_hint, model=True)(check)
