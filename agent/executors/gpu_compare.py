"""The serial loop against the local executor on one GPU: the same task, seed and budget, one run each.

    python -m agent.executors.gpu_compare --out DIR [--evaluations 8] [--window 0]

Each run is `agent.evolve --gpu on` on kmeans-assign-paper with the compiler in-process
(the same compiler path for both), from a fresh cache (CAKE_CACHE_DIR: neither reuses the
other's compiles or checks), stopping at `--evaluations` measured candidates. Window 0
makes the executor take exactly the serial loop's decisions, so the two runs measure the
same candidates and must find the same best within the GPU's noise; what differs is the
wall time (checks and compiles run on every core, beside the measurements). DIR gets
each run directory (agent.db, events.jsonl, evaluations.jsonl, report.md) and
agent_executor_h200.json: the machine, and per mode the wall and search seconds, device
seconds, evaluations per minute, the seed's and the best's median_ms, the peers', and
the curve (evaluation index, device seconds, best median_ms so far).
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time

from agent.store import FILE as STORE_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASK = "kmeans-assign-paper"


def _summary(run_dir, wall_s):
    db = sqlite3.connect(os.path.join(run_dir, STORE_FILE))
    db.row_factory = sqlite3.Row
    meta = {r["key"]: json.loads(r["value"]) for r in db.execute("SELECT * FROM meta")}
    seed = db.execute("SELECT fitness_s FROM candidates ORDER BY id LIMIT 1").fetchone()["fitness_s"]
    rows = db.execute("SELECT c.id, c.fitness_s, m.device_s FROM candidates c JOIN measurements m "
                      "ON m.candidate_id = c.id ORDER BY c.finished_at, c.id").fetchall()
    curve, best, device = [], None, 0.0
    for i, r in enumerate(rows, 1):
        device += r["device_s"]
        best = r["fitness_s"] if best is None else min(best, r["fitness_s"])
        curve.append([i, round(device, 3), round(best * 1e3, 6)])
    peers = {r["name"]: (r["median_s"] * 1e3 if r["median_s"] else None) for r in db.execute("SELECT * FROM peers")}
    best_row = db.execute("SELECT id, ir_hash FROM candidates WHERE fitness_s IS NOT NULL ORDER BY fitness_s, id "
                          "LIMIT 1").fetchone()
    search_s = meta.get("elapsed_s", 0.0)
    db.close()
    return {"wall_s": round(wall_s, 2), "search_s": round(search_s, 2), "device_s": round(meta.get("device_s", 0), 2),
            "evaluations": len(rows), "evaluations_per_minute": round(len(rows) / search_s * 60, 2) if search_s else None,
            "seed_median_ms": seed * 1e3 if seed else None, "best_median_ms": best * 1e3 if best else None,
            "best_candidate": dict(best_row) if best_row else None, "peers_median_ms": peers, "curve": curve}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--evaluations", type=int, default=8, help="measured candidates per run")
    p.add_argument("--window", type=int, default=0, help="the executor's window (0: the serial loop's decisions)")
    p.add_argument("--seconds", type=float, default=150.0, help="a wall-clock stop for each run's search")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    from runtime.environment import machine_record  # here: it needs the GPU's libraries

    doc = {"benchmark": "agent/executors/gpu_compare.py", "task": TASK,
           "machine": dict(machine_record(), cpu_cores=os.cpu_count()),
           "budget": {"evaluations": args.evaluations, "seconds": args.seconds}, "window": args.window, "modes": {}}
    for mode in ("serial", "local"):
        run_dir = os.path.join(args.out, mode)
        cmd = [sys.executable, "-m", "agent.evolve", "--task", TASK, "--gpu", "on", "--in-process", "--plain",
               "--no-learn", "--evaluations", str(args.evaluations), "--seconds", str(args.seconds),
               "--run-dir", run_dir, "--executor", mode]
        if mode != "serial":
            cmd += ["--window", str(args.window)]
        env = dict(os.environ, CAKE_CACHE_DIR=os.path.join(args.out, mode + "-cache"))
        t = time.monotonic()
        with open(os.path.join(args.out, mode + ".log"), "w") as log:
            code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        wall = time.monotonic() - t
        doc["modes"][mode] = dict(_summary(run_dir, wall), exit_code=code)
        print(mode, json.dumps({k: v for k, v in doc["modes"][mode].items() if k != "curve"}), flush=True)
    s, l = doc["modes"]["serial"], doc["modes"]["local"]
    if s["best_median_ms"] and l["best_median_ms"]:
        doc["local_vs_serial"] = {"wall_s": round(l["wall_s"] / s["wall_s"], 3),
                                  "best_median_ms": round(l["best_median_ms"] / s["best_median_ms"], 4),
                                  "same_best_candidate": s["best_candidate"] == l["best_candidate"]}
    with open(os.path.join(args.out, "agent_executor_h200.json"), "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")
    return 0 if all(m["exit_code"] == 0 for m in doc["modes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
