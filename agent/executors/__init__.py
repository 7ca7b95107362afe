"""Executors: where the evolve loop's work runs, and the batch-asynchronous loop that uses them.

`pipeline.Pipeline` is the evolve loop with its jobs (propose, check, compile, measure)
handed to an executor: `local.LocalExecutor` (worker processes and one measurement
worker per GPU, the default) or `ray_cluster.RayExecutor` (actors on a Ray cluster).
`open_executor` builds the one a run asks for; docs/agent.md says how to choose.
"""

import math
import os


def default_workers():
    """CPU workers by default: one per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


# A candidate sent to be measured is away for its compile and its measurement: nvcc takes ~4.6 s for a
# KMeans kernel (this 2-core machine), an evaluation ~0.5 s on the H200 (runtime_cheats_h200.jsonl), so
# about ten measurements' worth of time.
CHAIN_PER_MEASURE = 10


def default_window(task, mode, cpu_workers, gpus):
    """Generations in flight beyond the one being decided: enough to keep every measurement worker busy while
    candidates are compiled (or, without a GPU, every CPU worker), given what a generation measures (or checks)."""
    if mode == "measure" and gpus:
        return max(1, math.ceil(gpus * CHAIN_PER_MEASURE / task.measure_top))
    return max(1, math.ceil(cpu_workers / task.batch))


def open_executor(kind, config, cpu_workers, measurer=None, gpus=0, binding=None, results_path=None,
                  ray_address=None):
    """A "local" or "ray" executor for a run (config: work.WorkerConfig; measurer: work.Measurer or None)."""
    if kind == "local":
        from agent.executors.local import LocalExecutor

        return LocalExecutor(config, cpu_workers, measurer, gpus, binding, results_path)
    if kind == "ray":
        from agent.executors.ray_cluster import RayExecutor

        return RayExecutor(config, cpu_workers, measurer, gpus, binding, address=ray_address)
    raise ValueError("unknown executor %r (local, ray)" % kind)
