"""The agent's view of the compiler: verify, analyze, compile, through the compiler service only.

A Port wraps a client of the compiler service (compiler/service):
- a CompilerClient talking gRPC to a server: a local server process the port starts,
  or the one at `address` (the default, kind "grpc");
- an InProcessClient, which runs the service's own servicer in this process
  (kind "in-process"; "auto" falls back to it when no local server starts).
Either way the service verifies, analyzes and compiles: the port imports nothing of
the compiler but those clients and the generated protos, so both kinds give the same
answers, failures included (compiler_port_test checks it).

What the agent has learned travels as request fields: its declarative verifier rules
(knowledge/rules.json, as data) with every Verify, its refitted calibration
(knowledge/calibration.json) with every Analyze; the calibration features it learns
from come back in the AnalyzeResponse, and the IR features its rule synthesis reads in
the VerifyResponse (`features`). The outer loop's checks are calls too: whether a
proposed rule set loads (ListRules with the rules, `rules`), whether a proposed rule
fires (Verify with it, `verify(kernel, extra_rules)`), and the refit of the cost
model's constants to measured times (Calibrate, `calibrate`).

A port made with `source_only` lowers without nvcc when it compiles (CompileRequest's
source_only: the CUDA source and launch metadata, no cubin), for fast GPU-free tests.
"""

import atexit
import contextlib
import dataclasses
import functools
import json

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


@dataclasses.dataclass
class Refit:
    calibration: dict  # the refitted calibration, as data (what Analyze takes)
    constants: dict  # its constants by name
    error_before: float  # RMS log error on the held-out samples under the starting constants
    error_after: float  # the same under the refitted ones


class Refused(ValueError):
    """The service refused what a call sent (malformed rules, unfit samples) or its size (a limit):
    the message says why, in the service's words."""


class Port:
    """The compiler as the agent sees it, through one service client."""

    def __init__(self, client, name, extra_rules=(), calibration=None, source_only=False, owns_client=False):
        self.client = client
        self.name = name  # "grpc" or "in-process"
        self.extra_rules = list(extra_rules)  # learned rules, as data (compiler/verify/declarative.py's format)
        self.calibration = calibration  # a calibration as data (compiler/analysis/calibration.json's format), or None
        self.source_only = source_only  # compile lowers to CUDA without nvcc (no cubin)
        self._owns_client = owns_client  # close() closes the client (else open_port's context does)

    def verify(self, kernel, extra_rules=None):
        """The verifier's diagnostics under the built-in rules and the learned ones (`extra_rules`, as data,
        instead of the port's when given)."""
        rules = self.extra_rules if extra_rules is None else list(extra_rules)
        return list(self.client.verify(kernel, extra_rules=rules).diagnostics)

    def rules(self, extra_rules=()):
        """[RuleInfo] of the built-in rules, then `extra_rules` (as data); Refused naming what is wrong with them."""
        with _refusals():
            return list(self.client.list_rules(extra_rules=list(extra_rules)).rules)

    def calibrate(self, samples, held_out, calibration, version):
        """The Refit of the cost model's constants to (features, measured seconds) `samples`, judged on
        `held_out`, from `calibration` (as data; the compiler's own when None), named `version`; Refused when
        the service refuses the samples or the refit runs past its limit."""
        with _refusals():
            r = self.client.calibrate(samples, held_out, calibration=calibration, version=version)
        return Refit(json.loads(r.calibration_json), dict(r.constants), r.error_before, r.error_after)

    def features(self, kernel):
        """The kernel's IR features: [(level, IR path, {feature: value})], what learned rules are written over."""
        r = self.client.verify(kernel, want_features=True)
        return [tuple(entity) for entity in json.loads(r.features_json or "[]")]

    def primitives(self):
        """[Primitive] of every op kind (ListPrimitives): its text keyword, what it does and the PTX it lowers to,
        its targets and instruction family: the op catalogue an author is taught."""
        return list(self.client.list_primitives().primitives)

    def analyze(self, kernel, shapes, device):
        """The CostReport under the agent's calibration; the caller has verified the kernel."""
        r = self.client.analyze(kernel, shapes=shapes, device=device, skip_verify=True, calibration=self.calibration)
        report = r.report if r.HasField("report") else None
        return Analysis(report, list(r.diagnostics), dict(r.features))

    def compile(self, kernel):
        """The compiled kernel (its lowering alone on a source_only port); the caller has verified it."""
        r = self.client.compile(kernel, skip_verify=True, source_only=self.source_only)
        return Build(r.compiled if r.HasField("compiled") else None, list(r.diagnostics))

    def close(self):
        if self._owns_client:
            self.client.close()


@contextlib.contextmanager
def _refusals():
    """Turn the service's INVALID_ARGUMENT and RESOURCE_EXHAUSTED into Refused; other failures pass."""
    from compiler.service.client import CompilerServiceError

    try:
        yield
    except CompilerServiceError as e:
        if e.code.name not in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"):
            raise
        raise Refused(": ".join([e.message] + [d for _, d in e.field_violations[:1]])) from None


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
def open_port(kind, extra_rules=(), calibration=None, address=None, log=print, source_only=False):
    """Yield a Port: kind "grpc" (a local server unless `address`), "in-process", or "auto" (grpc, else
    in-process). `extra_rules`: learned rules as data; `calibration`: a calibration as data, or None;
    `source_only`: builds lower without nvcc. PortError when the gRPC service asked for cannot be reached."""
    if kind not in ("grpc", "auto", "in-process"):
        raise ValueError("unknown compiler port %r (grpc, in-process, auto)" % kind)
    knowledge = dict(extra_rules=extra_rules, calibration=calibration, source_only=source_only)
    with contextlib.ExitStack() as stack:
        port = None if kind == "in-process" else _grpc_port(kind, address, stack, knowledge, log)
        if port is None:
            from compiler.service.inprocess import InProcessClient

            port = Port(stack.enter_context(InProcessClient()), "in-process", **knowledge)
        yield port


def _grpc_port(kind, address, stack, knowledge, log):
    """A gRPC Port whose client (and local server) `stack` closes; None when "auto" falls back in-process."""
    why = grpc_available()
    if why is None:
        from compiler.service.client import CompilerClient, start_local_server

        if address:  # an explicit address never falls back
            return Port(stack.enter_context(_reached(CompilerClient(address), address)), "grpc", **knowledge)
        try:
            return Port(stack.enter_context(start_local_server(port=0)), "grpc", **knowledge)
        except RuntimeError as e:  # the server process did not start; the message holds its log
            why = "the local compiler server did not start: %s" % e
    if kind == "grpc":
        raise PortError(why)
    log("compiler service unavailable (%s): running the service in-process" % why)
    return None


def in_process_port(extra_rules=(), calibration=None, source_only=False):
    """A Port over a service in this process that its caller closes (port.close()): for what makes its port by
    name and holds no context (an executor worker's port in tests)."""
    from compiler.service.inprocess import InProcessClient

    return Port(InProcessClient(), "in-process", extra_rules, calibration, source_only=source_only, owns_client=True)


@functools.lru_cache(maxsize=None)
def process_port():
    """One in-process Port for this whole process (no learned knowledge), opened at the first call and closed
    at exit: for what asks the compiler outside a run's port (the fake evaluator, test helpers)."""
    stack = contextlib.ExitStack()
    atexit.register(stack.close)
    return stack.enter_context(open_port("in-process", log=lambda _: None))
