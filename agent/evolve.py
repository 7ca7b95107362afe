"""`bazel run //agent:evolve`: evolve CAKE IR for a task, then report and learn.

    bazel run //agent:evolve                                  # default task: KMeans assign, small shape
    bazel run //agent:evolve -- --task kmeans-assign-paper    # the paper's cell (GPU: 20 min of device time)
    bazel run //agent:evolve -- --run-dir DIR                 # resume the run in DIR (or start one there)
    bazel run //agent:evolve -- --author llm                  # let an LLM write candidates (see docs/agent.md)
    bazel run //agent:evolve -- --in-process                  # call the compiler in-process, not over gRPC
    bazel run //agent:promote                                 # write what was learned into agent/knowledge

With a GPU (the task's target, e.g. an H200 for sm_90a) candidates are compiled and
measured in isolated workers; without one the search says so and evolves on the
cost model's predictions. Runs live under the runs root (agent/places.py: --runs-root,
$CAKE_RUNS_ROOT, else agent/runs in CAKE's state directory, ~/.local/state/cake),
one directory each (agent.db, events.jsonl, report.md, summary.json and the plots);
the report's path is printed last. Nothing in the checkout is written: what the
outer loop learns goes to the runs root's knowledge/ (learn/knowledge.py) until
promoted. Every check that can refuse the run (flags, places, the GPU, the LLM
settings, the compiler) happens before its directory is made.
"""

import argparse
import dataclasses
import datetime
import json
import os
import sys
import uuid

from agent import assess, loop, places as places_mod, progress as progress_mod, report, seeds
from agent import task as task_mod
from agent.authors.search import SearchAuthor
from agent.bandit import Bandit
from agent.compiler_port import PortError, open_port
from agent.events import EventLog
from agent.executors import launch
from agent.learn import calibrate, live_ranker, outer, ranker
from agent.measure import device
from agent.repair import RepairMap
from agent.store import FILE as STORE_FILE, Store
from agent.tactics import load as load_tactics


class Refused(Exception):
    """The run cannot start as asked; the message says why (and nothing was recorded)."""


def add_place_flags(p):
    """The flags that say where runs and knowledge live (shared with agent/promote.py)."""
    p.add_argument("--runs-root", help="directory of the runs and the learned knowledge (default: $%s, else "
                   "agent/runs under $CAKE_STATE_DIR, $XDG_STATE_HOME/cake or ~/.local/state/cake)"
                   % places_mod.RUNS_ROOT_VARIABLE)
    p.add_argument("--knowledge-dir", help="the reviewed knowledge files (default: the checkout's agent/knowledge)")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="evolve", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default=task_mod.DEFAULT_TASK, choices=sorted(task_mod.TASKS))
    p.add_argument("--run-dir", help="run directory (resumed when it holds a run)")
    add_place_flags(p)
    p.add_argument("--gpu", choices=("auto", "on", "off"), default="auto",
                   help="measure on the GPU (auto: when one of the task's target is present)")
    p.add_argument("--compiler", choices=("auto", "grpc", "in-process"), default="auto",
                   help="how to reach the compiler (auto: the gRPC service, else in-process)")
    p.add_argument("--in-process", dest="compiler", action="store_const", const="in-process",
                   help="call the compiler in-process (same as --compiler in-process)")
    p.add_argument("--compiler-address", help="a running compiler service (host:port) instead of a local one")
    p.add_argument("--measure-address", help="measure on a remote GPU: a compiler service (host:port) started with "
                                            "--measure, through its Measure RPC (token: $CAKE_TOKEN)")
    p.add_argument("--measure-task", default="kmeans_assign",
                   help="the remote service's task the candidates are measured as (default: %(default)s)")
    p.add_argument("--author", choices=("search", "llm", "mixed"), default="search",
                   help="who writes candidates: the tactic search, an LLM (env: OPENAI_BASE_URL, OPENAI_API_KEY,"
                        " CAKE_LLM_MODEL), or both in turn")
    p.add_argument("--seed-family", choices=sorted(seeds.FAMILIES), help="start from this family (default: the task's)")
    p.add_argument("--evaluations", type=int, help="budget: candidates given a fitness")
    p.add_argument("--seconds", type=float, help="budget: seconds of search")
    p.add_argument("--device-seconds", type=float, help="budget: seconds of GPU time (measured runs)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the search")
    p.add_argument("--no-learn", action="store_true", help="skip the outer loop after the run")
    p.add_argument("--ranker", choices=("on", "off"), default="on",
                   help="measured runs: order what is measured by the learned ranker (agent/learn/live_ranker.py) "
                   "once it has rows enough, instead of the analytic prediction alone")
    p.add_argument("--learn-only", action="store_true", help="only run the outer loop over existing runs")
    p.add_argument("--plain", action="store_true", help="plain progress lines even on a terminal")
    launch.add_flags(p)
    p.add_argument("--fake-measure", action="store_true", help=argparse.SUPPRESS)  # tests: GPU path on CPU
    p.add_argument("--throttle", type=float, default=0.0, help=argparse.SUPPRESS)  # tests: slow the loop down
    args = p.parse_args(argv)
    for flag in ("evaluations", "seconds", "device_seconds"):
        if getattr(args, flag) is not None and getattr(args, flag) < 0:
            p.error("--%s must be at least 0" % flag.replace("_", "-"))
    return args


