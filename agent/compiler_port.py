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


class PortError(RuntimeError):
    """The compiler cannot be reached the way asked (an address nobody answers at, a server that did not start)."""


# Seconds a --compiler-address gets to answer its first call.
REACH_TIMEOUT_S = 10.0


def grpc_available():
    """Why the gRPC port cannot be used here, or None when it can."""
    try:
        import compiler.service.client  # noqa: F401
    except ImportError as e:
        return "the compiler service client does not import (%s)" % e
    return None


def _reached(client, address):
    """`client` once the service at `address` answers (ListTargets); PortError when it does not."""
    from compiler.service.client import CompilerServiceError

    try:
        client.list_targets(timeout=REACH_TIMEOUT_S)
    except CompilerServiceError as e:
        client.close()
        raise PortError("no compiler service answers at %s (%s: %s); start one with `bazel run //compiler:server`"
                        " (or python3 -m compiler.service.main), or leave out --compiler-address to start a local"
                        " one" % (address, e.code.name, e.message)) from None
    return client


@contextlib.contextmanager
def open_port(kind, extra_rules=(), calibration=None, address=None, log=print):
    """Yield a port: kind "grpc" (a local server unless `address`), "in-process", or "auto" (grpc, else in-process).
    PortError when the gRPC service asked for cannot be reached."""
    if kind not in ("grpc", "auto", "in-process"):
        raise ValueError("unknown compiler port %r (grpc, in-process, auto)" % kind)
    with contextlib.ExitStack() as stack:
        port = None if kind == "in-process" else _grpc_port(kind, address, stack, extra_rules, calibration, log)
        yield port or InProcessPort(extra_rules, calibration)


def _grpc_port(kind, address, stack, extra_rules, calibration, log):
    """A GrpcPort whose client (and local server) `stack` closes; None when "auto" falls back in-process."""
    why = grpc_available()
    if why is None:
        from compiler.service.client import CompilerClient, start_local_server

        if address:  # an explicit address never falls back
            return GrpcPort(stack.enter_context(_reached(CompilerClient(address), address)), extra_rules, calibration)
        try:
            return GrpcPort(stack.enter_context(start_local_server(port=0)), extra_rules, calibration)
        except RuntimeError as e:  # the server process did not start; the message holds its log
            why = "the local compiler server did not start: %s" % e
    if kind == "grpc":
        raise PortError(why)
    log("compiler service unavailable (%s): calling the compiler in-process" % why)
    return None
