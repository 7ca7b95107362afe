"""Simulated clusters of 8 to 512 GPUs: where the pipeline's driver or its store stops keeping up.

The real driver (pipeline.Pipeline, the SQLite store, the bandit, the progress display)
runs against a SimulatedExecutor whose workers answer at once with synthetic
candidates and outcomes, but on a virtual clock: every job occupies a slot of its
pool (16 CPU workers per GPU, as on the H200 hosts we rent; one measurement slot per
GPU) for a latency drawn from measured ones, and the driver's own time between polls
(really spent: its CPU time, as other work shares this machine) advances the clock too. So the throughput
it reports is what the driver allows: near GPUs x 60 / mean measurement latency while
the driver keeps up, flat once the driver is busy all the time.

    python -m agent.executors.simulate --gpus 8 64 512 --out benchmarks/results/agent_scale_simulated.json

Latencies: check and propose jobs as timed here (work.Context on the default task's
candidates, `--measure-latencies`), compiles (nvcc) and measurements from files given
on the command line, the defaults being the figures in LATENCIES below and where they come from.
"""

import argparse
import collections
import hashlib
import heapq
import io
import json
import os
import random
import statistics
import tempfile
import time

from cake.compiler.v1 import diagnostics_pb2

from agent import assess, loop
from agent.authors.search import SearchAuthor
from agent.bandit import Bandit
from agent.events import EventLog
from agent.executors.base import Executor
from agent.executors.pipeline import Pipeline
from agent.learn import knowledge
from agent.learn.signatures import failure
from agent.progress import PlainProgress
from agent.repair import RepairMap
from agent.store import FILE as STORE_FILE, Store
from agent.tactics import load as load_tactics

CPU_PER_GPU = 16
# Seconds per job. check/propose: work.Context on this 2-core machine (re-measure with --measure-latencies);
# compile: nvcc for the seed kernel here; measure: runtime/pool.py evaluations of the honest kernel on the H200
# (benchmarks/results/runtime_cheats_h200.jsonl: 0.723, 0.380, 0.341, 0.558, 0.539 s).
LATENCIES = {
    "propose": [0.004, 0.006, 0.012, 0.02],
    "check": [0.035, 0.09, 0.15, 0.19, 0.25, 0.4],
    "compile": [4.6],
    "measure": [0.723, 0.380, 0.341, 0.558, 0.539],
}
INVALID = 0.45  # share of checked candidates the verifier rejects (a default cost-model run: 51 of 116)


def _unit(*parts):
    """A number in [0, 1) fixed by `parts` (the synthetic outcomes are the same every run)."""
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:12], 16) / float(1 << 48)


