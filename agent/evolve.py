"""`bazel run //agent:evolve`: evolve CAKE IR for a task, then report and learn.

    bazel run //agent:evolve                                  # default task: KMeans assign, small shape
    bazel run //agent:evolve -- --task kmeans-assign-paper    # the paper's cell (GPU: 20 min of device time)
    bazel run //agent:evolve -- --run-dir DIR                 # resume the run in DIR (or start one there)
    bazel run //agent:evolve -- --author llm                  # let an LLM write candidates (see docs/agent.md)
    bazel run //agent:evolve -- --in-process                  # call the compiler in-process, not over gRPC

With a GPU (the task's target, e.g. an H200 for sm_90a) candidates are compiled and
measured in isolated workers; without one the search says so and evolves on the
cost model's predictions. Runs live in <checkout>/.cake/agent/runs/<run id>/
(agent.db, events.jsonl, report.md and its plots); the report's path is printed last.
"""

import argparse
import datetime
import os
import sys
import uuid

from agent import assess, loop, progress as progress_mod, report, seeds
from agent import task as task_mod
from agent.authors.search import SearchAuthor
from agent.bandit import Bandit
from agent.compiler_port import open_port
from agent.events import EventLog
from agent.learn import calibrate, knowledge, outer
from agent.measure import device
from agent.repair import RepairMap
from agent.store import Store
from agent.tactics import load as load_tactics

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def workspace():
    """The checkout: where `bazel run` was invoked, else this file's repository."""
    return os.environ.get("BUILD_WORKSPACE_DIRECTORY") or REPO


def parse_args(argv):
    p = argparse.ArgumentParser(prog="evolve", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default=task_mod.DEFAULT_TASK, choices=sorted(task_mod.TASKS))
    p.add_argument("--run-dir", help="run directory (resumed when it holds a run)")
    p.add_argument("--gpu", choices=("auto", "on", "off"), default="auto",
                   help="measure on the GPU (auto: when one of the task's target is present)")
    p.add_argument("--compiler", choices=("auto", "grpc", "in-process"), default="auto",
                   help="how to reach the compiler (auto: the gRPC service, else in-process)")
    p.add_argument("--in-process", dest="compiler", action="store_const", const="in-process",
                   help="call the compiler in-process (same as --compiler in-process)")
    p.add_argument("--compiler-address", help="a running compiler service (host:port) instead of a local one")
    p.add_argument("--author", choices=("search", "llm", "mixed"), default="search",
                   help="who writes candidates: the tactic search, an LLM (env: OPENAI_BASE_URL, OPENAI_API_KEY,"
                        " CAKE_LLM_MODEL), or both in turn")
    p.add_argument("--seed-family", choices=sorted(seeds.FAMILIES), help="start from this family (default: the task's)")
    p.add_argument("--evaluations", type=int, help="budget: candidates given a fitness")
    p.add_argument("--seconds", type=float, help="budget: seconds of search")
    p.add_argument("--device-seconds", type=float, help="budget: seconds of GPU time (measured runs)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the search")
    p.add_argument("--knowledge-dir", help="knowledge files (default: the checkout's agent/knowledge)")
    p.add_argument("--no-learn", action="store_true", help="skip the outer loop after the run")
    p.add_argument("--learn-only", action="store_true", help="only run the outer loop over existing runs")
    p.add_argument("--plain", action="store_true", help="plain progress lines even on a terminal")
    p.add_argument("--fake-measure", action="store_true", help=argparse.SUPPRESS)  # tests: GPU path on CPU
    p.add_argument("--throttle", type=float, default=0.0, help=argparse.SUPPRESS)  # tests: slow the loop down
    return p.parse_args(argv)


def _budget(task, args):
    changes = {k: v for k, v in (("evaluations", args.evaluations), ("wall_s", args.seconds),
                                 ("device_s", args.device_seconds)) if v is not None}
    return task.with_budget(**changes) if changes else task


def _mode(args, task):
    """(mode, the line saying so)."""
    if args.fake_measure:
        return loop.MEASURE, "fake GPU: measuring with the test evaluator"
    if args.gpu == "off":
        return loop.COST_MODEL, "no GPU (--gpu off): evolving on the cost model for %s" % task.target
    gpu = device.probe(task.target)
    if gpu.usable:
        return loop.MEASURE, "GPU: measuring on %s" % gpu.description
    if args.gpu == "on":
        raise SystemExit("--gpu on, but %s" % gpu.description)
    return loop.COST_MODEL, "no GPU: evolving on the cost model for %s (%s)" % (task.target, gpu.description)


def _authors(args, task, tactics, bandit, log):
    search = SearchAuthor(tactics, bandit, task.fixed)
    if args.author == "search":
        return [search]
    from agent.authors.llm import ChatClient, LlmAuthor, LlmError

    try:
        llm = LlmAuthor(ChatClient.from_env(), task, log=log)
    except LlmError as e:
        raise SystemExit("--author %s: %s" % (args.author, e)) from None
    return [llm] if args.author == "llm" else [llm, search]


