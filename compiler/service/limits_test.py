"""Per-request limits and cancellation against a real server: each limit has its own status, and a call
that ends (deadline, cancellation, limit) stops its work."""

import os
import time

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from cake.compiler.v1 import compiler_service_pb2 as pb
from cake.compiler.v1 import compiler_service_pb2_grpc as pb_grpc

from compiler.service.client import CompilerServiceError
from compiler.service.local import LocalServer
from compiler.testing.service_programs import copy_program, padded_program


def _wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _failure(call):
    with pytest.raises(grpc.RpcError) as e:
        call()
    status = rpc_status.from_call(e.value)
    info = None
    for packed in status.details if status else ():
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
    return e.value.code(), e.value.details(), info


def _verify(text):
    return pb.VerifyRequest(program=pb.Program(text=text))


def _answers(stub):
    """The server still answers a Verify (a small one: quick even on a loaded machine)."""
    return stub.Verify(_verify("kernel tiny {}"), timeout=60).valid is False


def _processes_under(directory):
    prefix = os.path.realpath(directory) + os.sep
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if (os.readlink("/proc/%s/cwd" % pid) + os.sep).startswith(prefix):
                out.append(int(pid))
        except OSError:
            pass
    return out


def _cpu_seconds(root_pid):
    """User + system CPU seconds of `root_pid` and every process below it (clock ticks from /proc)."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(pid)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
        except (OSError, IndexError):
            pass
    tree, grew = {root_pid}, True
    while grew:
        grew = False
        for pid, (ppid, _) in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(parents[p][1] for p in tree if p in parents) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(**flags):
        server = LocalServer(cache_dir=tmp_path / ("cache%d" % len(servers)), **flags).start()
        servers.append(server)
        channel = grpc.insecure_channel(server.address, options=[("grpc.max_send_message_length", 64 << 20)])
        stub = pb_grpc.CompilerServiceStub(channel)
        assert _answers(stub)  # the workers are up (they start in the background)
        return server, stub

    yield start
    for server in servers:
        server.stop()
        os.unlink(server.log_path)


def test_a_program_over_the_size_limit_is_invalid_argument(serve):
    server, stub = serve(max_program_bytes=100_000)
    text = padded_program(10_000)
    kernel_bytes = pb.Program(text=text).SerializeToString()
    for program, field in ((pb.Program(text=text), "program.text"), (pb.Program(kernel_bytes=kernel_bytes), "program.kernel_bytes")):
        code, message, info = _failure(lambda: stub.Verify(pb.VerifyRequest(program=program), timeout=30))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "--max-program-bytes" in message
        assert info.reason == "PROGRAM_TOO_LARGE" and info.metadata["limit"] == "100000"
    assert _answers(stub)


@pytest.mark.parametrize("stage,flags,ops", [
    ("parse", {"parse_seconds": 0.2}, 100_000),
    ("verify", {"verify_seconds": 0.2}, 30_000),
])
def test_a_stage_past_its_limit_is_stopped_with_its_own_status(serve, stage, flags, ops):
    server, stub = serve(**flags)
    code, message, info = _failure(lambda: stub.Verify(_verify(padded_program(ops)), timeout=60))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert info.reason == "%s_TIME_LIMIT" % stage.upper() and info.metadata["limit_seconds"] == "0.2"
    assert "--%s-seconds" % stage in message
    assert [(r["why"], r["stage"]) for r in server.events("worker_killed")] == [("stage time limit", stage)]
    assert _answers(stub)  # a fresh worker took the killed one's place


def test_nvcc_past_its_limit_is_killed_with_its_own_status(serve):
    server, stub = serve(nvcc_seconds=0.2)
    request = pb.CompileRequest(program=pb.Program(text=copy_program("nvcc_limit")))
    code, message, info = _failure(lambda: stub.Compile(request, timeout=60))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and info.reason == "NVCC_TIME_LIMIT"
    assert "--nvcc-seconds" in message
    [serving] = server.events("serving")
    assert _processes_under(serving["build_dir"]) == [] and os.listdir(serving["build_dir"]) == ["lock"]


def test_a_request_past_the_memory_limit_is_stopped_with_its_own_status(serve):
    server, stub = serve(worker_memory_mb=300, max_program_bytes=64 << 20, max_message_bytes=96 << 20)
    text = copy_program().replace('math: "y[i] = x[i]"', 'math: "%s"' % ("y" * (50 << 20)), 1)
    code, message, info = _failure(lambda: stub.Verify(_verify(text), timeout=60))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and info.reason == "MEMORY_LIMIT"
    assert "--worker-memory-mb" in message
    assert _answers(stub)


def test_a_deadline_that_passes_stops_the_work(serve):
    server, stub = serve()
    start = time.monotonic()
    code, _, _ = _failure(lambda: stub.Verify(_verify(padded_program(200_000)), timeout=0.5))
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    _wait_for(lambda: server.events("worker_killed"))
    assert time.monotonic() - start < 15  # parsing alone takes 3 s on an idle machine, verifying 30 s more
    assert server.events("worker_killed")[0]["why"] == "call ended"
    verifies = lambda: [r for r in server.events("rpc") if r["method"].endswith("/Verify")]  # noqa: E731
    _wait_for(lambda: len(verifies()) == 2)  # the fixture's, then this one
    rpc = verifies()[-1]
    assert rpc["status"] in ("DEADLINE_EXCEEDED", "CANCELLED")  # never OK
    assert _answers(stub)


def test_a_client_that_goes_away_stops_the_work(serve):
    server, stub = serve()
    future = stub.Verify.future(_verify(padded_program(200_000)), timeout=60)
    time.sleep(0.5)
    future.cancel()
    _wait_for(lambda: server.events("worker_killed"))
    assert server.events("worker_killed")[0]["why"] == "call ended"


def test_a_compile_whose_client_goes_away_kills_nvcc(serve):
    server, stub = serve()
    future = stub.Compile.future(pb.CompileRequest(program=pb.Program(text=copy_program("gone", 8))), timeout=60)
    _wait_for(lambda: server.events("compile_started"))
    future.cancel()
    _wait_for(lambda: server.events("compile_finished"))
    [serving] = server.events("serving")
    assert server.events("compile_finished")[0]["outcome"] == "failed"
    _wait_for(lambda: _processes_under(serving["build_dir"]) == [])


def test_30_mb_of_text_with_a_syntax_error_at_column_15_costs_little(serve):
    server, stub = serve(max_program_bytes=40 << 20, max_message_bytes=64 << 20)
    text = "kernel k {    @ " + padded_program(1_700_000)[16:]
    assert len(text) > 30_000_000
    before = _cpu_seconds(server.process.pid)
    start = time.monotonic()
    code, message, _ = _failure(lambda: stub.Verify(_verify(text), timeout=60))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and ":1:15:" in message
    assert time.monotonic() - start < 30  # mostly sending 30 MB twice (to the server, to a worker)
    assert _cpu_seconds(server.process.pid) - before < 3  # was 39 s: every token lexed before the error


def test_the_client_raises_only_compiler_service_errors_for_huge_user_text(serve):
    from compiler.service.client import CompilerClient

    server, _ = serve()
    client = CompilerClient(server.address, retries=0)
    text = copy_program().replace("block_sync {}", "x" * 100_000 + " {}", 1)
    with pytest.raises(CompilerServiceError) as e:
        client.verify(text)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    [(field, description)] = e.value.field_violations
    assert field == "program.text" and len(description) < 1000