class SimulatedExecutor(Executor):
    name = "simulated"

    def __init__(self, gpus, latencies, cpu_per_gpu=CPU_PER_GPU, tactics=()):
        super().__init__(gpus * cpu_per_gpu, gpus)
        self.latencies, self.tactics = latencies, sorted(tactics)
        self.now = 0.0  # virtual seconds
        self.driver_s = 0.0  # of which the driver was busy
        self._free = {"cpu": self.cpu_slots, "gpu": self.gpu_slots}
        self._queued = {"cpu": collections.deque(), "gpu": collections.deque()}
        self._done = []  # heap of (virtual finish time, ticket, pool, result)
        self._mark = time.process_time()
        self.busy_s = {"cpu": 0.0, "gpu": 0.0}
        self.measured_at = []  # virtual times measurements finished

    def _latency(self, kind, ticket):
        values = self.latencies[kind]
        return values[int(_unit(kind, ticket) * len(values))]

    def _send(self, ticket, kind, payload):
        self._queued["gpu" if kind == "measure" else "cpu"].append((ticket, kind, payload))
        self._start()

    def _start(self):
        for pool, queue in self._queued.items():
            while queue and self._free[pool]:
                ticket, kind, payload = queue.popleft()
                self._free[pool] -= 1
                latency = self._latency(kind, ticket)
                self.busy_s[pool] += latency
                heapq.heappush(self._done, (self.now + latency, ticket, pool, self._answer(kind, payload, latency)))

    def _receive(self, timeout):
        spent = time.process_time() - self._mark  # the driver's work (CPU time: the machine is shared) since its last poll
        self.now += spent
        self.driver_s += spent
        out = []
        if self._done and self._done[0][0] > self.now:
            self.now = self._done[0][0]  # the driver waits for the next job to finish
        while self._done and self._done[0][0] <= self.now:
            finish, ticket, pool, result = heapq.heappop(self._done)
            self._free[pool] += 1
            if pool == "gpu":
                self.measured_at.append(finish)
            out.append((ticket, result))
        self._start()
        self._mark = time.process_time()
        return out

    # -- synthetic work ------------------------------------------------------------------------

    def _answer(self, kind, job, latency):
        if kind == "propose":
            h = hashlib.sha256(repr((job["parent"], job["order"][:3], job["rng"][1][:2])).encode()).hexdigest()
            child = {"kernel": h.encode(), "ir_hash": h, "ir_text": "kernel %s" % h[:12], "genome": None}
            pos = int(_unit("pos", h) * min(3, len(job["order"])))
            return {"pos": pos, "tactic": job["order"][pos], "child": child, "rng": job["rng"]}
        if kind == "check":
            return self._check(job["ir_hash"], job["depth"], job["repair_seed"])
        if kind == "compile":
            return {"compiled": b"cubin", "outcome": assess.Outcome("failed"), "repairs": []}
        predicted = 30e-6 * (0.9 + 0.2 * _unit("fit", job["ir_hash"]))
        out = assess.Outcome("measured", fitness_s=predicted * 1.3, device_s=latency)
        out.measurement = {"median_s": out.fitness_s, "p10_s": None, "p90_s": None, "device_s": latency,
                           "detail": {}}
        return out

    def _check(self, h, depth, seed):
        if _unit("invalid", h) < INVALID:
            d = diagnostics_pb2.Diagnostic(severity=diagnostics_pb2.SEVERITY_ERROR, id="CAKE-RES-001",
                                           path="kernel.regions[0]", message="shared memory over the limit")
            out = assess.Outcome("invalid", diagnostics=[("verify", d)], errors=[d],
                                 failures=[failure("verify", "verifier", d.id, d.message, h)])
            repairs = []
            if depth < 2:
                for i in range(2):
                    r = hashlib.sha256((seed + str(i)).encode()).hexdigest()
                    repairs.append({"kernel": r.encode(), "ir_hash": r, "ir_text": "kernel %s" % r[:12],
                                    "genome": None, "tactic": self.tactics[i % len(self.tactics)]})
            return {"outcome": out, "repairs": repairs}
        predicted = 30e-6 * (0.9 + 0.2 * _unit("fit", h))
        return {"outcome": assess.Outcome("analyzed", prediction={
            "predicted_s": predicted, "bottleneck": "tensor", "calibration": "sim", "report": "{}", "features": {}}),
            "repairs": []}


def _timed_store(store, spent):
    """Wrap the store's methods so the seconds spent in them add up in spent["store"]."""
    for name in ("record", "insert_candidate", "candidate", "candidates", "ranked", "count", "meta", "set_meta",
                 "has_hash", "prediction", "failure_counts", "first", "add_reward"):
        method = getattr(store, name)

        def timed(*a, _method=method, **k):
            t = time.process_time()
            try:
                return _method(*a, **k)
            finally:
                spent["store"] += time.process_time() - t
        setattr(store, name, timed)


class _EveryCommit(PlainProgress):
    """A display that wants a snapshot at every commit: the driver as it was before snapshots were rationed."""

    def due(self):
        return True