def _evaluator(args, mode, task, run_dir):
    if mode != loop.MEASURE:
        return None
    family = seeds.family(task.family)
    if args.fake_measure:
        from agent.measure.fake import FakeEvaluator

        return FakeEvaluator(task.shapes, task.device)
    from agent.measure.gpu import GpuEvaluator

    return GpuEvaluator(task, family, os.path.join(run_dir, "evaluations.jsonl"))


def _start(args):
    """(store, task, mode, mode line, settings, run dir) of a new run or the one in --run-dir."""
    runs_root = os.path.join(workspace(), ".cake", "agent", "runs")
    run_id = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    run_dir = os.path.abspath(args.run_dir or os.path.join(runs_root, run_id))
    os.makedirs(run_dir, exist_ok=True)
    store = Store(os.path.join(run_dir, "agent.db"))
    run = store.run()
    if run is not None:
        import json

        task = _budget(task_mod.Task.from_json(json.loads(run["task"])), args)
        config = json.loads(run["config"])
        mode = run["mode"]
        line = config["mode_line"] + " (resumed)"
    else:
        task = _budget(task_mod.task(args.task), args)
        if args.seed_family:
            import dataclasses

            task = dataclasses.replace(task, family=args.seed_family, seed_params=seeds.family(args.seed_family).defaults)
        mode, line = _mode(args, task)
        config = {"mode_line": line, "seed": args.seed, "author": args.author}
        store.start_run(os.path.basename(run_dir), task.to_json(), config, mode, args.seed)
    settings = loop.Settings(mode=mode, seed=config["seed"], throttle_s=args.throttle)
    return store, task, mode, line, settings, run_dir


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kdir = os.path.abspath(args.knowledge_dir or knowledge.default_dir())
    if args.learn_only:
        root = os.path.dirname(os.path.abspath(args.run_dir)) if args.run_dir else os.path.join(
            workspace(), ".cake", "agent", "runs")
        for kind, sig, verdict in outer.learn(root, kdir):
            print("%s %s: %s (%s)" % (kind, "accepted" if verdict.accepted else "refused", sig, verdict.why))
        return 0
    store, task, mode, line, settings, run_dir = _start(args)
    tactics, tactics_version = load_tactics(kdir)
    bandit = Bandit({n: t.weight for n, t in tactics.items()}, store.tactic_stats())
    authors = _authors(args, task, tactics, bandit, print)  # rich's live display shows prints above itself
    events = EventLog(os.path.join(run_dir, "events.jsonl"))
    display = progress_mod.make("CAKE agent: %s" % task.name, plain=args.plain or None)
    display.message(line)
    display.message("run directory: %s" % run_dir)
    try:
        with open_port(args.compiler, outer.load_rules(kdir), calibrate.current(kdir), args.compiler_address,
                       log=display.message) as port:
            display.message("compiler: %s; knowledge: %s (tactics v%d)" % (port.name, kdir, tactics_version))
            evaluator = _evaluator(args, mode, task, run_dir)
            events.emit("run_started", mode=mode, task=task.name, compiler=port.name, resumed=store.count("candidates") > 0)
            try:
                if evaluator is not None and not store.meta("peers_timed", False):
                    for name, (median, detail) in evaluator.peers().items():
                        store.set_peer(name, median, detail)
                    store.set_meta("peers_timed", True)
                evolver = loop.Evolver(task, store, events, port, evaluator, tactics, RepairMap.load(kdir), bandit,
                                       authors, display, settings)
                why = evolver.run()
            finally:
                if evaluator is not None:
                    evaluator.close()
            display.close()
            print("stopped: %s" % why, flush=True)
            if not args.no_learn:
                for kind, sig, verdict in outer.learn(os.path.dirname(run_dir), kdir, store, log=print):
                    print("proposal %s %s: %s" % (kind, "accepted" if verdict.accepted else "refused", verdict.why))
            cuda, note = _best_cuda(port, store, evolver)
        path = report.write(run_dir, store, task, line, why, bandit, cuda, note,
                            "Peers were not measured: %s." % ("no GPU" if mode != loop.MEASURE else "none importable"))
        events.emit("run_finished", stopped=why, report=path)
    finally:
        display.close()
        events.close()
    store.finish_run("finished")
    store.close()
    print("report: %s" % path, flush=True)
    return 0


def _best_cuda(port, store, evolver):
    """(generated CUDA of the best candidate, or None, and a note saying why not)."""
    best = store.ranked(limit=1)
    if not best:
        return None, "No candidate to compile."
    try:
        cuda, diags = assess.build_for_report(port, evolver.kernel(best[0]))
    except Exception as e:  # nvcc missing or failing must not cost the report
        return None, "Compiling the best candidate failed: %s" % e
    if cuda is None:
        return None, "The best candidate did not build: %s" % "; ".join("%s %s" % (d.id, d.message) for d in diags)
    return cuda, ""


if __name__ == "__main__":
    sys.exit(main())
