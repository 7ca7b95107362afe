"""Every RPC through the raw generated stubs, and malformed requests: each gets its status and details."""

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from cake.compiler.v1 import compiler_service_pb2 as pb
from cake.compiler.v1 import compiler_service_pb2_grpc as pb_grpc

from compiler.ir.text import parse_kernel
from compiler.service.local import LocalServer
from compiler.testing.service_programs import copy_program

MAX_MESSAGE = 1 << 20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LocalServer(cache_dir=tmp_path_factory.mktemp("cache"), max_message_bytes=MAX_MESSAGE) as s:
        yield s


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(server.address) as ch:
        yield ch


@pytest.fixture(scope="module")
def stub(channel):
    return pb_grpc.CompilerServiceStub(channel)


def _failure(call):
    with pytest.raises(grpc.RpcError) as e:
        call()
    status = rpc_status.from_call(e.value)
    details = {}
    for packed in status.details if status else ():
        for t in (error_details_pb2.BadRequest, error_details_pb2.ErrorInfo, error_details_pb2.RetryInfo):
            if packed.Is(t.DESCRIPTOR):
                details[t] = t()
                packed.Unpack(details[t])
    return e.value.code(), e.value.details(), details


def _violations(details):
    return [(v.field, v.description) for v in details[error_details_pb2.BadRequest].field_violations]


def test_every_rpc(stub):
    program = pb.Program(text=copy_program("stubs"))
    assert stub.Verify(pb.VerifyRequest(program=program), timeout=30).valid
    assert stub.Analyze(pb.AnalyzeRequest(program=program, shapes={"N": 4096}), timeout=30).report.blocks == 16
    compiled = stub.Compile(pb.CompileRequest(program=program), timeout=120).compiled
    assert compiled.launch.symbol == "cake_stubs" and compiled.cubin
    assert len(stub.ListTargets(pb.ListTargetsRequest(), timeout=30).targets) == 3
    assert stub.ListRules(pb.ListRulesRequest(), timeout=30).rules
    assert stub.ListPrimitives(pb.ListPrimitivesRequest(), timeout=30).primitives


def test_garbage_request_bytes_are_invalid_argument(channel):
    raw = channel.unary_unary("/cake.compiler.v1.CompilerService/Verify")  # bytes in, bytes out
    code, message, details = _failure(lambda: raw(b"\xff\xff\xff\xff", timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "cake.compiler.v1.VerifyRequest" in message
    assert _violations(details)


def test_garbage_kernel_bytes_are_invalid_argument(stub):
    request = pb.VerifyRequest(program=pb.Program(kernel_bytes=b"\x0a\xff\xff\xff\x7f"))
    code, _, details = _failure(lambda: stub.Verify(request, timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in _violations(details)] == ["program.kernel_bytes"]


def test_oversize_request_is_resource_exhausted(stub):
    request = pb.VerifyRequest(program=pb.Program(text="kernel big {}\n" + "#" * MAX_MESSAGE))
    code, _, _ = _failure(lambda: stub.Verify(request, timeout=30))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_missing_program_is_invalid_argument(stub):
    code, _, details = _failure(lambda: stub.Compile(pb.CompileRequest(target="sm_90a"), timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in _violations(details)] == ["program"]


def test_unknown_target_is_invalid_argument_listing_the_valid_ones(stub):
    request = pb.CompileRequest(program=pb.Program(text=copy_program()), target="sm_70")
    code, _, details = _failure(lambda: stub.Compile(request, timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    [(field, description)] = _violations(details)
    assert field == "target" and "sm_80, sm_90a, sm_100a" in description


def test_syntax_error_at_a_known_line(stub):
    text = "kernel k {\n  target: sm_90a\n  launch { grid: [1] }\n  role r { kind: compute  warps: 1\n    bogus {}\n  }\n}\n"
    code, _, details = _failure(lambda: stub.Verify(pb.VerifyRequest(program=pb.Program(text=text)), timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    [(field, description)] = _violations(details)
    assert field == "program.text" and description.startswith("5:5:")
    info = details[error_details_pb2.ErrorInfo]
    assert (info.reason, info.metadata["line"], info.metadata["column"]) == ("IR_TEXT_SYNTAX", "5", "5")


def test_unknown_enum_values_are_diagnosed_not_crashed_on(stub):
    kernel = parse_kernel(copy_program()).kernel
    kernel.target = 99
    kernel.params[0].dtype = 77
    for program in (pb.Program(kernel=kernel), pb.Program(kernel_bytes=kernel.SerializeToString())):
        r = stub.Verify(pb.VerifyRequest(program=program), timeout=30)
        assert not r.valid
        ids = {(d.id, d.path) for d in r.diagnostics}
        assert {("CAKE-TARGET-001", "kernel"), ("CAKE-STRUCT-004", "kernel.params[0]")} <= ids
        assert not stub.Compile(pb.CompileRequest(program=program), timeout=30).HasField("compiled")


def test_a_compiler_failure_never_leaks_a_traceback(stub, server):
    # Unverified, an unknown target reaches lowering: either a build diagnostic or INTERNAL with an incident id.
    kernel = parse_kernel(copy_program()).kernel
    kernel.target = 99
    request = pb.CompileRequest(program=pb.Program(kernel=kernel), skip_verify=True)
    try:
        r = stub.Compile(request, timeout=30)
    except grpc.RpcError:
        code, message, details = _failure(lambda: stub.Compile(request, timeout=30))
        assert code == grpc.StatusCode.INTERNAL and "Traceback" not in message
        incident = details[error_details_pb2.ErrorInfo].metadata["incident"]
        assert incident in message
        assert any(incident in line and "Traceback" in line for line in server.log().splitlines())
    else:
        assert not r.HasField("compiled") and r.diagnostics


def test_unknown_method_is_unimplemented(channel):
    raw = channel.unary_unary("/cake.compiler.v1.CompilerService/Optimize")
    code, _, _ = _failure(lambda: raw(b"", timeout=30))
    assert code == grpc.StatusCode.UNIMPLEMENTED
