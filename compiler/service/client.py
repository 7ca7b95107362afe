"""The typed Python client of the CAKE compiler service.

    with CompilerClient("127.0.0.1:50051") as cc:
        r = cc.verify(kernel_or_text)             # VerifyResponse: diagnostics, valid
        r = cc.verify(kernel, extra_rules=rules, want_features=True)   # with rules as data; IR features
        r = cc.analyze(kernel, {"M": 4096})       # AnalyzeResponse: diagnostics, report, features
        r = cc.analyze(kernel, calibration=cal)   # under other cost-model constants (as data)
        r = cc.compile(kernel, target="sm_90a")   # CompileResponse: diagnostics, compiled
        r = cc.compile(kernel, source_only=True)  # the lowering alone: CUDA source, launch metadata (no nvcc)
        cc.list_targets(); cc.list_rules(); cc.list_primitives()
        r = cc.list_rules(extra_rules=rules)      # the built-in rules, then these (checked)
        r = cc.calibrate([(features, seconds), ...], held_out, calibration=cal, version="v2")   # a refit
        r = cc.measure(kernel, "gemm_bf16")       # MeasureResponse: verdict, timing, machine (--measure servers)

    with start_local_server(compile_workers=2) as cc:   # a real server process, torn down after
        ...

`program` is an ir_pb2.Kernel, CAKE IR text (str), a serialized Kernel (bytes) or a
Program. Every call has a deadline (the client's `timeout`, `compile_timeout` for
Compile, or the call's own), spent across retries: UNAVAILABLE is retried with
exponential backoff and jitter, and RESOURCE_EXHAUSTED when the server says when to
retry (RetryInfo). Every failed call raises CompilerServiceError (code, message,
decoded google.rpc details), whatever came back; a status whose details cannot be
decoded keeps its code and message.
"""

import contextlib
import json
import random
import time
import uuid

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from cake.compiler.v1 import compiler_service_pb2 as service_pb2
from cake.compiler.v1 import compiler_service_pb2_grpc as service_grpc
from cake.ir.v1 import ir_pb2

from compiler.service.interceptors import REQUEST_ID_KEY
from compiler.service.limits import Limits
from compiler.service.local import LocalServer

# google.rpc detail types the client decodes.
_DETAIL_TYPES = (
    error_details_pb2.BadRequest,
    error_details_pb2.ErrorInfo,
    error_details_pb2.RetryInfo,
    error_details_pb2.DebugInfo,
    error_details_pb2.QuotaFailure,
    error_details_pb2.PreconditionFailure,
    error_details_pb2.ResourceInfo,
    error_details_pb2.RequestInfo,
    error_details_pb2.Help,
    error_details_pb2.LocalizedMessage,
)

# Backoff of UNAVAILABLE retries: the first wait and the longest, in seconds.
BACKOFF_BASE = 0.1
BACKOFF_MAX = 5.0
# Compile's default deadline: the server's default nvcc limit and a minute for the queue and the
# rest, so that a slow compile ends with the server's own status rather than the client's deadline.
COMPILE_TIMEOUT = Limits.nvcc_seconds + 60.0


class CompilerServiceError(Exception):
    """A failed call: `code` (grpc.StatusCode), `message`, `details` (decoded google.rpc messages)."""

    def __init__(self, code, message, details=(), request_id=None):
        super().__init__("%s: %s" % (code.name, message))
        self.code = code
        self.message = message
        self.details = list(details)
        self.request_id = request_id

    @classmethod
    def from_rpc_error(cls, error, request_id=None):
        try:
            status = rpc_status.from_call(error) if hasattr(error, "trailing_metadata") else None
        except Exception:  # noqa: BLE001  (details that disagree with the code or do not decode: keep the code)
            status = None
        code = error.code() if isinstance(error.code(), grpc.StatusCode) else grpc.StatusCode.UNKNOWN
        if status is None:
            return cls(code, error.details() or "", (), request_id)
        details = []
        for packed in status.details:
            for t in _DETAIL_TYPES:
                if packed.Is(t.DESCRIPTOR):
                    message = t()
                    packed.Unpack(message)
                    details.append(message)
                    break
            else:
                details.append(packed)  # an unknown type stays an Any
        return cls(code, status.message, details, request_id)

    def detail(self, message_type):
        """The first detail of `message_type` (e.g. error_details_pb2.BadRequest), or None."""
        return next((d for d in self.details if isinstance(d, message_type)), None)

    @property
    def field_violations(self):
        """[(field, description)] of the BadRequest detail."""
        bad = self.detail(error_details_pb2.BadRequest)
        return [(v.field, v.description) for v in bad.field_violations] if bad else []

    @property
    def retry_delay(self):
        """Seconds the server asked to wait before retrying (RetryInfo), or None."""
        info = self.detail(error_details_pb2.RetryInfo)
        return info.retry_delay.ToNanoseconds() / 1e9 if info else None

    @property
    def incident(self):
        """The incident id of an INTERNAL error (find it in the server's log), or None."""
        info = self.detail(error_details_pb2.ErrorInfo)
        return info.metadata.get("incident") if info else None


