"""Load benchmark of the compiler service: 64 clients mixing Verify, cached Compile and cold Compile.

    python -m compiler.testing.bench_service_load [--clients 64] [--seconds 60] [--cached-seconds 20]
        [--out benchmarks/results/service_load.json]    # or: bazel run //compiler/testing:bench_service_load

Starts a real server process with its default flags (the compile queue is not sized to
the clients) and a fresh compile cache, warms the cache with the `cached` programs,
then runs two scenarios; clients are threads spread over CLIENT_PROCESSES processes,
each with its own channel and the project's client (CompilerClient):

    mixed        `clients` for `seconds`, a third each (by client index): Verify of the
                 corpus programs (IR text) round robin; Compile of the cached programs
                 (cache hits); Compile of programs never seen (cold: nvcc), which queue
                 behind the two nvcc slots and, when the queue is full, are refused with
                 RetryInfo and retried by the client after the delay it names
    cached_only  `clients` for `cached_seconds`, every one asking for cached kernels
                 (the scenario that once failed 297 of 697 calls with a full queue)

Per method: calls completed in the window, throughput, latency quantiles (the whole
call, retries included), and errors (calls that raised: CompilerServiceError with its
code); for cold compiles also the attempts the server refused with RetryInfo and how
many calls needed a retry, counted from the server's access log by request id. The
machine record carries the load average before and after: other work on the machine
inflates every latency.
"""

import argparse
import collections
import functools
import json
import multiprocessing
import os
import tempfile
import threading
import time

from compiler.corpus import corpus
from compiler.service.client import CompilerClient, start_local_server
from compiler.testing.machine import machine, results_path
from compiler.testing.service_programs import copy_program

CLIENT_PROCESSES = 8
CACHED_PROGRAMS = 8
# Seconds between the clients' start and the window's opening: every client connected and warm.
SETTLE_SECONDS = 5.0


def _quantile(values, q):
    i = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return values[i]


@functools.lru_cache(maxsize=None)
def _corpus_texts():
    texts = []
    for name in sorted(corpus.GOOD):
        with open(corpus.path(name)) as f:
            texts.append(f.read())
    return texts


def _programs(role, scenario, client, i):
    """What client `client` sends on its `i`th call in its role."""
    if role == "verify":
        texts = _corpus_texts()
        return texts[(client + i) % len(texts)]
    if role == "compile_cached":
        return copy_program("cached_%d" % ((client + i) % CACHED_PROGRAMS), 1 + (client + i) % CACHED_PROGRAMS % 4)
    return copy_program("cold_%s_%d_%d" % (scenario, client, i), 1 + i % 4)


def _client_thread(address, role, scenario, client, start_at, end_at, out):
    latencies, errors = [], collections.Counter()
    retries = 1000 if role == "compile_cold" else 0  # only cold compiles may be refused, with RetryInfo
    with CompilerClient(address, retries=retries, timeout=120) as cc:
        call = cc.verify if role == "verify" else cc.compile
        if role != "compile_cold":
            call(_programs(role, scenario, client, -1))  # connected and warm before the window
        while time.time() < start_at:
            time.sleep(0.01)
        i = 0
        while time.time() < end_at:
            program = _programs(role, scenario, client, i)
            t = time.monotonic()
            try:
                response = call(program)
                if role == "compile_cached" and not response.compiled.cache_hit:
                    errors["a cached program missed the cache"] += 1
                if role == "compile_cold" and not response.compiled.cubin:
                    errors["no cubin: %s" % [d.id for d in response.diagnostics][:3]] += 1
            except Exception as e:  # noqa: BLE001  (counted and reported, never hidden)
                errors[getattr(e, "code", type(e)).__str__()[:80]] += 1
            latencies.append(time.monotonic() - t)
            i += 1
    out.append((role, latencies, errors))


def _client_process(address, assignments, scenario, start_at, end_at, queue):
    out = []
    threads = [threading.Thread(target=_client_thread, args=(address, role, scenario, client, start_at, end_at, out))
               for client, role in assignments]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(out)


