"""Assessing one candidate: keep the contract, verify and predict (cheap, every candidate), compile and measure.

Each step returns an Outcome: the candidate's next status, its fitness when it has
one, and every diagnostic, prediction, measurement and failure to record. Failures
carry signatures (learn/signatures.py) and the diagnostics behind them drive repair.
"""

import dataclasses

from cake.compiler.v1 import diagnostics_pb2
from google.protobuf import json_format

from agent import contract_gate
from agent.learn.signatures import failure

ERROR = diagnostics_pb2.SEVERITY_ERROR


@dataclasses.dataclass
class Outcome:
    status: str  # invalid | analyzed | evaluated | measured | failed
    fitness_s: float = None
    diagnostics: list = dataclasses.field(default_factory=list)  # (stage, Diagnostic)
    prediction: dict = None
    measurement: dict = None
    failures: list = dataclasses.field(default_factory=list)
    errors: list = dataclasses.field(default_factory=list)  # the error Diagnostics repair moves address
    device_s: float = 0.0  # GPU time the assessment cost
    record: dict = None  # the measurement's worker-pool record (evaluations.jsonl), when a pool ran it


def _errors(diags):
    return [d for d in diags if d.severity == ERROR]


def _first_error_failure(stage, kind, errors, ir_hash):
    d = errors[0]
    return failure(stage, kind, d.id, d.message, ir_hash)


def check(port, kernel, ir_hash, shapes, device, task=None):
    """Keep the task's contract, verify, then predict: status `invalid` (with the errors) or `analyzed` (with a
    prediction). A candidate that breaks `task`'s kernel contract (agent/contract_gate.py) is invalid before
    the compiler sees it, with the reasons."""
    if task is not None:
        reasons = contract_gate.breaks(task.kernel_contract, task, kernel)
        if reasons:
            d = contract_gate.diagnostic(reasons)
            return Outcome("invalid", diagnostics=[("task", d)], errors=[d],
                           failures=[failure("task", "contract", d.id, d.message, ir_hash)])
    diags = port.verify(kernel)
    out = Outcome("analyzed", diagnostics=[("verify", d) for d in diags])
    errors = _errors(diags)
    if errors:
        out.status, out.errors = "invalid", errors
        out.failures = [_first_error_failure("verify", "verifier", errors, ir_hash)]
        return out
    analysis = port.analyze(kernel, shapes, device)
    out.diagnostics += [("analysis", d) for d in analysis.diagnostics]
    if analysis.report is None:
        errors = _errors(analysis.diagnostics)
        out.status, out.errors = "invalid", errors
        # A contract the task's shapes violate is a mismatch with the task, not a defect of the kernel.
        kind = "task_mismatch" if errors and "violate" in errors[0].message else "analysis"
        out.failures = [_first_error_failure("analysis", kind, errors, ir_hash)] if errors else []
        return out
    r = analysis.report
    out.prediction = {
        "predicted_s": r.predicted_seconds,
        "bottleneck": r.bottleneck,
        "calibration": r.calibration,
        "report": json_format.MessageToJson(r, indent=None, sort_keys=True),
        "features": analysis.features,
    }
    return out


def build(port, kernel, ir_hash):
    """Compile: (the compiled kernel or None, the Outcome so far: `failed` with any build error)."""
    result = port.compile(kernel)
    out = Outcome("failed", diagnostics=[("build", d) for d in result.diagnostics])
    errors = _errors(result.diagnostics)
    if result.compiled is None or errors:
        out.errors = errors
        out.failures = [_first_error_failure("build", "build", errors, ir_hash)] if errors else [
            failure("build", "build", "", "the build returned no kernel", ir_hash)]
        return None, out
    return result.compiled, out


def measure(evaluator, compiled, kernel, ir_hash, binding, label, out):
    """Measure a built kernel: `out` becomes `measured` with the median, or stays `failed` with the reason."""
    m = evaluator.measure(compiled, kernel, binding, label)
    out.device_s, out.record = m.device_s, m.record
    if not m.passed:
        out.failures = [failure("runtime", m.kind, "", m.message, ir_hash)]
        return out
    out.measurement = {"median_s": m.median_s, "p10_s": m.p10_s, "p90_s": m.p90_s, "device_s": m.device_s,
                       "detail": m.detail}
    out.status, out.fitness_s = "measured", m.median_s
    return out


def compile_and_measure(port, evaluator, kernel, ir_hash, binding, label):
    """Compile (build errors: `failed`), then measure (`measured` with the median, or `failed`)."""
    compiled, out = build(port, kernel, ir_hash)
    return out if compiled is None else measure(evaluator, compiled, kernel, ir_hash, binding, label, out)


def build_for_report(port, kernel):
    """(cuda source or None, diagnostics): the generated CUDA of a kernel, for the report."""
    build = port.compile(kernel)
    return (build.compiled.cuda_source if build.compiled is not None else None), build.diagnostics
