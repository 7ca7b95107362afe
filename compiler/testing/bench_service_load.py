"""Load benchmark of the compiler service: Verify under 16 concurrent clients, Compile on cache hits.

    python -m compiler.testing.bench_service_load [--seconds 10] [--clients 16] [--out benchmarks/results/service_load.json]

Starts a real server process on an ephemeral loopback port with a fresh compile
cache. Verify: `clients` threads, each with its own channel, send the corpus
programs (compiler/corpus/good/*.cake, as IR text) round robin for `seconds`;
reported are requests per second and latency quantiles over every call. Compile:
the copy programs of testprograms are compiled once (cold, to warm the cache),
then the same clients compile them for `seconds`: every call is a cache hit
(lowering, hashing and the cache lookup; no nvcc), and throughput and latency
are reported the same way. Clients are threads of one process: its GIL is part of
what is measured, as for any Python caller.
"""

import argparse
import concurrent.futures
import json
import os
import platform
import tempfile
import threading
import time

import grpc

from compiler.corpus import corpus
from compiler.service.client import CompilerClient, start_local_server
from compiler.testing.service_programs import copy_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _quantile(sorted_values, q):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[i]


def hammer(address, call, programs, clients, seconds):
    """Run `call(client, program)` from `clients` threads for `seconds`; throughput and latency stats."""
    latencies, failures = [], []
    lock = threading.Lock()
    window = {}

    def open_window():  # run once, when every client is connected and warmed up
        window["start"] = time.monotonic()
        window["end"] = window["start"] + seconds

    gate = threading.Barrier(clients, action=open_window)

    def worker(index):
        mine, errors = [], []
        with CompilerClient(address, timeout=60, retries=0) as client:
            call(client, programs[index % len(programs)])
            gate.wait()
            i = index
            while time.monotonic() < window["end"]:
                t = time.monotonic()
                try:
                    call(client, programs[i % len(programs)])
                except Exception as e:  # noqa: BLE001  (counted and reported, never hidden)
                    errors.append(repr(e)[:200])
                mine.append(time.monotonic() - t)
                i += 1
        with lock:
            latencies.extend(mine)
            failures.extend(errors)

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(worker, i) for i in range(clients)]:
            f.result()
    elapsed = time.monotonic() - window["start"]
    latencies.sort()
    return {
        "clients": clients,
        "seconds": round(elapsed, 3),
        "requests": len(latencies),
        "errors": len(failures),
        "error_examples": sorted(set(failures))[:3],
        "requests_per_second": round(len(latencies) / elapsed, 1),
        "latency_ms": {
            "p50": round(_quantile(latencies, 0.50) * 1e3, 3),
            "p90": round(_quantile(latencies, 0.90) * 1e3, 3),
            "p99": round(_quantile(latencies, 0.99) * 1e3, 3),
            "max": round(latencies[-1] * 1e3, 3),
        },
    }


def machine():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "platform": platform.platform(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--compile-programs", type=int, default=8)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "service_load.json"))
    args = ap.parse_args(argv)

    verify_programs = []
    for name in corpus.GOOD:
        with open(corpus.path(name)) as f:
            verify_programs.append(f.read())
    compile_programs = [copy_program("bench_%d" % i, 1 + i) for i in range(args.compile_programs)]

    with tempfile.TemporaryDirectory(prefix="cake-bench-cache-") as cache_dir:
        with start_local_server(cache_dir=cache_dir, compile_workers=2, compile_queue=args.clients, timeout=300) as cc:
            address = cc.server.address
            verify_stats = hammer(address, lambda c, p: c.verify(p), verify_programs, args.clients, args.seconds)
            cold = time.monotonic()
            for p in compile_programs:
                assert not cc.compile(p).compiled.cache_hit
            cold_seconds = time.monotonic() - cold

            def cached_compile(client, program):
                if not client.compile(program).compiled.cache_hit:
                    raise AssertionError("a warmed program missed the cache")

            compile_stats = hammer(address, cached_compile, compile_programs, args.clients, args.seconds)
    compile_stats["cold_compile_seconds_each"] = round(cold_seconds / len(compile_programs), 3)
    result = {
        "benchmark": "compiler/testing/bench_service_load.py",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": machine(),
        "server": {"compile_workers": 2, "compile_queue": args.clients, "rpc_threads": 64},
        "verify": dict(verify_stats, programs=list(corpus.GOOD)),
        "compile_cache_hits": dict(compile_stats, programs=len(compile_programs)),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
