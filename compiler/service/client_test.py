"""The client without a server: program forms, error decoding, the retry policy, UNAVAILABLE retries."""

import socket
import time

import grpc
import pytest
from google.rpc import error_details_pb2

from cake.compiler.v1 import compiler_service_pb2 as pb
from cake.ir.v1 import ir_pb2

from compiler.service import errors
from compiler.service.client import CompilerClient, CompilerServiceError, as_program


def test_program_forms():
    kernel = ir_pb2.Kernel(name="k")
    assert as_program(kernel).kernel == kernel
    assert as_program("kernel k {}").text == "kernel k {}"
    assert as_program(kernel.SerializeToString()).kernel_bytes == kernel.SerializeToString()
    program = pb.Program(text="x")
    assert as_program(program) is program
    with pytest.raises(TypeError):
        as_program(42)


class _FakeRpcError(grpc.RpcError):
    """What a failed call raises, built from a ServiceError's status."""

    def __init__(self, status):
        self._status = status

    def code(self):
        return self._status.code

    def details(self):
        return self._status.details

    def trailing_metadata(self):
        return self._status.trailing_metadata


def test_decodes_rich_details():
    e = CompilerServiceError.from_rpc_error(_FakeRpcError(errors.invalid_argument("bad", [("target", "no")]).status()))
    assert (e.code, e.message, e.field_violations) == (grpc.StatusCode.INVALID_ARGUMENT, "bad", [("target", "no")])
    e = CompilerServiceError.from_rpc_error(_FakeRpcError(errors.resource_exhausted("full", 1.5).status()))
    assert e.retry_delay == 1.5 and e.detail(error_details_pb2.ErrorInfo).reason == "COMPILE_QUEUE_FULL"
    e = CompilerServiceError.from_rpc_error(_FakeRpcError(errors.internal("abc123").status()))
    assert e.incident == "abc123" and "abc123" in e.message


def test_retry_policy():
    wait = CompilerClient._retry_wait
    unavailable = CompilerServiceError(grpc.StatusCode.UNAVAILABLE, "down")
    assert 0.05 <= wait(unavailable, 0) <= 0.1 and 0.4 <= wait(unavailable, 3) <= 0.8
    assert wait(unavailable, 30) <= 5.0
    full = CompilerServiceError.from_rpc_error(_FakeRpcError(errors.resource_exhausted("full", 2.0).status()))
    assert 2.0 <= wait(full, 0) <= 3.0
    assert wait(CompilerServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED, "message too large"), 0) is None
    assert wait(CompilerServiceError(grpc.StatusCode.INVALID_ARGUMENT, "bad"), 0) is None


def test_unavailable_is_retried_until_the_retries_are_spent():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = CompilerClient("127.0.0.1:%d" % port, timeout=30, retries=3)
    start = time.monotonic()
    with pytest.raises(CompilerServiceError) as e:
        client.list_rules()
    assert e.value.code == grpc.StatusCode.UNAVAILABLE
    assert 0.35 < time.monotonic() - start < 10  # three backoffs of at least 0.05, 0.1 and 0.2 s
    with pytest.raises(CompilerServiceError) as e:
        CompilerClient("127.0.0.1:%d" % port, timeout=0.5, retries=100).list_rules()
    assert e.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_compile_waits_longer_than_the_server_lets_nvcc_run():
    """The slowest corpus kernel compiles for minutes on a busy machine: the client's default deadline
    for Compile outlasts the server's nvcc limit, so a slow compile ends with the server's own status."""
    from compiler.service.limits import Limits

    client = CompilerClient("127.0.0.1:1")
    assert client.timeout == 30.0 and client.compile_timeout > Limits().nvcc_seconds
    client.close()


def test_a_status_whose_details_disagree_with_its_code_is_still_a_compiler_service_error():
    status = errors.invalid_argument("bad", [("program.text", "no")]).status()

    class _Mismatch(_FakeRpcError):
        def code(self):
            return grpc.StatusCode.RESOURCE_EXHAUSTED  # what gRPC says when trailers overflow

    e = CompilerServiceError.from_rpc_error(_Mismatch(status))
    assert e.code == grpc.StatusCode.RESOURCE_EXHAUSTED and e.details == []


def test_a_call_on_a_closed_client_is_a_compiler_service_error():
    client = CompilerClient("127.0.0.1:1", retries=0)
    client.close()
    with pytest.raises(CompilerServiceError) as e:
        client.list_rules()
    assert e.value.code == grpc.StatusCode.UNKNOWN and "closed" in e.value.message.lower()
