"""The CAKE IR verifier: a registry of rules, diagnostics located at IR paths with fix hints.

    from compiler.verify import verify, has_errors, format_diagnostic
    diags = verify(kernel)                        # list of diagnostics_pb2.Diagnostic
    diags = verify(parsed.kernel, parsed.source_map)  # with text locations
    for d in diags:
        print(format_diagnostic(d))

`RULES` lists every registered rule (id, category, severity, doc, fix_hint,
check); docs/verifier_rules.md documents them. Rules may also be given as data
(`load_rules(path)` or `rules_from_data(data)`, then `verify(kernel, extra_rules=...)`;
see declarative.py), over the IR features `kernel_features` lists.
The verifier never raises on a Kernel proto: a rule that fails becomes a
CAKE-INTERNAL-001 diagnostic.
"""

import gc

from cake.compiler.v1 import diagnostics_pb2

from compiler.verify import registry, report
from compiler.verify.context import Context

from compiler.verify import rules  # noqa: F401  (importing registers the rules)
from compiler.verify import features as _features  # noqa: E402
from compiler.verify.declarative import RuleError, load_rules, rules_from_data  # noqa: E402

RULES = registry.RULES
format_diagnostic = report.format_diagnostic

__all__ = ["RULES", "RuleError", "verify", "has_errors", "format_diagnostic", "kernel_features", "load_rules",
           "rules_from_data"]


def verify(kernel, source_map=None, extra_rules=()):
    """Diagnostics for `kernel` (an ir_pb2.Kernel), sorted by IR path order then id.

    `source_map` (compiler.ir.text's, with lookup(path) -> (line, column)) locates them
    in the text; `extra_rules` adds rules such as those `load_rules` returns.
    """
    # The rules and the protocol model allocate many short-lived containers that reference counting frees; the
    # cyclic collector's passes over them (and, now and then, over the caller's whole heap) cost a tenth of a
    # verification. It pauses meanwhile (as it was, afterwards: another thread may be verifying too).
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        try:
            ctx = Context(kernel, source_map)
        except Exception:  # an unforeseen proto shape must not reach the user as a traceback
            ctx = Context.__new__(Context)
            ctx.kernel, ctx.source_map = kernel, source_map
            return [registry.internal_error(ctx, "context")]
        diags = registry.run(ctx, list(RULES) + list(extra_rules))
        return sorted(diags, key=report.sort_key)
    finally:
        if paused:
            gc.enable()


def has_errors(diags):
    """True when any diagnostic is an error."""
    return any(d.severity == diagnostics_pb2.SEVERITY_ERROR for d in diags)


def kernel_features(kernel):
    """The kernel's IR features, [[level, IR path, {feature: value}]], what declarative rules are written over."""
    return [[level, path, feats] for level, path, feats in _features.extract(Context(kernel))]
