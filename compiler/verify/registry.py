"""The rule registry: every check the verifier runs, with its stable id, and how rules are run.

A rule is a function ctx -> iterable of `Finding`, registered with `@rule(...)`:

    @rule("CAKE-SYNC-004", "synchronization", "error",
          doc="A wait on a phase that nothing completes (deadlock).",
          fix_hint="Make every waited phase complete: ...", model=True)
    def deadlock(ctx): ...

Ids are stable forever: a retired rule keeps its id unused. Rules with
`model=True` read the protocol model; they run after the static rules and
only when those found the kernel well formed (see `Context.model`). A rule
that raises becomes a CAKE-INTERNAL-001 diagnostic carrying an incident id;
the traceback goes to the log, never into the message.
"""

import dataclasses
import logging
import uuid

from cake.compiler.v1 import diagnostics_pb2

from compiler.verify import report

log = logging.getLogger("cake.verify")

CATEGORIES = {
    "structure": diagnostics_pb2.CATEGORY_STRUCTURE,
    "resources": diagnostics_pb2.CATEGORY_RESOURCES,
    "target": diagnostics_pb2.CATEGORY_TARGET,
    "memory movement": diagnostics_pb2.CATEGORY_MEMORY_MOVEMENT,
    "synchronization": diagnostics_pb2.CATEGORY_SYNCHRONIZATION,
    "pipeline": diagnostics_pb2.CATEGORY_PIPELINE,
    "data consistency": diagnostics_pb2.CATEGORY_DATA_CONSISTENCY,
    "contract": diagnostics_pb2.CATEGORY_CONTRACT,
}
SEVERITIES = {
    "error": diagnostics_pb2.SEVERITY_ERROR,
    "warning": diagnostics_pb2.SEVERITY_WARNING,
    "note": diagnostics_pb2.SEVERITY_NOTE,
}

INTERNAL_ID = "CAKE-INTERNAL-001"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One violation a rule found: where, what, related places (message, path), an optional sharper hint."""

    path: str
    message: str
    notes: tuple = ()
    fix_hint: str = ""


@dataclasses.dataclass(frozen=True)
class Rule:
    """A registered check."""

    id: str
    category: int  # diagnostics_pb2.Category
    severity: int  # diagnostics_pb2.Severity
    doc: str  # one line: what the rule catches
    fix_hint: str  # the generic fix; a Finding may give a sharper one
    check: object  # ctx -> iterable of Finding
    model: bool = False  # reads the protocol model (runs after the static rules)

    @property
    def category_name(self):
        return next(k for k, v in CATEGORIES.items() if v == self.category)

    @property
    def severity_name(self):
        return next(k for k, v in SEVERITIES.items() if v == self.severity)


RULES = []
_BY_ID = {}


def rule(id, category, severity, doc, fix_hint, model=False):
    """Register the decorated function as the check of rule `id`."""

    def register(fn):
        if id in _BY_ID:
            raise ValueError("rule id %s registered twice" % id)
        r = Rule(id, CATEGORIES[category], SEVERITIES[severity], doc, fix_hint, fn, model)
        RULES.append(r)
        _BY_ID[id] = r
        return fn

    return register


def diagnostic(ctx, rule_, finding):
    """The Diagnostic for one finding of `rule_`, located through ctx.source_map."""
    d = diagnostics_pb2.Diagnostic(
        severity=rule_.severity,
        id=rule_.id,
        category=rule_.category,
        message=finding.message,
        path=finding.path,
        fix_hint=finding.fix_hint or rule_.fix_hint,
    )
    report.locate(d.location, ctx.source_map, finding.path)
    for message, path in finding.notes:
        note = d.notes.add(message=message, path=path)
        report.locate(note.location, ctx.source_map, path)
    return d


def internal_error(ctx, rule_id):
    """The diagnostic standing in for a rule that crashed; the traceback is logged under its incident id."""
    incident = uuid.uuid4().hex[:12]
    log.exception("verifier rule %s failed on kernel %r (incident %s)", rule_id, ctx.kernel.name, incident)
    d = diagnostics_pb2.Diagnostic(
        severity=diagnostics_pb2.SEVERITY_ERROR,
        id=INTERNAL_ID,
        category=diagnostics_pb2.CATEGORY_INTERNAL,
        message="the verifier's rule %s failed internally (incident %s); this kernel was not fully checked"
        % (rule_id, incident),
        path="kernel",
        fix_hint="This is a verifier bug, not a kernel defect: report incident %s with the kernel's IR." % incident,
    )
    report.locate(d.location, ctx.source_map, "kernel")
    return d


def run(ctx, rules):
    """Run `rules` on ctx (static rules first, then model rules); their diagnostics accumulate in ctx."""
    for stage in (False, True):
        for r in rules:
            if r.model != stage:
                continue
            try:
                found = [diagnostic(ctx, r, f) for f in r.check(ctx)]
            except Exception:  # a rule's bug must never reach the user as a traceback
                found = [internal_error(ctx, r.id)]
            ctx.diagnostics.extend(found)
    return ctx.diagnostics
