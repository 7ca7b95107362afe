"""The agent's view of the compiler: verify, analyze, compile, behind one small interface.

Two implementations:
- GrpcPort talks to the compiler service (compiler/service) through its client,
  usually a local server process it starts (`start_local_server`); the default.
- InProcessPort calls compiler.verify, compiler.analysis and compiler.build.driver
  directly (`--in-process`, and the fallback when the service is not available).

Both apply what the agent has learned: declarative verifier rules from
knowledge/rules.json (the service verifies with its built-in rules, so a GrpcPort
checks the learned ones locally through compiler.verify's public `extra_rules`), and
a refitted calibration (knowledge/calibration.json) for predictions. Features for
calibration come from compiler.analysis.features (the service has no call for them).
"""

import contextlib
import dataclasses

from cake.compiler.v1 import diagnostics_pb2

from compiler import analysis
from compiler.analysis import roofline
from compiler.verify import verify as run_verifier

ANALYSIS_ID = "CAKE-ANALYSIS-001"


@dataclasses.dataclass
class Analysis:
    report: object  # analysis_pb2.CostReport, or None when the analysis failed
    diagnostics: list
    features: dict  # calibration features (empty when the analysis failed)


@dataclasses.dataclass
class Build:
    compiled: object  # artifact_pb2.CompiledKernel, or None
    diagnostics: list


def analysis_diagnostic(error):
    """An AnalysisError as the service reports it: a CAKE-ANALYSIS-001 error."""
    message = str(error)
    path = "kernel"
    head, sep, rest = message.partition(": ")
    if sep and head.startswith("kernel") and " " not in head:
        path, message = head, rest
    return diagnostics_pb2.Diagnostic(
        severity=diagnostics_pb2.SEVERITY_ERROR, id=ANALYSIS_ID, category=diagnostics_pb2.CATEGORY_CONTRACT,
        message=message, path=path,
        fix_hint="Give the analysis what it lacks: bind the symbol in `shapes`, or fix the value the message names.")


def _features(kernel, shapes, device):
    try:
        return analysis.features(kernel, shapes, device)
    except analysis.AnalysisError:
        return {}


def _recalibrated(report, features, calibration):
    """`report` with the prediction of `calibration` when the agent has a refitted one."""
    if calibration is None or report is None or not features:
        return report
    report.predicted_seconds = roofline.predict(features, calibration.constants).seconds
    report.calibration = calibration.version
    return report


class InProcessPort:
    name = "in-process"

    def __init__(self, extra_rules=(), calibration=None):
        self.extra_rules = list(extra_rules)
        self.calibration = calibration

    def verify(self, kernel):
        return list(run_verifier(kernel, extra_rules=self.extra_rules))

    def analyze(self, kernel, shapes, device):
        try:
            report = analysis.analyze(kernel, shapes, device, calibration=self.calibration)
        except analysis.AnalysisError as e:
            return Analysis(None, [analysis_diagnostic(e)], {})
        return Analysis(report, [], _features(kernel, shapes, device))

    def compile(self, kernel):
        from compiler.build.driver import build  # imports lowering: only when something is compiled

        result = build(kernel)
        return Build(result.compiled, list(result.diagnostics))

    def close(self):
        pass


class GrpcPort:
    name = "grpc"

    def __init__(self, client, extra_rules=(), calibration=None):
        self.client = client
        self.extra_rules = list(extra_rules)
        self.learned_ids = {r.id for r in self.extra_rules}
        self.calibration = calibration

    def verify(self, kernel):
        diags = list(self.client.verify(kernel).diagnostics)
        if self.extra_rules:
            diags += [d for d in run_verifier(kernel, extra_rules=self.extra_rules) if d.id in self.learned_ids]
        return diags

    def analyze(self, kernel, shapes, device):
        r = self.client.analyze(kernel, shapes=shapes, device=device, skip_verify=True)
        if not r.HasField("report"):
            return Analysis(None, list(r.diagnostics), {})
        features = _features(kernel, shapes, device)
        return Analysis(_recalibrated(r.report, features, self.calibration), list(r.diagnostics), features)

    def compile(self, kernel):
        r = self.client.compile(kernel, skip_verify=True)
        return Build(r.compiled if r.HasField("compiled") else None, list(r.diagnostics))

    def close(self):
        pass


def grpc_available():
    """Why the gRPC port cannot be used here, or None when it can."""
    try:
        import compiler.service.client  # noqa: F401
    except ImportError as e:
        return "the compiler service client does not import (%s)" % e
    return None


@contextlib.contextmanager
def open_port(kind, extra_rules=(), calibration=None, address=None, log=print):
    """Yield a port: kind "grpc" (a local server unless `address`), "in-process", or "auto" (grpc, else in-process)."""
    if kind in ("grpc", "auto"):
        why = grpc_available()
        if why is None:
            from compiler.service.client import CompilerClient, start_local_server

            if address:
                with CompilerClient(address) as client:
                    yield GrpcPort(client, extra_rules, calibration)
            else:
                with start_local_server(port=0) as client:
                    yield GrpcPort(client, extra_rules, calibration)
            return
        if kind == "grpc":
            raise RuntimeError(why)
        log("compiler service unavailable (%s): calling the compiler in-process" % why)
    elif kind != "in-process":
        raise ValueError("unknown compiler port %r (grpc, in-process, auto)" % kind)
    yield InProcessPort(extra_rules, calibration)
