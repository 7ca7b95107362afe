"""The CompilerService methods, and their registration with request decoding we control.

A kernel that fails verification or building is an OK response carrying
diagnostics. Requests are decoded here rather than by gRPC, whose failed decode
is INTERNAL: bytes that are not the request message are INVALID_ARGUMENT.

Where each request's work runs:
- on the RPC thread: the checks of its fields and size, the tables (List*), and a
  Compile this process has answered before (memo.py): a read of the cache entry;
- on a worker process (workers.py): parsing, verification, the cost analysis,
  lowering and the cache lookup of everything else, rules given as data (ListRules
  with extra_rules_json) and a refit of the cost model (Calibrate), stopped when the
  call ends or a stage overruns its limit;
- on the compile pool (pool.py): nvcc, for a Compile the cache cannot answer, in a
  build directory of this server (builds.py), killed when the call ends or nvcc
  overruns its limit. A full pool is RESOURCE_EXHAUSTED with RetryInfo.
"""

import concurrent.futures
import contextvars
import logging

import grpc
from google.protobuf.message import DecodeError

from cake.compiler.v1 import compiler_service_pb2 as service_pb2

from compiler.build import driver, nvcc
from compiler.service import catalog, errors, memo, primitives, work
from compiler.service.calls import Call
from compiler.service.measure import MeasureService
from compiler.service.pool import Expired, QueueFull
from compiler.targets import TARGETS

SERVICE = service_pb2.DESCRIPTOR.services_by_name["CompilerService"]

log = logging.getLogger("cake.service")


