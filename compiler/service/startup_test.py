"""What a server does when it starts: cleans up after a killed server, refuses an unwritable cache (or runs
without one when told), says whether it can compile through health, and serves reflection v1 and v1alpha."""

import os
import signal
import subprocess
import sys
import time

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from compiler.service import readiness
from compiler.service.client import CompilerClient, start_local_server
from compiler.service.local import ROOT, LocalServer
from compiler.testing.service_programs import copy_program

SERVICE = "cake.compiler.v1.CompilerService"


def _wait_for(predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _descendants(root):
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            pass
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree - {root}


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


@pytest.fixture
def hanging_nvcc(tmp_path):
    """A CUDA_HOME whose nvcc answers --version, and otherwise starts a child and waits forever."""
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    fake = home / "bin" / "nvcc"
    fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "Cuda compilation tools, fake"; exit 0; fi\n'
                    "sleep 300 &\nsleep 300\n")
    fake.chmod(0o755)
    return str(home)


def test_after_sigkill_the_next_server_removes_the_build_directory_and_kills_orphaned_nvcc(tmp_path, hanging_nvcc):
    # A build root of this test's own (the default is shared by every server on the machine, under the temp
    # dir): another test's server starting meanwhile would reap the dead server's directory first.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    first = LocalServer(cache_dir=tmp_path / "cache", env={"CUDA_HOME": hanging_nvcc, "TMPDIR": str(tmp)}).start()
    try:
        future = CompilerClient(first.address, retries=0).stub.Compile.future(
            _compile_request(copy_program("orphan")), timeout=120)
        _wait_for(lambda: first.events("compile_started"))
        [serving] = first.events("serving")
        build_dir = serving["build_dir"]
        _wait_for(lambda: len(_processes_under(build_dir)) >= 2)  # nvcc and its child
        orphans = _processes_under(build_dir)
        helpers = _descendants(first.process.pid) - set(orphans)  # the fork server, the workers
        assert len(helpers) >= 3
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(30)
        future.cancel()
        time.sleep(0.5)
        assert os.path.isdir(build_dir) and any(_alive(p) for p in orphans)  # what SIGKILL leaves
        _wait_for(lambda: not any(_alive(p) for p in helpers), timeout=10)  # workers die with the server
    finally:
        first.stop()
    with LocalServer(cache_dir=tmp_path / "cache", env={"TMPDIR": str(tmp)}) as second:
        [reaped] = second.events("reaped")
        assert reaped["directories"] >= 1 and reaped["processes"] >= 2
        assert not os.path.exists(build_dir)
        _wait_for(lambda: not any(_alive(p) for p in orphans), timeout=10)
        assert CompilerClient(second.address).verify(copy_program()).valid


def _compile_request(text):
    from cake.compiler.v1 import compiler_service_pb2 as pb

    return pb.CompileRequest(program=pb.Program(text=text))


def _start(*flags):
    p = subprocess.Popen(
        [sys.executable, "-m", "compiler.service.main", "--port", "0"] + list(flags),
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = p.stdout.readline()
    return p, line


def test_an_unwritable_cache_refuses_to_start_and_says_what_to_do(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    p, line = _start("--cache-dir", str(blocker / "cache"))
    assert line == "" and p.wait(60) == 2
    message = p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    assert "the compile cache %s cannot be written" % (blocker / "cache") in message
    assert "--cache-dir" in message and "--no-cache" in message


def test_no_cache_runs_without_one_and_says_so():
    with start_local_server(no_cache=True, timeout=300) as cc:
        assert cc.server.events("no_cache")
        program = copy_program("no_cache", 1)
        assert not cc.compile(program).compiled.cache_hit
        assert not cc.compile(program).compiled.cache_hit


def test_health_says_serving_only_while_the_server_can_compile(tmp_path, monkeypatch):
    servicer = health.HealthServicer()
    cache_dir = tmp_path / "cache"
    ready = readiness.Readiness(servicer, ("", SERVICE), str(cache_dir))

    def status():
        return servicer.Check(health_pb2.HealthCheckRequest(service=SERVICE), None).status

    assert ready.check() == [] and status() == health_pb2.HealthCheckResponse.SERVING
    cache_dir.rmdir()
    cache_dir.write_text("the cache directory became a file")
    [problem] = ready.check()
    assert problem.startswith("compile cache %s" % cache_dir) and status() == health_pb2.HealthCheckResponse.NOT_SERVING
    cache_dir.unlink()
    monkeypatch.setattr(readiness.nvcc, "find_nvcc", lambda: (_ for _ in ()).throw(
        readiness.nvcc.NvccNotFound("nvcc not found")))
    assert ready.check() == ["nvcc: nvcc not found"] and status() == health_pb2.HealthCheckResponse.NOT_SERVING
    monkeypatch.undo()
    assert ready.check() == [] and status() == health_pb2.HealthCheckResponse.SERVING


def _reflect(channel, method, request):
    call = channel.stream_stream(
        method, request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
    return list(call(iter([request]), timeout=30))[0]


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_reflection_under_both_names(version):
    method = "/grpc.reflection.%s.ServerReflection/ServerReflectionInfo" % version
    with LocalServer() as server, grpc.insecure_channel(server.address) as channel:
        listed = _reflect(channel, method, reflection_pb2.ServerReflectionRequest(list_services=""))
        names = {s.name for s in listed.list_services_response.service}
        assert {SERVICE, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection"} <= names
        for symbol in (SERVICE, "grpc.reflection.%s.ServerReflection" % version):
            found = _reflect(channel, method, reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol))
            files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                     for b in found.file_descriptor_response.file_descriptor_proto]
            package, name = symbol.rsplit(".", 1)
            assert any(s.name == name and f.package == package
                       for f in files for s in f.service), symbol
        health_status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE))
        assert health_status.status == health_pb2.HealthCheckResponse.SERVING
