"""Arbitrary input never reaches a client as INTERNAL: any Kernel is an OK response, any bytes or
text an OK response or INVALID_ARGUMENT (property tests against a real server)."""

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cake.compiler.v1 import compiler_service_pb2 as pb
from cake.compiler.v1 import compiler_service_pb2_grpc as pb_grpc
from cake.ir.v1 import ir_pb2

from compiler.service.local import LocalServer
from compiler.testing import strategies
from compiler.testing.service_programs import copy_program

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    with LocalServer(cache_dir=tmp_path_factory.mktemp("cache")) as server:
        with grpc.insecure_channel(server.address) as channel:
            yield pb_grpc.CompilerServiceStub(channel)


def _outcome(call):
    try:
        call()
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


@settings(max_examples=150, **SETTINGS)
@given(kernel=strategies.messages(ir_pb2.Kernel))
def test_any_kernel_is_verified_analyzed_and_compiled(stub, kernel):
    program = pb.Program(kernel=kernel)
    assert stub.Verify(pb.VerifyRequest(program=program), timeout=60).valid in (True, False)
    assert stub.Analyze(pb.AnalyzeRequest(program=program), timeout=60) is not None
    assert stub.Compile(pb.CompileRequest(program=program), timeout=120) is not None


@settings(max_examples=150, **SETTINGS)
@given(data=st.binary(max_size=200))
def test_any_bytes(stub, data):
    request = pb.VerifyRequest(program=pb.Program(kernel_bytes=data))
    assert _outcome(lambda: stub.Verify(request, timeout=60)) in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT)


_TEXT = copy_program()


@settings(max_examples=150, **SETTINGS)
@given(cut=st.integers(0, len(_TEXT)), junk=st.text(max_size=8))
def test_any_text(stub, cut, junk):
    request = pb.VerifyRequest(program=pb.Program(text=_TEXT[:cut] + junk + _TEXT[cut:]))
    assert _outcome(lambda: stub.Verify(request, timeout=60)) in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT)
