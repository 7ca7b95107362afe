"""Whether the verifier, the cost model and lowering agree that a kernel fits (resources, features, layout).

`judge(kernel)` asks all three about one kernel and returns a Verdict; `disagreement(verdict)`
says what is inconsistent, or None. A kernel is in the checked domain when the verifier finds
no error outside the resource and target families: on other errors (a malformed schedule)
the later stages' behaviour is not defined. CAKE-RES-006 (tensor memory) and CAKE-RES-008
(cluster size) are left out too: only a launch can check them. In the domain:
- the verifier accepts the kernel iff the analysis finds it fits (analyze() answers at the
  representative shapes) and lowering accepts it (lower() returns);
- the stage that refuses is the one the verifier's error names: shared memory, threads,
  register budgets and needs, and blocks per SM (RES-001/002/004/005/009) fail the analysis;
  instruction families (CAKE-TARGET), setmaxnreg values (RES-003) and named-barrier ids
  (RES-007) fail lowering;
- when all three accept, they agree on the layout: threads per block, shared bytes and the
  register budget at launch;
- compiler/targets/fits.py, what schedules ask before they choose parameters, finds the
  block does not fit iff the verifier reports threads, shared memory, the register pool
  or a role's registers (RES-002/001/004/005).
compiler/consistency_test.py runs it over the good corpus and thousands of mutations
(compiler/testing/resource_mutations.py); bench_consistency.py runs a larger sample.
"""

import collections

from cake.compiler.v1 import diagnostics_pb2

from compiler import analysis, verify
from compiler.lower import LoweringError, lower
from compiler.targets import database, fits, registers
from compiler.verify.context import Context

ANALYSIS_REFUSES = {"CAKE-RES-001", "CAKE-RES-002", "CAKE-RES-004", "CAKE-RES-005", "CAKE-RES-009"}
LOWERING_REFUSES = {"CAKE-RES-003", "CAKE-RES-007"}  # and every CAKE-TARGET error
LAUNCH_ONLY = {"CAKE-RES-006", "CAKE-RES-008"}
BLOCK_FIT = {"CAKE-RES-001", "CAKE-RES-002", "CAKE-RES-004", "CAKE-RES-005"}  # what fits.shortfalls answers

Verdict = collections.namedtuple("Verdict", "errors in_domain analysis lowering layouts shortfalls",
                                 defaults=(None,))


def _fit_families(diag_id):
    return diag_id.startswith("CAKE-RES-") or diag_id.startswith("CAKE-TARGET-")


def judge(kernel):
    """The three stages' answers about `kernel` (analysis and lowering: None when they accept, else why)."""
    diags = verify.verify(kernel)
    errors = sorted({d.id for d in diags if d.severity == diagnostics_pb2.SEVERITY_ERROR})
    in_domain = all(_fit_families(e) for e in errors) and not LAUNCH_ONLY & set(errors)
    if not in_domain:
        return Verdict(errors, False, None, None, None)
    try:
        shortfalls = fits.shortfalls(kernel)
    except ValueError:  # no target CAKE compiles for: CAKE-TARGET's error, nothing to fit
        shortfalls = None
    try:
        report = analysis.analyze(kernel)
        refused_by_analysis = None
    except analysis.AnalysisError as e:
        report, refused_by_analysis = None, str(e)
    try:
        lowered = lower(kernel)
        refused_by_lowering = None
    except LoweringError as e:
        lowered, refused_by_lowering = None, "%s: %s" % (e.path, e.message)
    layouts = None
    if report is not None and lowered is not None:
        ctx = Context(kernel)
        budgeted = ctx.has("setmaxnreg") and any(r.registers for r in kernel.roles)
        entry = registers.kernel_launch_budget(kernel, database.limits(ctx.target_name))
        layouts = {  # threads per block, shared bytes, and with budgets the registers every thread starts with
            "verifier": (ctx.block_threads, ctx.smem_layout.requested, entry if budgeted else None),
            "analysis": (report.threads_per_block, report.shared_bytes_per_block,
                         report.registers_per_thread if budgeted else None),
            "lowering": (lowered.threads, lowered.launch.dynamic_shared_bytes,
                         lowered.entry_registers if budgeted else None),
        }
    return Verdict(errors, True, refused_by_analysis, refused_by_lowering, layouts, shortfalls)


def disagreement(v):
    """What is inconsistent in a Verdict, or None."""
    if not v.in_domain:
        return None
    accepted = not v.errors
    if accepted != (v.analysis is None and v.lowering is None):
        return "the verifier %s, the analysis %s, lowering %s" % (
            "accepts it" if accepted else "refuses it (%s)" % ", ".join(v.errors),
            "refuses it (%s)" % v.analysis if v.analysis else "finds it fits",
            "refuses it (%s)" % v.lowering if v.lowering else "accepts it")
    if set(v.errors) & ANALYSIS_REFUSES and v.analysis is None:
        return "the verifier reports %s but the analysis finds it fits" % ", ".join(sorted(set(v.errors) & ANALYSIS_REFUSES))
    lowering_errors = [e for e in v.errors if e in LOWERING_REFUSES or e.startswith("CAKE-TARGET-")]
    if lowering_errors and v.lowering is None:
        return "the verifier reports %s but lowering accepts it" % ", ".join(lowering_errors)
    if v.layouts and len(set(v.layouts.values())) > 1:
        return "threads, shared bytes and launch registers differ: %s" % v.layouts
    block = sorted(set(v.errors) & BLOCK_FIT)
    if v.shortfalls is not None and bool(block) != bool(v.shortfalls):
        return "the verifier %s, fits.shortfalls %s" % (
            "reports %s" % ", ".join(block) if block else "finds the block fits",
            "finds %s" % "; ".join(v.shortfalls) if v.shortfalls else "finds the block fits")
    return None
