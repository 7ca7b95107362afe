"""The server process: health, reflection, graceful SIGTERM, bind policy, bearer tokens and TLS."""

import concurrent.futures
import os
import shutil
import signal
import subprocess
import sys
import time

import grpc
import pytest
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from compiler.service.client import CompilerClient, CompilerServiceError, start_local_server
from compiler.service.local import ROOT, LocalServer
from compiler.testing.service_programs import copy_program

SERVICE = "cake.compiler.v1.CompilerService"


def _wait_for(predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_health_and_reflection():
    with LocalServer() as server, grpc.insecure_channel(server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE):
            r = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
            assert r.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as e:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND

        db = ProtoReflectionDescriptorDatabase(channel)
        assert {SERVICE, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= set(db.get_services())
        service = descriptor_pool.DescriptorPool(db).FindServiceByName(SERVICE)
        assert [m.name for m in service.methods] == [
            "Verify", "Analyze", "Compile", "ListTargets", "ListRules", "ListPrimitives", "Measure", "ListTasks",
            "Calibrate"]
        assert service.methods_by_name["Compile"].input_type.fields_by_name["program"].message_type.name == "Program"


def test_sigterm_during_a_compile_finishes_it_and_exits_0(tmp_path):
    with start_local_server(cache_dir=tmp_path, grace_seconds=30, timeout=120) as cc:
        server = cc.server
        with grpc.insecure_channel(server.address) as channel, concurrent.futures.ThreadPoolExecutor(1) as pool:
            # Bounded: a server that never reports NOT_SERVING fails the test instead of hanging it.
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=SERVICE),
                                                              timeout=90)
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            compile_call = pool.submit(cc.compile, copy_program("sigterm", 8))
            _wait_for(lambda: server.events("compile_started"))
            start = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()
            result = compile_call.result()
            assert server.process.wait(30) == 0
        assert result.compiled.cubin and result.compiled.launch.symbol == "cake_sigterm"
        assert time.monotonic() - start < 30
        [stopped] = server.events("stopped")
        assert stopped["drained"]
        with pytest.raises(CompilerServiceError) as e:  # gone: UNAVAILABLE, retried, then raised
            CompilerClient(server.address, timeout=2, retries=1).list_rules()
        assert e.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _start(*flags, env=None):
    """Run the server with `flags` until it prints its port or exits; (process, first stdout line)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "compiler.service.main", "--port", "0"] + list(flags),
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **(env or {})),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return p, p.stdout.readline()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_server_whose_parent_blocked_the_signal_still_stops_on_it(sig, tmp_path):
    """Signal masks are inherited: a runner that blocks SIGTERM must not leave a server that ignores it."""
    err = open(tmp_path / "stderr", "w+")  # a file, not a pipe: the server's log never fills it and blocks
    p = subprocess.Popen(
        [sys.executable, "-m", "compiler.service.main", "--port", "0"], cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), stdout=subprocess.PIPE,
        stderr=err, text=True,
        preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT}))
    try:
        line = p.stdout.readline()
        if not line.strip().isdigit():
            try:
                code = p.wait(10)
            except subprocess.TimeoutExpired:
                code = "none yet (still running)"
            err.seek(0)
            pytest.fail("the server did not print its port (exit code %s); its log:\n%s" % (code, err.read()[-4000:]))
        p.send_signal(sig)
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        err.close()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:  # a zombie has exited: only its parent's wait is missing
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_server_outlives_no_owner_killed_with_sigkill(tmp_path):
    """An agent killed with SIGKILL runs no exit handler: its server must notice and stop by itself."""
    owner = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom compiler.service.local import LocalServer\n"
                               "s = LocalServer().start()\nprint(s.process.pid, flush=True)\ntime.sleep(600)"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(owner.stdout.readline())
        assert _alive(server_pid)
        owner.kill()
        owner.wait()
        _wait_for(lambda: not _alive(server_pid), timeout=30)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        owner.stdout.close()


def test_a_remote_address_needs_tls_or_a_token():
    p, line = _start("--host", "0.0.0.0")
    assert line == "" and p.wait(30) == 2
    assert "refusing to serve 0.0.0.0 without TLS or a bearer token" in p.stderr.read()
    p, line = _start("--host", "0.0.0.0", "--insecure-allow-remote")
    try:
        assert line.strip().isdigit()
        assert len(CompilerClient("127.0.0.1:%s" % line.strip(), timeout=10).list_targets().targets) == 3
    finally:
        p.terminate()
        assert p.wait(30) == 0
        p.stdout.close()
        p.stderr.close()


def test_a_taken_port_fails_to_start():
    with LocalServer() as first:
        p, line = _start("--port", str(first.port))
        p.stdout.close()
        assert line == "" and p.wait(30) == 2
        p.stderr.close()


def test_bearer_token(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    with LocalServer(host="0.0.0.0", token_file=token_file) as server:
        assert CompilerClient(server.address, token="s3cret").list_rules().rules
        for token in (None, "wrong"):
            with pytest.raises(CompilerServiceError) as e:
                CompilerClient(server.address, token=token).list_rules()
            assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
        with grpc.insecure_channel(server.address) as channel:  # health checks need no token
            r = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert r.status == health_pb2.HealthCheckResponse.SERVING
    with start_local_server(token="env-token") as cc:  # the token through $CAKE_TOKEN
        assert cc.verify(copy_program()).valid


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_tls(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    with start_local_server(tls_cert=cert, tls_key=key, host="0.0.0.0") as cc:
        assert cc.verify(copy_program()).valid
        with pytest.raises(CompilerServiceError) as e:  # plaintext against TLS never connects
            CompilerClient(cc.server.address, timeout=2, retries=0).list_rules()
        assert e.value.code == grpc.StatusCode.UNAVAILABLE


def test_a_server_that_cannot_start_says_why():
    with pytest.raises(RuntimeError, match="refusing to serve 0.0.0.0"):
        LocalServer(host="0.0.0.0").start()
