"""What the LLM author sends and how its answer is read.

The prompt holds the task, the parent's IR text, its diagnostics and its cost report
(bottleneck and per-stage times), and asks for one complete kernel in CAKE IR text.
The answer's IR is the first fenced block that starts with `kernel` (or the text
from the first line starting with `kernel`), parsed with compiler.ir.text.parse.
"""

import re

from compiler.ir.text import parse_kernel

SYSTEM = (
    "You write GPU kernels in CAKE IR, a typed schedule IR (warp roles with register budgets, shared-memory "
    "rings, TMA, mbarriers, wgmma). You are given a kernel that verifies, the compiler's diagnostics and its "
    "cost report. Answer with one complete, faster kernel in CAKE IR text form, in a ``` fenced block, "
    "computing exactly the same contract. Change schedule decisions only (tile shapes, stages, warp roles, "
    "register budgets, swizzles, instruction shapes, where the epilogue runs)."
)

_FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)```", re.S)


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


def messages(task, parent):
    user = (
        "Task: %s at shapes %s on %s.\n\nKernel:\n```\n%s```\n\nDiagnostics:\n%s\n\nCost report:\n%s\n"
        % (task.name, task.shapes, task.device, parent.ir_text, _diagnostics(parent.diagnostics), _report(parent.report))
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def extract_ir(answer):
    """The IR text in an answer: a fenced block starting with `kernel`, else from the first `kernel` line on."""
    for block in _FENCE.findall(answer):
        if block.lstrip().startswith("kernel"):
            return block
    lines = answer.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("kernel "):
            return "\n".join(lines[i:]) + "\n"
    return answer


def parse_answer(answer):
    """The kernel in an answer; compiler.ir's ParseError (with its location) when it does not parse."""
    return parse_kernel(extract_ir(answer), filename="<llm answer>").kernel


def retry_message(error):
    return {"role": "user", "content": "That does not parse: %s\nAnswer again with the whole corrected kernel." % error}
