"""The CompilerService methods, and their registration with request decoding we control.

A kernel that fails verification or building is an OK response carrying
diagnostics. Requests are decoded here rather than by gRPC, whose failed decode
is INTERNAL: bytes that are not the request message are INVALID_ARGUMENT. Verify
and Analyze run on the RPC thread (milliseconds); Compile runs on the bounded
compile pool under the call's deadline.
"""

import concurrent.futures
import contextvars
import logging
import re
import time

import grpc
from google.protobuf.message import DecodeError

from cake.compiler.v1 import compiler_service_pb2 as service_pb2
from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from compiler import analysis, verify
from compiler.build import driver
from compiler.ir.enums import value_of
from compiler.service import catalog, errors, primitives, programs
from compiler.service.pool import Expired, QueueFull
from compiler.targets import TARGETS

SERVICE = service_pb2.DESCRIPTOR.services_by_name["CompilerService"]

ANALYSIS_ID = "CAKE-ANALYSIS-001"

# gRPC reports "no deadline" as a time remaining this far off (or more).
_NO_DEADLINE = 1e8

# An AnalysisError message that starts with the IR path it concerns.
_PATH_PREFIX = re.compile(r"^(kernel(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): (.*)$", re.S)

log = logging.getLogger("cake.service")


def _deadline(context):
    """The call's deadline as a time.monotonic() value; None when it has none."""
    remaining = context.time_remaining()
    return None if remaining is None or remaining > _NO_DEADLINE else time.monotonic() + remaining


def _check_time(deadline, what):
    if deadline is not None and time.monotonic() >= deadline:
        raise errors.deadline_exceeded("the deadline passed before %s" % what)


def _verified(kernel, source_map, skip):
    """(diagnostics, ok): the verifier's findings unless skipped, and whether none is an error."""
    if skip:
        return [], True
    diags = verify.verify(kernel, source_map)
    return diags, not verify.has_errors(diags)


def _analysis_diagnostic(error, source_map):
    m = _PATH_PREFIX.match(str(error))
    path, message = (m.group(1), m.group(2)) if m else ("kernel", str(error))
    d = diagnostics_pb2.Diagnostic(
        severity=diagnostics_pb2.SEVERITY_ERROR,
        id=ANALYSIS_ID,
        category=diagnostics_pb2.CATEGORY_ANALYSIS,
        message=message,
        path=path,
        fix_hint="Give the analysis what it lacks: bind the symbol in `shapes`, or fix the value the message names.",
    )
    return programs.locate([d], source_map)[0]


class CompilerServicer:
    def __init__(self, pool, cache=None):
        self.pool = pool
        self.cache = cache

    def Verify(self, request, context):
        kernel, source_map = programs.load(request)
        _check_time(_deadline(context), "verification")
        diags, ok = _verified(kernel, source_map, False)
        return service_pb2.VerifyResponse(diagnostics=diags, valid=ok)

    def Analyze(self, request, context):
        if request.device and request.device not in catalog.device_names():
            raise errors.invalid_argument(
                "unknown device %r" % request.device,
                [("device", "unknown device %r; known: %s" % (request.device, ", ".join(catalog.device_names())))],
            )
        kernel, source_map = programs.load(request)
        diags, ok = _verified(kernel, source_map, request.skip_verify)
        if not ok:
            return service_pb2.AnalyzeResponse(diagnostics=diags)
        _check_time(_deadline(context), "the analysis")
        try:
            report = analysis.analyze(kernel, dict(request.shapes), request.device or None)
        except analysis.AnalysisError as e:
            return service_pb2.AnalyzeResponse(diagnostics=diags + [_analysis_diagnostic(e, source_map)])
        return service_pb2.AnalyzeResponse(diagnostics=diags, report=report)

    def Compile(self, request, context):
        if request.target and request.target not in TARGETS:
            raise errors.invalid_argument(
                "unknown target %r" % request.target,
                [("target", "unknown target %r; valid targets: %s" % (request.target, ", ".join(TARGETS)))],
            )
        kernel, source_map = programs.load(request)
        if request.target:
            kernel.target = value_of(ir_pb2.Target.DESCRIPTOR, request.target)
        diags, ok = _verified(kernel, source_map, request.skip_verify)
        if not ok:
            return service_pb2.CompileResponse(diagnostics=diags)
        deadline = _deadline(context)
        result = self._build(kernel, deadline, context)
        diags += programs.locate(list(result.diagnostics), source_map)
        return service_pb2.CompileResponse(diagnostics=diags, compiled=result.compiled)

    def _build(self, kernel, deadline, context):
        """driver.build(kernel) on the compile pool, within `deadline`."""
        _check_time(deadline, "compiling")
        job = contextvars.copy_context()  # the job's log lines keep this call's request id
        try:
            future = self.pool.submit(lambda: job.run(self._compile_job, kernel), deadline)
        except QueueFull as e:
            raise errors.resource_exhausted(
                "the compile queue is full (%d jobs pending); retry after %.2f s" % (e.pending, e.retry_after),
                e.retry_after,
            ) from None
        context.add_callback(future.cancel)  # the client went away: drop the job if still queued
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return future.result(timeout)
        except (concurrent.futures.TimeoutError, Expired):
            future.cancel()
            raise errors.deadline_exceeded("the deadline passed while compiling %s" % kernel.name) from None
        except concurrent.futures.CancelledError:
            raise errors.ServiceError(grpc.StatusCode.CANCELLED, "the compile job was cancelled") from None

    def _compile_job(self, kernel):
        log.info("compile started", extra={"fields": {"event": "compile_started", "kernel": kernel.name}})
        result = driver.build(kernel, self.cache)
        log.info("compile finished", extra={"fields": {
            "event": "compile_finished", "kernel": kernel.name, "ok": result.ok,
            "cache_hit": bool(result.ok and result.compiled.cache_hit)}})
        return result

    def ListTargets(self, request, context):
        return catalog.list_targets()

    def ListRules(self, request, context):
        return catalog.list_rules()

    def ListPrimitives(self, request, context):
        return primitives.list_primitives()


class _Malformed:
    """A request whose bytes did not decode; the handler answers INVALID_ARGUMENT."""

    def __init__(self, type_name, error):
        self.type_name = type_name
        self.error = error


def _decoder(message_class):
    def decode(data):
        try:
            return message_class.FromString(data)
        except DecodeError as e:
            return _Malformed(message_class.DESCRIPTOR.full_name, e)

    return decode


def _handler(servicer, method):
    behavior = getattr(servicer, method.name)

    def call(request, context):
        if isinstance(request, _Malformed):
            raise errors.invalid_argument(
                "the request is not a %s" % request.type_name,
                [("", "the request bytes are not a serialized %s: %s" % (request.type_name, request.error))],
            )
        return behavior(request, context)

    return errors.guarded(call, method.name)


def add_to_server(servicer, server):
    """Register `servicer`'s methods for every RPC of CompilerService on `server`."""
    handlers = {}
    for method in SERVICE.methods:
        request_class = getattr(service_pb2, method.input_type.name)
        response_class = getattr(service_pb2, method.output_type.name)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            _handler(servicer, method),
            request_deserializer=_decoder(request_class),
            response_serializer=response_class.SerializeToString,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),))