class CompilerServicer:
    def __init__(self, workers, pool, builds, limits, cache=None, measurer=None):
        self.workers = workers
        self.pool = pool
        self.builds = builds
        self.limits = limits
        self.cache = cache
        self.memo = memo.Memo()
        self.measurement = MeasureService(measurer, self._compile_message)  # Measure, ListTasks (measure.py)

    def Verify(self, incoming, context):
        self._check_program(incoming.message)
        return self.workers.run("verify", (incoming.data,), Call.of(context), "verifying")

    def Analyze(self, incoming, context):
        request = incoming.message
        if request.device and request.device not in catalog.device_names():
            raise errors.invalid_argument(
                "unknown device %r" % request.device,
                [("device", "unknown device %r; known: %s" % (request.device, ", ".join(catalog.device_names())))],
            )
        self._check_program(request)
        return self.workers.run("analyze", (incoming.data,), Call.of(context), "analyzing")

    def Compile(self, incoming, context):
        request = incoming.message
        if request.target and request.target not in TARGETS:
            raise errors.invalid_argument(
                "unknown target %r" % request.target,
                [("target", "unknown target %r; valid targets: %s" % (request.target, ", ".join(TARGETS)))],
            )
        self._check_program(request)
        digest = memo.digest(incoming.data)
        answer = self._remembered(digest)
        if answer is not None:
            return answer
        call = Call.of(context)
        outcome = self.workers.run("compile", (incoming.data,), call, "compiling")
        if isinstance(outcome, work.NeedsNvcc):
            artifacts, stderr = self._nvcc(outcome, call)
            outcome = self.workers.run("package", (incoming.data, outcome, artifacts, stderr), call, "compiling")
        if outcome.key is not None and self.cache is not None:
            self.memo.put(digest, outcome.key, outcome.diagnostics)
        return outcome.response

    def _check_program(self, request):
        size = request.program.ByteSize()
        if size > self.limits.program_bytes:
            field = "program." + (request.program.WhichOneof("form") or "")
            raise errors.invalid_argument(
                "the program is %d bytes; this server takes at most %d (--max-program-bytes)"
                % (size, self.limits.program_bytes),
                [(field, "%d bytes, over the limit of %d" % (size, self.limits.program_bytes))],
                reason="PROGRAM_TOO_LARGE", metadata={"bytes": str(size), "limit": str(self.limits.program_bytes)},
            )

    def _remembered(self, digest):
        """The answer to a Compile asked before, from its cache entry alone; None when not remembered
        or the entry is gone."""
        known = self.memo.get(digest)
        if known is None:
            return None
        key, diagnostics = known
        entry = self.cache.get(key)
        if entry is None:
            self.memo.forget(digest)
            return None
        response = service_pb2.CompileResponse.FromString(diagnostics)
        response.compiled.CopyFrom(entry)
        response.compiled.cache_hit = True
        return response

    def _nvcc(self, needs, call):
        """(artifacts, None) when nvcc built the kernel, (None, its messages) when it refused it."""
        target = TARGETS[needs.target]
        fields = {"kernel": needs.kernel, "target": needs.target, "key": needs.key[:16]}

        def job():
            log.info("compile started", extra={"fields": dict(fields, event="compile_started")})
            remaining = call.remaining()
            timeout = self.limits.nvcc_seconds if remaining is None else min(self.limits.nvcc_seconds, remaining)
            outcome = "failed"
            with self.builds.build_directory() as directory:
                try:
                    art = driver.compile_source(needs.source, target, directory, timeout=timeout, cancel=call.ended)
                    outcome = "built"
                    return art, None
                except nvcc.NvccError as e:
                    outcome = "refused"
                    return None, e.stderr
                finally:
                    log.info("compile finished", extra={"fields": dict(fields, event="compile_finished", outcome=outcome)})

        call.check("waiting to compile")
        logged = contextvars.copy_context()  # the job's log lines keep this call's request id
        try:
            future = self.pool.submit(lambda: logged.run(job), call.deadline)
        except QueueFull as e:
            raise errors.resource_exhausted(
                "the compile queue is full (%d jobs pending); retry after %.2f s" % (e.pending, e.retry_after),
                e.retry_after,
            ) from None
        try:
            return self._wait(future, call)
        except nvcc.NvccTimeout:
            if call.over():
                raise call.error("compiling") from None
            raise errors.limit_exceeded(
                "nvcc took longer than this server's limit of %g s (--nvcc-seconds)" % self.limits.nvcc_seconds,
                "NVCC_TIME_LIMIT", {"stage": "nvcc", "limit_seconds": "%g" % self.limits.nvcc_seconds},
            ) from None
        except nvcc.NvccCancelled:
            raise call.error("compiling") from None
        except nvcc.NvccNotFound as e:
            raise errors.failed_precondition("cannot compile: %s" % e, "NVCC_NOT_FOUND") from None

    @staticmethod
    def _wait(future, call):
        while True:
            try:
                return future.result(timeout=0.1)
            except concurrent.futures.TimeoutError:
                if call.over() and future.cancel():  # still queued: dropped
                    raise call.error("waiting to compile") from None
            except Expired:
                raise call.error("waiting to compile") from None

    def ListTargets(self, incoming, context):
        return catalog.list_targets()

    def ListRules(self, incoming, context):
        if not incoming.message.extra_rules_json:
            return catalog.list_rules()
        return self.workers.run("rules", (incoming.data,), Call.of(context), "checking rules")

    def Calibrate(self, incoming, context):
        if not incoming.message.samples:
            raise errors.invalid_argument("no measurements to fit the constants to",
                                          [("samples", "give at least one CalibrationSample")])
        return self.workers.run("calibrate", (incoming.data,), Call.of(context), "calibrating")

    def ListPrimitives(self, incoming, context):
        return primitives.list_primitives()

    def Measure(self, incoming, context):
        return self.measurement.measure(incoming.message, context)

    def ListTasks(self, incoming, context):
        return self.measurement.list_tasks()

    def _compile_message(self, request, context):
        """Compile(request) as a CompileResponse message (a worker answers with its bytes)."""
        response = self.Compile(Incoming(request, request.SerializeToString()), context)
        return service_pb2.CompileResponse.FromString(response) if isinstance(response, bytes) else response


class Incoming:
    """A decoded request and the bytes it came as (workers decode those bytes themselves)."""

    __slots__ = ("message", "data")

    def __init__(self, message, data):
        self.message = message
        self.data = data


class _Malformed:
    """A request whose bytes did not decode; the handler answers INVALID_ARGUMENT."""

    def __init__(self, type_name, error):
        self.type_name = type_name
        self.error = error


def decoder(message_class):
    def decode(data):
        try:
            return Incoming(message_class.FromString(data), data)
        except DecodeError as e:
            return _Malformed(message_class.DESCRIPTOR.full_name, e)

    return decode


def encode(response):
    """A response message, or the bytes a worker made of one."""
    return response if isinstance(response, bytes) else response.SerializeToString()


def handler(servicer, method):
    """call(request, context) serving `method` (a MethodDescriptor of SERVICE) with `servicer`: a
    malformed request is INVALID_ARGUMENT, every failure a proper status. What the server registers
    (with decode and encode) and what an in-process client calls."""
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
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            handler(servicer, method),
            request_deserializer=decoder(request_class),
            response_serializer=encode,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),))