def as_program(program):
    """A Program message from a Kernel, IR text, serialized Kernel bytes or a Program."""
    if isinstance(program, service_pb2.Program):
        return program
    if isinstance(program, ir_pb2.Kernel):
        return service_pb2.Program(kernel=program)
    if isinstance(program, str):
        return service_pb2.Program(text=program)
    if isinstance(program, (bytes, bytearray)):
        return service_pb2.Program(kernel_bytes=bytes(program))
    raise TypeError("a program is an ir_pb2.Kernel, IR text, Kernel bytes or a Program, not %s" % type(program).__name__)


def _as_json(data):
    """A request's JSON field: "" for None (or nothing), text as it is, anything else serialized."""
    if data is None or (not isinstance(data, str) and not data):
        return ""
    return data if isinstance(data, str) else json.dumps(data, sort_keys=True)


class CompilerClient:
    def __init__(self, target="127.0.0.1:50051", timeout=30.0, retries=3, token=None, tls_root=None,
                 max_message_bytes=64 << 20, compile_timeout=COMPILE_TIMEOUT):
        """`tls_root`: PEM root certificates (bytes or a file path) of a TLS server; `token`: its bearer token;
        `timeout`: each call's deadline in seconds, `compile_timeout` Compile's."""
        options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ]
        if tls_root is not None:
            if not isinstance(tls_root, (bytes, bytearray)):
                with open(tls_root, "rb") as f:
                    tls_root = f.read()
            self.channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(tls_root), options)
        else:
            self.channel = grpc.insecure_channel(target, options)
        self._use(service_grpc.CompilerServiceStub(self.channel), timeout, compile_timeout, retries, token)

    def _use(self, stub, timeout, compile_timeout, retries, token=None):
        """Send calls to `stub` (a CompilerServiceStub, or an in-process one) with these deadlines and retries."""
        self.stub = stub
        self.timeout = timeout
        self.compile_timeout = compile_timeout
        self.retries = retries
        self._auth = (("authorization", "Bearer " + token),) if token else ()

    def verify(self, program, extra_rules=None, want_features=False, timeout=None):
        """`extra_rules`: rules beside the built-in ones, as data (compiler/verify/declarative.py's format)
        or its JSON text; `want_features`: return the IR features too (VerifyResponse.features_json)."""
        request = service_pb2.VerifyRequest(program=as_program(program), extra_rules_json=_as_json(extra_rules),
                                            want_features=want_features)
        return self._call(self.stub.Verify, request, timeout)

    def analyze(self, program, shapes=None, device=None, skip_verify=False, extra_rules=None, calibration=None,
                timeout=None):
        """`calibration`: the cost model's constants, as data (compiler/analysis/calibration.json's format)
        or its JSON text; `extra_rules` as for verify."""
        request = service_pb2.AnalyzeRequest(
            program=as_program(program), shapes=shapes or {}, device=device or "", skip_verify=skip_verify,
            extra_rules_json=_as_json(extra_rules), calibration_json=_as_json(calibration),
        )
        return self._call(self.stub.Analyze, request, timeout)

    def compile(self, program, target=None, skip_verify=False, source_only=False, timeout=None):
        """`source_only`: lower to CUDA without nvcc (CompileRequest.source_only)."""
        request = service_pb2.CompileRequest(program=as_program(program), target=target or "", skip_verify=skip_verify,
                                             source_only=source_only)
        return self._call(self.stub.Compile, request, self.compile_timeout if timeout is None else timeout)

    def list_targets(self, timeout=None):
        return self._call(self.stub.ListTargets, service_pb2.ListTargetsRequest(), timeout)

    def list_rules(self, extra_rules=None, timeout=None):
        """`extra_rules`: rules as data (as for verify) to check and list after the built-in ones."""
        return self._call(self.stub.ListRules, service_pb2.ListRulesRequest(extra_rules_json=_as_json(extra_rules)),
                          timeout)

    def calibrate(self, samples, held_out=(), calibration=None, version=None, timeout=None):
        """Refit the cost model's constants to `samples`, (features, measured seconds) pairs, judged on
        `held_out` (the samples when empty), from `calibration` (as for analyze; the compiler's own when None)."""
        request = service_pb2.CalibrateRequest(
            calibration_json=_as_json(calibration), version=version or "",
            samples=[service_pb2.CalibrationSample(features=f, measured_seconds=s) for f, s in samples],
            held_out=[service_pb2.CalibrationSample(features=f, measured_seconds=s) for f, s in held_out],
        )
        return self._call(self.stub.Calibrate, request, timeout)

    def list_primitives(self, timeout=None):
        return self._call(self.stub.ListPrimitives, service_pb2.ListPrimitivesRequest(), timeout)

    def measure(self, program, task, shapes=None, target=None, warmup=0, reps=0, time_limit_s=0.0, timeout=None):
        """Compile, check and time `program` as `task` on the server's GPU; shapes: dicts of symbol values."""
        request = service_pb2.MeasureRequest(
            program=as_program(program), task=task, target=target or "",
            shapes=[service_pb2.Shape(values=s) for s in shapes or ()],
            timing=service_pb2.TimingOptions(warmup=warmup, reps=reps), time_limit_seconds=time_limit_s)
        return self._call(self.stub.Measure, request, timeout)

    def list_tasks(self, timeout=None):
        return self._call(self.stub.ListTasks, service_pb2.ListTasksRequest(), timeout)

    def _call(self, method, request, timeout):
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        request_id = uuid.uuid4().hex[:16]
        metadata = ((REQUEST_ID_KEY, request_id),) + self._auth
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CompilerServiceError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed", (), request_id)
            try:
                return method(request, timeout=remaining, metadata=metadata)
            except grpc.RpcError as e:
                error = CompilerServiceError.from_rpc_error(e, request_id)
            except Exception as e:  # noqa: BLE001  (e.g. a closed channel: still a failed call)
                raise CompilerServiceError(
                    grpc.StatusCode.UNKNOWN, "the call failed in the client: %s" % e, (), request_id) from e
            wait = self._retry_wait(error, attempt)
            if wait is None or attempt >= self.retries or time.monotonic() + wait >= deadline:
                raise error
            time.sleep(wait)
            attempt += 1

    @staticmethod
    def _retry_wait(error, attempt):
        """Seconds to wait before retrying after `error`, or None when it is not worth retrying."""
        if error.code == grpc.StatusCode.UNAVAILABLE:
            cap = min(BACKOFF_MAX, BACKOFF_BASE * 2 ** attempt)
            return cap / 2 + random.uniform(0, cap / 2)
        if error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.retry_delay is not None:
            return error.retry_delay * random.uniform(1.0, 1.5)
        return None

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@contextlib.contextmanager
def start_local_server(port=0, **flags):
    """Run a real server process (see local.LocalServer) and yield a CompilerClient connected to it.

    Server flags as keywords (compile_workers=2, cache_dir=..., grace_seconds=5), and `env`
    for the server's environment; `token` is given to both sides (the server reads it from
    $CAKE_TOKEN), and so is `tls_cert` (the client trusts it as a root); `timeout`,
    `compile_timeout` and `retries` configure the client. The client's `server` attribute
    is the LocalServer.
    """
    token = flags.pop("token", None)
    client_options = {k: flags.pop(k) for k in ("timeout", "compile_timeout", "retries") if k in flags}
    if flags.get("tls_cert"):
        client_options["tls_root"] = flags["tls_cert"]  # a self-signed certificate is its own root
    env = dict(flags.pop("env", None) or {}, **({"CAKE_TOKEN": token} if token else {}))
    with LocalServer(port=port, env=env, **flags) as server:
        client = CompilerClient(server.address, token=token, **client_options)
        client.server = server
        try:
            yield client
        finally:
            client.close()
