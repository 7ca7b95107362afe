"""Benchmark: median verify time of every corpus program (good and known-bad), against the 20 ms target.

    python -m compiler.testing.bench_verify [--runs 50] [--out benchmarks/results/verify_speed.json]

Prints one line per program and writes the results with the machine's details as JSON.
Each program is parsed once; `verify` (with its source map) is timed `--runs` times.
"""

import argparse
import glob
import json
import os
import statistics
import sys
import time

from compiler.ir.text import parse_kernel
from compiler.testing.machine import machine
from compiler.verify import verify

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TARGET_MS = 20.0


def programs():
    """(name, path) of every corpus program: good/, neighbours/, then bad/."""
    out = []
    for kind in ("good", "neighbours", "bad"):
        for path in sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", kind, "*.cake"))):
            out.append(("%s/%s" % (kind, os.path.basename(path)[: -len(".cake")]), path))
    return out


def measure(path, runs):
    with open(path) as f:
        parsed = parse_kernel(f.read(), os.path.basename(path))
    verify(parsed.kernel, parsed.source_map)  # warm: imports, caches
    times, diags = [], None
    for _ in range(runs):
        start = time.perf_counter()
        diags = verify(parsed.kernel, parsed.source_map)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 3),
        "min_ms": round(times[0], 3),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 3),
        "diagnostics": len(diags),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "verify_speed.json"))
    args = parser.parse_args(argv)
    results = {}
    for name, path in programs():
        results[name] = r = measure(path, args.runs)
        print("%-50s median %7.2f ms  min %7.2f  p90 %7.2f  (%d diagnostics)"
              % (name, r["median_ms"], r["min_ms"], r["p90_ms"], r["diagnostics"]))
    worst = max(results.items(), key=lambda kv: kv[1]["median_ms"])
    print("slowest median: %s %.2f ms (target < %.0f ms)" % (worst[0], worst[1]["median_ms"], TARGET_MS))
    report = {
        "what": "median wall time of compiler.verify.verify per corpus program (parsed once, source map included)",
        "machine": machine(),  # its load average: other work on the machine inflates medians
        "runs": args.runs,
        "target_ms": TARGET_MS,
        "slowest": {"program": worst[0], "median_ms": worst[1]["median_ms"]},
        "programs": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")
    return 0 if worst[1]["median_ms"] < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
