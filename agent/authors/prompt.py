"""What the LLM author sends and how its answer is read.

The system message teaches the language once per run (it is the same for every call, so
an endpoint can cache it): what to do, the text form's grammar (compiler/ir/text/grammar.py)
and the op catalogue the compiler serves (ListPrimitives: each op's meaning, the PTX it
lowers to, its targets). The user message is the call's state: the task, the parent's IR
text with its diagnostics and cost report, the run's elites (authors/population.py: the
fastest kernel of each kind of schedule, with its time, the best ones in full), the latest
failed attempts with the compiler's diagnostics, and the request: a unified diff against
the parent (authors/diffs.py), or the whole kernel.

An answer's kernel is its first ```diff block (or any text with a hunk header) applied to
the parent, else its first fenced block that starts with `kernel` (or the text from the
first line starting with `kernel`), parsed with compiler.ir.text.
"""

import re

from compiler.ir.text import parse_kernel

from agent.authors import diffs

SYSTEM = (
    "You write GPU kernels in CAKE IR, a typed schedule IR (warp roles with register budgets, shared-memory "
    "rings, TMA, mbarriers, wgmma). You are given a kernel that verifies, the compiler's diagnostics and its "
    "cost report, the fastest kernels found so far and recent attempts that failed, with why. Answer with one "
    "faster kernel computing exactly the same contract: change schedule decisions only (tile shapes, stages, "
    "warp roles, register budgets, swizzles, instruction shapes, where the epilogue runs). Prefer an edit: a "
    "unified diff against the given kernel's text in a ```diff block (hunks with a few lines of context); or "
    "the whole kernel in a ```cake block."
)
TOP_IR = 2  # elites shown in full; the rest by their time and niche
ELITES = 8
REJECTED = 6

_FENCE = re.compile(r"```([a-zA-Z]*)\n(.*?)```", re.S)


def catalogue(primitives):
    """The op catalogue as text, from the compiler's Primitive messages (ListPrimitives)."""
    lines = []
    for p in primitives:
        where = "targets %s" % ", ".join(p.targets) if p.targets else "no target"
        needs = "; needs %s" % p.feature if p.feature else ""
        variants = "; kinds: %s" % ", ".join(v.name for v in p.variants) if p.variants else ""
        lines.append("- %s: %s (%s%s%s)" % (p.name, " ".join(p.doc.split()), where, needs, variants))
    return "\n".join(lines)


def system(grammar, ops):
    return "%s\n\n# The text form\n%s\n# Ops\n%s\n" % (SYSTEM, grammar, ops)


def _diagnostics(diags):
    if not diags:
        return "none"
    return "\n".join("%s %s at %s: %s (fix: %s)" % (d["severity"], d["diag_id"], d["path"], d["message"], d["fix_hint"])
                     for d in diags)


def _report(report):
    if report is None:
        return "none"
    stages = "\n".join("  %s: %.3f us (%s)" % (s.name, s.seconds * 1e6, s.detail) for s in report.stages)
    return "predicted %.3f us on %s, bottleneck %s\n%s" % (report.predicted_seconds * 1e6, report.device,
                                                          report.bottleneck, stages)


def _elites(elites, parent_id, timed):
    if not elites:
        return "none yet"
    out = []
    for rank, e in enumerate(elites):
        out.append("#%d: %.3f us %s, by %s (%s); schedule %s%s" % (
            e.id, e.fitness_s * 1e6, timed, e.tactic, e.author, e.niche, " (the kernel above)" if e.id == parent_id else ""))
        if rank < TOP_IR and e.id != parent_id:
            out.append("```\n%s```" % e.ir_text)
    return "\n".join(out)


def _rejected(rejected):
    if not rejected:
        return "none"
    return "\n".join("#%d by %s (%s): %s\n%s" % (r.id, r.tactic, r.author, r.status, _diagnostics(r.diagnostics))
                     for r in rejected)


def messages(task, parent, system_text, elites=(), rejected=(), timed="measured"):
    user = (
        "Task: %s at shapes %s on %s.\n\nKernel (#%d):\n```\n%s```\n\nDiagnostics:\n%s\n\nCost report:\n%s\n\n"
        "Fastest kernels of this run, one per kind of schedule (times %s):\n%s\n\n"
        "Recent attempts that failed:\n%s\n\n"
        "Answer with a unified diff against kernel #%d's text (```diff), or the whole kernel (```cake)."
        % (task.name, task.shapes, task.device, parent.id, parent.ir_text, _diagnostics(parent.diagnostics),
           _report(parent.report), timed, _elites(elites, parent.id, timed), _rejected(rejected), parent.id)
    )
    return [{"role": "system", "content": system_text}, {"role": "user", "content": user}]


def extract_ir(answer):
    """The IR text in an answer: a fenced block starting with `kernel`, else from the first `kernel` line on."""
    for _, block in _FENCE.findall(answer):
        if block.lstrip().startswith("kernel"):
            return block
    lines = answer.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("kernel "):
            return "\n".join(lines[i:]) + "\n"
    return answer


def _diff(answer):
    """The unified diff in an answer (a ```diff block, or hunks anywhere), or None."""
    for lang, block in _FENCE.findall(answer):
        if lang in ("diff", "patch") or diffs.is_diff(block):
            return block
    return answer if diffs.is_diff(answer) else None


def parse_answer(answer, parent_text):
    """The kernel in an answer: its diff applied to `parent_text`, or its whole kernel. compiler.ir's ParseError
    (with its location) when the text does not parse; diffs.DiffError when the diff does not apply."""
    edit = _diff(answer)
    text = diffs.apply(parent_text, edit) if edit is not None else extract_ir(answer)
    return parse_kernel(text, filename="<llm answer>").kernel


def retry_message(error):
    what = "does not apply" if isinstance(error, diffs.DiffError) else "does not parse"
    return {"role": "user", "content": "That %s: %s\nAnswer again with a corrected diff or the whole kernel."
            % (what, error)}
