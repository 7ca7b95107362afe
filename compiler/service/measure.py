"""Measure and ListTasks: a kernel compiled as Compile compiles it, then checked and timed by a measurer.

The measurer (runtime/measure.py's Measurer, with kernels/tasks.py's tasks) is given to
the server when it starts with --measure on a GPU host; the compiler never imports it.
Without one, Measure is UNIMPLEMENTED and ListTasks says measurement is off. Only the
measurer's registered tasks run, and the kernel runs in the measurer's isolated
worker: a hang, a fault or a crash is a verdict (timeout, illegal_address, crash),
never the server's failure. Measurements run one at a time (one GPU).
"""

import concurrent.futures

import grpc
from google.protobuf import struct_pb2

from cake.compiler.v1 import compiler_service_pb2 as service_pb2

from compiler.service import errors

OFF = "measurement is off on this server: start it with --measure on a GPU host"


class MeasureService:
    """The two RPCs over an optional measurer and the servicer's Compile."""

    def __init__(self, measurer, compile_rpc):
        self.measurer = measurer
        self.compile_rpc = compile_rpc  # CompilerServicer.Compile: (CompileRequest, context) -> CompileResponse
        self._gpu = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cake-measure")

    def list_tasks(self):
        if self.measurer is None:
            return service_pb2.ListTasksResponse(enabled=False)
        return service_pb2.ListTasksResponse(enabled=True, tasks=[
            service_pb2.TaskInfo(name=name, doc=t.doc, shapes=[service_pb2.Shape(values=s) for s in t.shapes])
            for name, t in sorted(self.measurer.tasks.items())])

    def _check(self, request):
        if self.measurer is None:
            raise errors.ServiceError(grpc.StatusCode.UNIMPLEMENTED, OFF)
        known = sorted(self.measurer.tasks)
        if request.task not in self.measurer.tasks:
            raise errors.invalid_argument("unknown task %r" % request.task,
                                          [("task", "unknown task %r; this server measures: %s" % (request.task,
                                                                                                   ", ".join(known)))])
        bad = []
        if request.timing.warmup < 0:
            bad.append(("timing.warmup", "must be >= 0, got %d" % request.timing.warmup))
        if request.timing.reps < 0:
            bad.append(("timing.reps", "must be >= 1 (0: the server's default), got %d" % request.timing.reps))
        if request.time_limit_seconds < 0:
            bad.append(("time_limit_seconds", "must be >= 0 (0: the server's default)"))
        for i, shape in enumerate(request.shapes):
            if not shape.values:
                bad.append(("shapes[%d]" % i, "a shape needs at least one symbol value"))
        if bad:
            raise errors.invalid_argument("the measure request is malformed", bad)

    def measure(self, request, context):
        self._check(request)
        compiled = self.compile_rpc(service_pb2.CompileRequest(program=request.program, target=request.target), context)
        response = service_pb2.MeasureResponse(diagnostics=compiled.diagnostics)
        if not compiled.HasField("compiled"):
            return response
        timing = {k: v for k, v in (("warmup", request.timing.warmup), ("reps", request.timing.reps)) if v}
        shapes = [dict(s.values) for s in request.shapes] or None
        future = self._gpu.submit(self.measurer.measure, compiled.compiled, request.task, shapes, timing,
                                  request.time_limit_seconds or None)
        context.add_callback(future.cancel)  # still queued behind another measurement: drop it
        remaining = context.time_remaining()
        try:
            m = future.result(None if remaining is None or remaining > 1e8 else max(0.0, remaining))
        except concurrent.futures.TimeoutError:
            raise errors.deadline_exceeded("the deadline passed while measuring (the worker finishes the job "
                                           "within its time limit)") from None
        return _response(response, compiled.compiled.ir_hash, m)

    def shutdown(self):
        self._gpu.shutdown(wait=False, cancel_futures=True)
        if self.measurer is not None:
            self.measurer.close()


def _struct(value):
    s = struct_pb2.Struct()
    s.update(value or {})
    return s


def _response(response, ir_hash, m):
    response.measured = True
    response.ir_hash = ir_hash
    response.verdict.CopyFrom(service_pb2.Verdict(
        passed=m.passed, failure_kind=m.failure_kind, message=m.message, check=_struct(m.check),
        elapsed_seconds=m.elapsed_s, worker_replaced=m.worker_replaced))
    if m.timing:
        t = m.timing
        response.timing.CopyFrom(service_pb2.Timing(
            median_ms=t["median_ms"], p10_ms=t["p10_ms"], p90_ms=t["p90_ms"], reps=t["reps"],
            verified=t["verified"], shape={k: int(v) for k, v in t["shape"].items()}))
    response.machine.CopyFrom(_struct(m.environment))
    return response