def simulate(gpus, evaluations, latencies, directory, snapshot_every_commit=False):
    from agent import task as task_mod

    task = task_mod.task(task_mod.DEFAULT_TASK).with_budget(evaluations=evaluations, wall_s=0.0, stale_generations=0)
    tactics, _ = load_tactics(knowledge.PACKAGE_DIR)
    store = Store(os.path.join(directory, STORE_FILE))
    store.start_run("sim", task.to_json(), {"mode_line": "simulated"}, loop.MEASURE, 0)
    spent = collections.Counter()
    _timed_store(store, spent)
    bandit = Bandit({n: t.weight for n, t in tactics.items()})
    executor = SimulatedExecutor(gpus, latencies, tactics=tactics)
    from agent.executors import default_window

    window = default_window(task, loop.MEASURE, executor.cpu_slots, gpus)
    evolver = Pipeline(task, store, EventLog(os.path.join(directory, "events.jsonl")), None, None, tactics,
                       RepairMap.load(knowledge.PACKAGE_DIR), bandit, [SearchAuthor(tactics, bandit, task.fixed)],
                       (_EveryCommit if snapshot_every_commit else PlainProgress)(io.StringIO()),
                       loop.Settings(mode=loop.MEASURE, seed=0),
                       executor=executor, window=window)
    real = time.perf_counter()
    why = evolver.run()
    real = time.perf_counter() - real
    measured = store.count("candidates", "status = 'measured'")
    mean_measure = statistics.mean(latencies["measure"])
    # The steady state: the middle half of the measurements, past the start (pipeline filling) and the end.
    times = sorted(executor.measured_at)
    lo, hi = len(times) // 4, 3 * len(times) // 4
    per_min = (hi - lo) / (times[hi] - times[lo]) * 60.0
    return {"gpus": gpus, "cpu_workers": executor.cpu_slots, "window": window, "stopped": why,
            "measured": measured, "candidates": store.count("candidates"), "virtual_s": round(executor.now, 2),
            "evaluations_per_minute": round(per_min, 1),
            "ideal_per_minute": round(gpus * 60.0 / mean_measure, 1),
            "efficiency": round(per_min / (gpus * 60.0 / mean_measure), 3),
            "gpu_utilisation": round(executor.busy_s["gpu"] / (executor.now * gpus), 3),
            "driver_busy": round(executor.driver_s / executor.now, 3),
            "driver_s_per_evaluation_ms": round(executor.driver_s / measured * 1e3, 2),
            "store_share_of_driver": round(spent["store"] / executor.driver_s, 3),
            "real_s": round(real, 1)}


def measure_latencies(samples=12):
    """Check and propose job latencies here: work.Context on candidates of a default run's neighbourhood."""
    from agent import task as task_mod
    from agent.executors.work import Context, WorkerConfig
    from agent.genome import Genome, materialize

    task = task_mod.task(task_mod.DEFAULT_TASK)
    ctx = Context(WorkerConfig(task=task.to_json(), knowledge=WorkerConfig.snapshot(knowledge.PACKAGE_DIR),
                               check_cache=False))
    kernel = materialize(Genome(task.family, dict(task.seed_params), {}), task.fixed)
    genome = Genome(task.family, dict(task.seed_params), {}).to_json()
    out = {"propose": [], "check": []}
    rng = random.Random(0)
    order = sorted(ctx.tactics)
    try:
        for i in range(samples):
            rng.shuffle(order)
            t = time.perf_counter()
            p = ctx.propose({"parent": kernel.SerializeToString(), "genome": genome, "order": list(order),
                             "rng": random.Random(i).getstate()})
            out["propose"].append(round(time.perf_counter() - t, 4))
            if p["pos"] is None:
                continue
            t = time.perf_counter()
            ctx.check(dict(p["child"], depth=0, repair_seed="0:repair:" + p["child"]["ir_hash"]))
            out["check"].append(round(time.perf_counter() - t, 4))
    finally:
        ctx.close()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, nargs="+", default=[8, 64, 512])
    p.add_argument("--evaluations-per-gpu", type=int, default=12)
    p.add_argument("--measure-latencies", action="store_true", help="time check and propose jobs here first")
    p.add_argument("--out", help="write the results (JSON) here")
    p.add_argument("--label", default="", help="what this run is (e.g. before/after a fix)")
    p.add_argument("--snapshot-every-commit", action="store_true",
                   help="build a progress snapshot at every commit (the driver before snapshots were rationed)")
    args = p.parse_args(argv)
    latencies = dict(LATENCIES)
    if args.measure_latencies:
        latencies.update(measure_latencies())
    results = []
    for gpus in args.gpus:
        with tempfile.TemporaryDirectory() as d:
            r = simulate(gpus, max(40, gpus * args.evaluations_per_gpu), latencies, d, args.snapshot_every_commit)
        print(json.dumps(r), flush=True)
        results.append(r)
    doc = {"label": args.label, "latencies_s": latencies, "cpu_per_gpu": CPU_PER_GPU, "results": results}
    if args.out:
        from compiler import host

        doc["machine"] = host.record("ray")
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
