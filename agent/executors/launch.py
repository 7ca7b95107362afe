"""`evolve`'s executor flags, and running a pipelined evolve with the executor they ask for."""

import os

from agent import loop
from agent.executors import default_window, default_workers, open_executor
from agent.executors.pipeline import Pipeline
from agent.executors.work import Measurer, WorkerConfig


def add_flags(p):
    p.add_argument("--executor", choices=("local", "ray", "serial"), default="local",
                   help="where the work runs: worker processes on this machine (default), a Ray cluster, or the"
                        " serial loop in this process")
    p.add_argument("--workers", type=int, help="CPU workers (default: one per core; ray: the cluster's CPUs)")
    p.add_argument("--gpus", type=int, help="measurement workers, one per GPU (default: every visible GPU)")
    p.add_argument("--window", type=int, help="generations in flight beyond the one being decided (default: enough"
                                              " to keep the workers busy; 0: one generation at a time)")
    p.add_argument("--ray-address", help="an existing Ray cluster (default: ray.init() starts one on this machine)")


def _positive(args):
    for flag in ("workers", "gpus", "window"):
        value = getattr(args, flag)
        if value is not None and value < (0 if flag == "window" else 1):
            raise SystemExit("--%s must be at least %d, not %d" % (flag, 0 if flag == "window" else 1, value))


def run(args, evolver_args, kb, run_dir, gpu_count, log, ranking=None):
    """(evolver, why it stopped) of a pipelined run; evolver_args as loop.Evolver takes them, `ranking` its
    learned ranker (Evolver.ranking)."""
    _positive(args)
    task, settings = evolver_args[0], evolver_args[-1]
    measure = settings.mode == loop.MEASURE
    compiler = "grpc" if args.compiler == "grpc" or args.compiler_address else "in-process"
    config = WorkerConfig(task=task.to_json(), knowledge=WorkerConfig.snapshot(kb), compiler=compiler,
                          compiler_address=args.compiler_address, seed=settings.seed,
                          max_repair_depth=settings.max_repair_depth)
    workers = args.workers or (None if args.executor == "ray" else default_workers())
    gpus = (args.gpus or gpu_count or 1) if measure else 0
    measurer = Measurer(task.to_json(), fake=args.fake_measure) if measure else None
    results_path = os.path.join(run_dir, "evaluations.jsonl")
    from agent import seeds

    executor = open_executor(args.executor, config, workers, measurer, gpus, seeds.family(task.family).binding,
                             results_path, args.ray_address)
    try:
        window = args.window if args.window is not None else default_window(task, settings.mode,
                                                                            executor.cpu_slots, gpus)
        log("%s; window %d" % (executor.describe(), window))
        evolver = Pipeline(*evolver_args, executor=executor, window=window)
        evolver.evaluations_path = results_path
        evolver.ranking = ranking
        return evolver, evolver.run()
    finally:
        executor.close()