def command_line():
    """How the user started this program, for the hints we print (`bazel run` or python -m)."""
    if os.environ.get("BUILD_WORKSPACE_DIRECTORY"):
        return "bazel run //agent:evolve --"
    return "python3 -m agent.evolve"


def _budget(task, args):
    changes = {k: v for k, v in (("evaluations", args.evaluations), ("wall_s", args.seconds),
                                 ("device_s", args.device_seconds)) if v is not None}
    return task.with_budget(**changes) if changes else task


def _mode(args, task):
    """(mode, the line saying so); Refused when --gpu on finds no GPU for the task."""
    if args.fake_measure:
        return loop.MEASURE, "fake GPU: measuring with the test evaluator"
    if args.measure_address:
        return loop.MEASURE, "remote GPU: measuring through the compiler service at %s" % args.measure_address
    if args.gpu == "off":
        return loop.COST_MODEL, "no GPU (--gpu off): evolving on the cost model for %s" % task.target
    gpu = device.probe(task.target)
    if gpu.usable:
        return loop.MEASURE, "GPU: measuring on %s" % gpu.description
    if args.gpu == "on":
        raise Refused("--gpu on, but there is no GPU to measure %s kernels on: %s (without --gpu on the run "
                      "evolves on the cost model)" % (task.target, gpu.description))
    return loop.COST_MODEL, "no GPU: evolving on the cost model for %s (%s)" % (task.target, gpu.description)


def gpu_count(mode, task, args):
    """GPUs to measure on: every visible one of the task's kind (a run without a GPU: none)."""
    if mode != loop.MEASURE or args.fake_measure or args.executor == "serial":
        return 0
    return device.probe(task.target).count


def _llm_client(args):
    """The LLM author's chat client when --author asks for one, else None; Refused when its settings are missing
    or wrong."""
    if args.author == "search":
        return None
    from agent.authors.llm import ChatClient, LlmError

    try:
        return ChatClient.from_env()
    except LlmError as e:
        raise Refused("--author %s: %s" % (args.author, e)) from None


def _authors(args, llm_client, search, task, store, port, mode, log):
    """The run's authors by --author: the tactic search, the LLM author (taught the compiler's op catalogue, shown
    the run's population in `store`), or both in turn."""
    if llm_client is None:
        return [search]
    from agent.authors.llm import LlmAuthor
    from agent.authors.population import Population

    llm = [LlmAuthor(llm_client, task, Population(store), port.primitives(), mode == loop.MEASURE, log=log)]
    return {"llm": llm, "mixed": llm + [search]}[args.author]


