"""Concurrency: 32 clients compiling distinct programs, a full compile queue, retries on RetryInfo."""

import concurrent.futures
import time

import grpc
import pytest

from compiler.service.client import CompilerClient, CompilerServiceError, start_local_server
from compiler.testing.service_programs import copy_program

CLIENTS = 32


def _program(i):
    return "concurrent_%d" % i, copy_program("concurrent_%d" % i, 1 + i % 8)


def test_32_clients_compile_distinct_programs(tmp_path):
    with start_local_server(cache_dir=tmp_path, compile_workers=2, compile_queue=CLIENTS) as cc:
        address = cc.server.address

        def compile_one(i):
            name, text = _program(i)
            with CompilerClient(address, timeout=300) as client:
                return name, client.compile(text)

        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(compile_one, range(CLIENTS)))
        for name, r in results:
            assert list(r.diagnostics) == [], name
            c = r.compiled
            assert not c.cache_hit and c.launch.symbol == "cake_" + name
            assert ".entry cake_%s(" % name in c.ptx
        assert len({r.compiled.ir_hash for _, r in results}) == CLIENTS
        assert len({r.compiled.cubin for _, r in results}) == CLIENTS
        # The same programs again: every one from the cache, byte-identical.
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            again = list(pool.map(compile_one, range(CLIENTS)))
        for (_, first), (_, second) in zip(results, again):
            assert second.compiled.cache_hit and second.compiled.cubin == first.compiled.cubin


def _wait_for_event(server, event, count=1, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if len(server.events(event)) >= count:
            return
        time.sleep(0.02)
    raise AssertionError("no %r in the server log:\n%s" % (event, server.log()))


def test_a_full_queue_is_resource_exhausted_with_a_retry_hint(tmp_path):
    with start_local_server(cache_dir=tmp_path, compile_workers=1, compile_queue=0, retries=0, timeout=120) as cc:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(cc.compile, copy_program("queue_first", 8))
            _wait_for_event(cc.server, "compile_started")
            with pytest.raises(CompilerServiceError) as e:
                cc.compile(copy_program("queue_second", 8))
            assert first.result().compiled.cubin
    assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert e.value.retry_delay > 0
    assert "queue is full" in e.value.message


def test_the_client_retries_when_the_server_says_when(tmp_path):
    with start_local_server(cache_dir=tmp_path, compile_workers=1, compile_queue=0, retries=20, timeout=120) as cc:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            futures = [pool.submit(cc.compile, copy_program("retry_%d" % i, 2 + i)) for i in range(3)]
            results = [f.result() for f in futures]
        assert all(r.compiled.cubin for r in results)
        rejected = [l for l in cc.server.log().splitlines() if '"RESOURCE_EXHAUSTED"' in l]
    assert rejected  # three compiles at once on one worker without a queue: some had to retry


def test_a_job_whose_deadline_passes_in_the_queue_is_never_started(tmp_path):
    with start_local_server(cache_dir=tmp_path, compile_workers=1, compile_queue=1, retries=0, timeout=120) as cc:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(cc.compile, copy_program("deadline_first", 8))
            _wait_for_event(cc.server, "compile_started")
            with pytest.raises(CompilerServiceError) as e:
                cc.compile(copy_program("deadline_queued", 8), timeout=0.3)
            first.result()
        time.sleep(0.2)
        started = [r.get("kernel") for r in cc.server.events("compile_started")]
    assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert started == ["deadline_first"]


def test_cache_hits_never_wait_for_the_compile_pool(tmp_path):
    """One compile slot and no queue, held by a cold compile: 32 clients asking for cached kernels all get
    them, whether this server compiled them (remembered) or an earlier one did (found in the cache)."""
    cached = [copy_program("hit_%d" % i, 1 + i % 4) for i in range(4)]
    with start_local_server(cache_dir=tmp_path, compile_workers=1, compile_queue=0, retries=0) as cc:
        for text in cached:
            cc.compile(text)
    for restarted in (False, True):
        with start_local_server(cache_dir=tmp_path, compile_workers=1, compile_queue=0, retries=0) as cc:
            if not restarted:
                for text in cached:
                    cc.compile(text)
            with concurrent.futures.ThreadPoolExecutor(CLIENTS + 1) as pool:
                cold = pool.submit(cc.compile, copy_program("hold_the_slot_%s" % restarted, 8))
                _wait_for_event(cc.server, "compile_started")
                with pytest.raises(CompilerServiceError) as full:  # the slot is taken
                    cc.compile(copy_program("refused_%s" % restarted, 8))
                assert full.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED

                def hit(i):
                    with CompilerClient(cc.server.address, retries=0) as client:
                        return client.compile(cached[i % len(cached)]).compiled.cache_hit

                assert all(pool.map(hit, range(CLIENTS)))
                assert cold.result().compiled.cubin