def scenario(address, name, roles, seconds):
    """Run `roles` (one per client) for `seconds`; per role: calls, throughput, latency, errors."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    start_at = time.time() + SETTLE_SECONDS + len(roles) * 0.05
    end_at = start_at + seconds
    assignments = [[] for _ in range(CLIENT_PROCESSES)]
    for client, role in enumerate(roles):
        assignments[client % CLIENT_PROCESSES].append((client, role))
    processes = [context.Process(target=_client_process, args=(address, a, name, start_at, end_at, queue))
                 for a in assignments if a]
    for p in processes:
        p.start()
    results = [r for _ in processes for r in queue.get()]
    for p in processes:
        p.join()
    by_role = collections.defaultdict(lambda: ([], collections.Counter(), 0))
    for role, latencies, errors in results:
        lat, err, n = by_role[role]
        lat.extend(latencies)
        err.update(errors)
        by_role[role] = (lat, err, n + 1)
    out = {"clients": len(roles), "seconds": seconds, "methods": {}}
    for role, (latencies, errors, clients) in sorted(by_role.items()):
        latencies.sort()
        out["methods"][role] = {
            "clients": clients,
            "calls": len(latencies),
            "calls_per_second": round(len(latencies) / seconds, 1),
            "latency_ms": {q: round(_quantile(latencies, v) * 1e3, 1) if latencies else None
                           for q, v in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))},
            "errors": sum(errors.values()),
            "error_kinds": dict(errors),
        }
    return out


def _refusals(log, since):
    """From the server's access log after byte offset `since`: Compile attempts refused with
    RetryInfo, and the calls (request ids) that had such a refusal and then succeeded."""
    attempts = collections.defaultdict(list)
    for line in log[since:].splitlines():
        if '"event": "rpc"' in line and "/Compile" in line:
            r = json.loads(line)
            attempts[r.get("request_id")].append(r["status"])
    refused = sum(s.count("RESOURCE_EXHAUSTED") for s in attempts.values())
    retried = [s for s in attempts.values() if "RESOURCE_EXHAUSTED" in s]
    return {"refused_with_retry_info": refused, "calls_refused_then_retried": len(retried),
            "of_those_succeeded": sum(1 for s in retried if s[-1] == "OK")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--cached-seconds", type=float, default=20.0)
    ap.add_argument("--out", default=results_path("service_load.json"))
    args = ap.parse_args(argv)
    before = machine()
    with tempfile.TemporaryDirectory(prefix="cake-bench-cache-") as cache_dir:
        with start_local_server(cache_dir=cache_dir, timeout=120) as cc:
            cold = time.monotonic()
            for i in range(CACHED_PROGRAMS):
                assert not cc.compile(_programs("compile_cached", "warm", i, 0)).compiled.cache_hit
            cold_each = (time.monotonic() - cold) / CACHED_PROGRAMS
            mark = len(cc.server.log())
            roles = [("verify", "compile_cached", "compile_cold")[i % 3] for i in range(args.clients)]
            mixed = scenario(cc.server.address, "mixed", roles, args.seconds)
            mixed["methods"]["compile_cold"]["retry"] = _refusals(cc.server.log(), mark)
            cached_only = scenario(cc.server.address, "cached", ["compile_cached"] * args.clients, args.cached_seconds)
    after = machine()
    cached, verify, cold_stats = (mixed["methods"][m] for m in ("compile_cached", "verify", "compile_cold"))
    retry = cold_stats["retry"]
    result = {
        "benchmark": "compiler/testing/bench_service_load.py",
        "machine": dict(after, load_average_before=before["load_average"]),
        "server": {"flags": "defaults (compiler/service/main.py)", "workers": os.cpu_count(), "compile_workers": 2,
                   "compile_queue": 16, "rpc_threads": 64},
        "cold_compile_seconds_each_alone": round(cold_each, 2),
        "scenarios": {"mixed": mixed, "cached_only": cached_only},
        "done_when": {
            "verify_errors": verify["errors"],
            "cached_compile_errors": cached["errors"] + cached_only["methods"]["compile_cached"]["errors"],
            "cached_compile_p99_ms": max(cached["latency_ms"]["p99"],
                                         cached_only["methods"]["compile_cached"]["latency_ms"]["p99"]),
            "cold_compiles_refused_with_retry_info": retry["refused_with_retry_info"],
            "cold_compiles_refused_then_succeeded": "%d of %d" % (retry["of_those_succeeded"],
                                                                  retry["calls_refused_then_retried"]),
            "cold_compile_errors": cold_stats["errors"],
        },
    }
    result["done_when"]["met"] = bool(
        result["done_when"]["verify_errors"] == 0 and result["done_when"]["cached_compile_errors"] == 0
        and result["done_when"]["cached_compile_p99_ms"] < 100 and retry["refused_with_retry_info"] > 0
        and retry["of_those_succeeded"] == retry["calls_refused_then_retried"] and cold_stats["errors"] == 0)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(result, indent=2))
    return 0 if result["done_when"]["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
