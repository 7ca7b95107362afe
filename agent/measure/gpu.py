"""Measured fitness: compiled candidates checked and timed in isolated GPU workers.

Jobs go through runtime/pool.py's WorkerPool (spawned workers that survive faults,
hangs and crashes, time limits, every record appended to evaluations.jsonl in the
run directory); the worker side is agent/measure/worker.py. The fitness is the
median time at the task's shapes, admitted only if the oracle passed on every
shape of the contract. Device time is each job's elapsed time in its worker.
"""

import dataclasses

from agent.measure.result import Measured
from agent.ir_edit import tile_rows

TIMING = {"warmup": 5, "reps": 30, "flush_factor": 2.0, "input_sets": 2}


class GpuEvaluator:
    def __init__(self, task, family, results_path, time_limit_s=240.0, timing=None, env=None):
        from runtime import evaluate as runtime_evaluate

        self.task, self.family = task, family
        self.time_limit_s = time_limit_s
        self.timing = dict(timing or TIMING)
        # env pins the workers to one device (CUDA_VISIBLE_DEVICES) when there are several.
        self.pool = runtime_evaluate.pool(results_path, env=env)

    def warm(self):
        """Start the measurement worker now (WorkerStartError if it cannot)."""
        self.pool.start()

    def _run(self, task, payload, ir_hash, label):
        from runtime.pool import Job

        return self.pool.run(Job(task=task, payload=payload, ir_hash=ir_hash, time_limit_s=self.time_limit_s,
                                 label=label))

    def measure(self, compiled, kernel, binding, label):
        payload = {"compiled": compiled.SerializeToString(), "binding": binding,
                   "contract": self.task.kernel_contract.runtime, "shapes": self.task.all_shapes, "timing": self.timing,
                   "tile_rows": tile_rows(kernel)}
        record = self._run("agent.measure.worker:evaluate", payload, compiled.ir_hash, label)
        device_s = record["elapsed_s"]
        if not record["ok"]:
            f = record["failure"]
            return Measured(False, device_s=device_s, kind=f["kind"], message=f["message"], record=record)
        r = record["result"]
        if not r["passed"]:
            return Measured(False, device_s=device_s, kind=r["kind"], message=r["message"], record=record)
        return Measured(True, r["median_ms"] * 1e-3, r["p10_ms"] * 1e-3, r["p90_ms"] * 1e-3, device_s,
                        detail={"check": r["check"], "environment": r["environment"], "toolchain": compiled.toolchain,
                                "target": compiled.target}, record=record)

    def peers(self):
        """name -> (median seconds or None, detail) for each of the task's peers, timed once at the task's shape."""
        out = {}
        for peer in self.task.kernel_contract.peers:
            name = peer.name
            payload = {"name": name, "from": peer.source, "contract": self.task.kernel_contract.runtime,
                       "shapes": [self.task.shapes], "timing": self.timing}
            record = self._run("agent.measure.worker:time_peer", payload, "peer-" + name, "peer " + name)
            r = record["result"] if record["ok"] else {"available": False, "failure": record["failure"]}
            median = r.get("median_ms") * 1e-3 if r.get("passed") else None
            out[name] = (median, dataclasses.asdict(Measured(bool(median), median, device_s=record["elapsed_s"],
                                                             message=str(r))))
        return out

    def close(self):
        self.pool.close()
