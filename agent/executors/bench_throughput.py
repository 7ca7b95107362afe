"""Evaluations per minute of the serial loop, the local executor and Ray on this machine, one run each.

    python -m agent.executors.bench_throughput --out benchmarks/results/agent_executors_cpu2.json

Each mode runs `agent.evolve` on the default task without a GPU (the cost model is the
fitness), in-process compilers everywhere, from the same seed and budget, with a fresh
cache (CAKE_CACHE_DIR) so no mode answers from another's check cache; the rate is the
run's evaluations over its search time (store meta elapsed_s: worker start-up included,
the report and outer loop not). The machine is shared: each mode waits (up to
--wait-s) for the 1-minute load average to fall under --max-load and records it, and
the benchmark raises its own scheduling group's priority where it may (Linux schedules
each session as one autogroup, so `nice` alone does not rank it above another
session's work; /proc/self/autogroup does, for root), recorded as `autogroup`.
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

from agent.store import FILE as STORE_FILE
from compiler import host

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODES = {"serial": ["--executor", "serial"], "local": ["--executor", "local"], "ray": ["--executor", "ray"]}


def _wait_for_quiet(max_load, wait_s):
    deadline = time.monotonic() + wait_s
    while os.getloadavg()[0] > max_load and time.monotonic() < deadline:
        time.sleep(10)
    return list(os.getloadavg())


def run_mode(name, workers, evaluations, root, kdir):
    run_dir = os.path.join(root, name)
    cmd = [sys.executable, "-m", "agent.evolve", "--gpu", "off", "--in-process", "--plain", "--no-learn",
           "--evaluations", str(evaluations), "--seconds", "3600", "--run-dir", run_dir, "--knowledge-dir", kdir]
    cmd += MODES[name] + ([] if name == "serial" else ["--workers", str(workers)])
    env = dict(os.environ, CAKE_CACHE_DIR=os.path.join(root, name + "-cache"), RAY_AUTH_MODE="disabled",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    t = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (name, (proc.stdout + proc.stderr)[-3000:]))
    db = sqlite3.connect(os.path.join(run_dir, STORE_FILE))
    elapsed = json.loads(db.execute("SELECT value FROM meta WHERE key = 'elapsed_s'").fetchone()[0])
    done = db.execute("SELECT COUNT(*) FROM candidates WHERE fitness_s IS NOT NULL").fetchone()[0]
    checked = db.execute("SELECT COUNT(*) FROM candidates WHERE status != 'pending'").fetchone()[0]
    best = db.execute("SELECT MIN(fitness_s) FROM candidates").fetchone()[0]
    rows = db.execute("SELECT id, ir_hash, status, fitness_s FROM candidates ORDER BY id").fetchall()
    db.close()
    return {"evaluations": done, "checked": checked, "search_s": round(elapsed, 2), "wall_s": round(wall, 2),
            "evaluations_per_minute": round(done / elapsed * 60.0, 1), "best_predicted_s": best,
            "workers": 1 if name == "serial" else workers, "run_dir": run_dir}, rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--evaluations", type=int, default=300)
    p.add_argument("--max-load", type=float, default=1.0, help="wait for the 1-minute load average to fall below")
    p.add_argument("--wait-s", type=float, default=600.0)
    p.add_argument("--runs-root", help="keep the run directories here (default: a temporary directory)")
    p.add_argument("--out")
    args = p.parse_args(argv)
    root = args.runs_root or tempfile.mkdtemp(prefix="cake-bench-")
    kdir = os.path.join(ROOT, "agent", "knowledge")
    doc = {"benchmark": "agent/executors/bench_throughput.py", "task": "kmeans-assign (cost model, no GPU)",
           "machine": dict(host.record("ray"), autogroup=host.raise_priority()), "modes": {}}
    candidates = {}
    for name in args.modes:
        load_before = _wait_for_quiet(args.max_load, args.wait_s)
        result, candidates[name] = run_mode(name, args.workers, args.evaluations, root, kdir)
        result["load_average_before"], result["load_average_after"] = load_before, list(os.getloadavg())
        doc["modes"][name] = result
        print(name, json.dumps(result), flush=True)
    if "serial" in doc["modes"]:
        base = doc["modes"]["serial"]["evaluations_per_minute"]
        for r in doc["modes"].values():
            r["speedup_vs_serial"] = round(r["evaluations_per_minute"] / base, 3)
    if "local" in candidates and "ray" in candidates:
        doc["local_and_ray_same_candidates"] = candidates["local"] == candidates["ray"]
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