def _evaluator(args, mode, task, run_dir):
    if mode != loop.MEASURE:
        return None
    family = seeds.family(task.family)
    if args.fake_measure:
        from agent.measure.fake import FakeEvaluator

        return FakeEvaluator(task.shapes, task.device)
    if args.measure_address:
        from agent.measure.remote import RemoteEvaluator
        from compiler.service.client import CompilerClient

        client = CompilerClient(args.measure_address, timeout=60.0, token=os.environ.get("CAKE_TOKEN") or None)
        try:
            return RemoteEvaluator(client, args.measure_task, task.shapes, task.check_shapes)
        except Exception as e:  # noqa: BLE001  (unreachable, not measuring, unknown task: refuse to start, say why)
            raise SystemExit("--measure-address %s: %s" % (args.measure_address, e)) from None
    from agent.measure.gpu import GpuEvaluator

    return GpuEvaluator(task, family, os.path.join(run_dir, "evaluations.jsonl"))


@dataclasses.dataclass
class Plan:
    """A run decided on but not yet recorded: where, what and how."""

    run_dir: str
    resumed: object  # the existing run's row, or None for a new run
    task: object
    mode: str
    line: str
    config: dict


def _plan(args, where):
    """Decide the run without writing anything; Refused when it cannot go ahead."""
    if args.run_dir:
        run_dir = os.path.abspath(args.run_dir)
        if os.path.exists(run_dir) and not os.path.isdir(run_dir):
            raise Refused("--run-dir %s is not a directory" % run_dir)
    else:
        run_id = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        run_dir = os.path.join(where.runs_root, run_id)
    db = os.path.join(run_dir, STORE_FILE)
    resumed = None
    if os.path.exists(db):
        store = Store(db)
        try:
            resumed = store.run()
        finally:
            store.close()
    if resumed is not None:
        task = _budget(task_mod.Task.from_json(json.loads(resumed["task"])), args)
        config = json.loads(resumed["config"])
        return Plan(run_dir, resumed, task, resumed["mode"], config["mode_line"] + " (resumed)", config)
    task = _budget(task_mod.task(args.task), args)
    if args.seed_family:
        task = dataclasses.replace(task, family=args.seed_family, seed_params=seeds.family(args.seed_family).defaults)
    mode, line = _mode(args, task)
    return Plan(run_dir, None, task, mode, line, {"mode_line": line, "seed": args.seed, "author": args.author})


def _record(plan):
    """Make the run's directory and database (or open the resumed one); the Store."""
    os.makedirs(plan.run_dir, exist_ok=True)
    store = Store(os.path.join(plan.run_dir, STORE_FILE))
    if plan.resumed is None:
        store.start_run(os.path.basename(plan.run_dir), plan.task.to_json(), plan.config, plan.mode, plan.config["seed"])
    return store


def _learn_only(args, where):
    roots = where.roots(args.run_dir)
    with open_port(args.compiler, address=args.compiler_address, log=print) as port:
        for kind, sig, verdict in outer.learn(roots, where.knowledge(), port):
            print("%s %s: %s (%s)" % (kind, "accepted" if verdict.accepted else "refused", sig, verdict.why))
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        where = places_mod.resolve(args.runs_root, args.knowledge_dir, args.run_dir)
        if args.learn_only:
            return _learn_only(args, where)
        return _run(args, where)
    except (Refused, places_mod.PlaceError, PortError) as e:
        print("evolve: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nevolve: interrupted before the run started; nothing was recorded", file=sys.stderr)
        return 130


def _run(args, where):
    """Check everything that can refuse the run, then record it and evolve."""
    kb = where.knowledge()
    plan = _plan(args, where)
    if plan.mode == loop.MEASURE and args.ranker == "on":
        why = ranker.missing()
        if why:
            raise Refused("--ranker on: %s; install it (requirements.txt pins it; ci/gpu_wheels.txt lists the wheels "
                          "a GPU machine without registries needs) or pass --ranker off" % why)
    tactics, tactics_version = load_tactics(kb, plan.task.family, plan.mode)
    llm = _llm_client(args)
    with open_port(args.compiler, outer.learned_rules(kb)["rules"], calibrate.current_data(kb), args.compiler_address,
                   log=print) as port:
        store = _record(plan)
        try:
            return _evolve(args, where, kb, plan, store, port, tactics, tactics_version, llm)
        except KeyboardInterrupt:
            store.finish_run("interrupted")
            again = ["--run-dir", plan.run_dir] + [x for flag, value in (("--runs-root", args.runs_root),
                                                                           ("--knowledge-dir", args.knowledge_dir))
                                                   if value for x in (flag, value)]
            print("\nevolve: interrupted; everything so far is saved in %s. Resume the run with:\n    %s %s"
                  % (plan.run_dir, command_line(), " ".join(again)), file=sys.stderr, flush=True)
            return 130
        finally:
            store.close()


def _evolve(args, where, kb, plan, store, port, tactics, tactics_version, llm):
    task, mode, run_dir = plan.task, plan.mode, plan.run_dir
    settings = loop.Settings(mode=mode, seed=plan.config["seed"], throttle_s=args.throttle)
    bandit = Bandit({n: t.weight for n, t in tactics.items()}, store.tactic_stats())
    # print: rich's live display shows prints above itself
    authors = _authors(args, llm, SearchAuthor(tactics, bandit, task.fixed), task, store, port, mode, print)
    events = EventLog(os.path.join(run_dir, "events.jsonl"))
    display = progress_mod.make("CAKE agent: %s" % task.name, plain=args.plain or None)
    try:
        display.message(plan.line)
        display.message("run directory: %s" % run_dir)
        legacy = where.legacy_runs()
        if legacy:
            display.message("earlier runs at the old location %s (%d) are read by the outer loop where they are"
                            % (where.legacy_root, len(legacy)))
        display.message("compiler: %s; knowledge: %s (tactics v%d)" % (port.name, kb, tactics_version))
        evaluator = _evaluator(args, mode, task, run_dir)
        events.emit("run_started", mode=mode, task=task.name, compiler=port.name, resumed=store.count("candidates") > 0)
        try:
            if evaluator is not None and not store.meta("peers_timed", False):
                for name, (median, detail) in evaluator.peers().items():
                    store.set_peer(name, median, detail)
                store.set_meta("peers_timed", True)
            evolver_args = (task, store, events, port, evaluator, tactics, RepairMap.load(kb), bandit, authors,
                            display, settings)
            ranking = _ranking(args, mode, task, kb, display.message)
            if args.executor == "serial":
                evolver = loop.Evolver(*evolver_args)
                evolver.ranking = ranking
                why = evolver.run()
            else:
                if evaluator is not None:
                    evaluator.close()  # the measurement workers own the GPUs from here
                evolver, why = launch.run(args, evolver_args, kb, run_dir, gpu_count(mode, task, args),
                                          display.message, ranking)
        finally:
            if evaluator is not None:
                evaluator.close()
        display.close()
        print("stopped: %s" % why, flush=True)
        if not args.no_learn:
            if mode == loop.MEASURE:
                kept, version = live_ranker.remember(kb, os.path.join(run_dir, STORE_FILE), port)
                if kept:
                    print("learned: the %d measured candidates, for the ranker (ranker.json v%d)" % (kept, version))
            for kind, sig, verdict in outer.learn(where.roots(run_dir), kb, port, store, log=print):
                print("proposal %s %s: %s" % (kind, "accepted" if verdict.accepted else "refused", verdict.why))
        cuda, note = _best_cuda(port, store, evolver)
        path = report.write(run_dir, store, task, plan.line, why, bandit, cuda, note,
                            "Peers were not measured: %s." % ("no GPU" if mode != loop.MEASURE else "none importable"))
        events.emit("run_finished", stopped=why, report=path)
    finally:
        display.close()
        events.close()
    store.finish_run("finished")
    pending = kb.pending()
    if pending:
        print("learned: %d accepted change(s) in %s; review and write them into %s with: %s"
              % (len(pending), kb.learned, kb.base, promote_command()), flush=True)
    print("report: %s" % path, flush=True)
    return 0


def _ranking(args, mode, task, kb, log):
    """The learned ranker of a measured run (loop.Evolver.ranking), or None (`--ranker off`, or no GPU)."""
    if mode != loop.MEASURE or args.ranker == "off":
        return None
    prior, notes = live_ranker.prior_rows(kb, task.name)
    for note in notes:
        log(note)
    log("learned ranker: %d measured rows of %s in the knowledge, refit as this run measures" % (len(prior), task.name))
    return live_ranker.LiveRanker(task.name, prior)


def promote_command():
    return "bazel run //agent:promote" if os.environ.get("BUILD_WORKSPACE_DIRECTORY") else "python3 -m agent.promote"


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
