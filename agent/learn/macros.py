"""Macro-tactics: two moves that kept paying off one after the other, mined from measured lineages, become one.

`mine` reads the measured runs (mode measure: times from the GPU, not the cost model)
and finds every chain grandparent -> parent -> child whose two steps were both rewrite
tactics and both made the kernel faster by at least MIN_GAIN. A pair of tactics seen so
at least MIN_SUPPORT times is a candidate macro: the two rewrites in order as one move
(tactic kind `macro`, agent/tactics.py), so the search reaches in one step what took it
two, and the bandit credits the pair as a whole.

`replay` is the gate's evidence: seeded runs of the mined run's task from its seed, on the
cost model or measured by a surrogate of the GPU, with the current tactics and with the macro
added, each to the same number of evaluations; `curve` reads a run's best-so-far predicted time per evaluation, and
learn/gate.gate_macro judges the two sets of curves.

    python3 -m agent.learn.macros --runs RUN/agent.db ... --out benchmarks/results/macros_h200.json [--min-support 2]
        [--judge surrogate] [--accept-into DIR]

judges every mined pair (down to --min-support chains) as the gate would, without
writing knowledge unless --accept-into names a learned store: the committed file is the H200
runs' (docs/agent.md). `--judge surrogate` replays measured runs whose times come from the
task's measured rows, or the learned ranker where a kernel was never measured
(measure/surrogate.py), instead of the analytic cost model, which gives most candidates of a
measured lineage the same prediction.
"""

import argparse
import collections
import io
import json
import math
import os
import sqlite3
import tempfile

MIN_GAIN = 1.02  # each step at least 2% faster than its parent, measured
MIN_SUPPORT = 3  # chains behind a macro
REPLAY_SEEDS = (0, 1, 2)
REPLAY_EVALUATIONS = 120

Candidate = collections.namedtuple("Candidate", "steps support gain evidence")


def name(steps):
    return "_then_".join(steps)


def _measured_runs(paths):
    for path in paths:
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        try:
            run = db.execute("SELECT id, task, mode FROM runs").fetchone()
            if run is None or run[2] != "measure":
                continue
            rows = {r[0]: r[1:] for r in db.execute("SELECT id, parent_id, tactic, fitness_s FROM candidates")}
        finally:
            db.close()
        yield path, run[0], run[1], rows


def mine(paths, rewrites, known=(), min_support=MIN_SUPPORT, min_gain=MIN_GAIN):
    """[(Candidate, {task name: the task's JSON})] from the measured runs among `paths` (run databases), best
    supported first. rewrites: the names of the rewrite tactics a macro may chain; known: step pairs already
    macros."""
    found = collections.defaultdict(list)
    tasks = collections.defaultdict(set)
    for path, run_id, task, rows in _measured_runs(paths):
        for cid, (parent, tactic, fit) in rows.items():
            p = rows.get(parent)
            if fit is None or p is None or p[2] is None or tactic not in rewrites or p[1] not in rewrites:
                continue
            g = rows.get(p[0])
            if g is None or g[2] is None or tactic == p[1]:
                continue
            if g[2] >= p[2] * min_gain and p[2] >= fit * min_gain:
                found[(p[1], tactic)].append({"run": run_id, "database": os.path.basename(os.path.dirname(path)),
                                              "candidate": cid, "gain": g[2] / fit})
                tasks[(p[1], tactic)].add(task)  # the task's JSON: runs of one task differ only in their budget
    out = []
    for steps, evidence in found.items():
        if len(evidence) < min_support or steps in set(known):
            continue
        gain = math.exp(sum(math.log(e["gain"]) for e in evidence) / len(evidence))
        by_name = {json.loads(t)["name"]: t for t in sorted(tasks[steps])}
        out.append((Candidate(list(steps), len(evidence), gain, evidence), by_name))
    out.sort(key=lambda c: (-c[0].support, -c[0].gain, c[0].steps))
    return out


def tactic_item(candidate):
    """The tactics.json item of a mined macro, with its provenance."""
    return {"name": name(candidate.steps), "kind": "macro", "steps": list(candidate.steps), "weight": 1.0,
            "doc": "%s then %s as one move: on the H200 the two, in this order, made the kernel faster at each step "
                   "in %d measured lineages (%.2fx over both in geometric mean)"
                   % (candidate.steps[0], candidate.steps[1], candidate.support, candidate.gain),
            "provenance": {"mined_by": "agent/learn/macros.py", "min_gain": MIN_GAIN,
                           "evidence": candidate.evidence}}


def judge(item, task, kb, port, baseline=None, evaluator=None):
    """(Verdict, baseline curves) of the macro tactics.json `item` on `task`: learn/gate.gate_macro over replays
    with the tactics of `kb` and with the item added. `baseline`: replays without it, when already made;
    `evaluator`: the replays' measurements (a measure.surrogate.SurrogateEvaluator), else the cost model's."""
    from agent import loop, tactics as tactics_mod
    from agent.learn import gate, knowledge
    from agent.repair import RepairMap

    # A measured replay draws tactics with the weights measured runs of the family learned.
    current, _ = tactics_mod.load(kb, task.family, loop.MEASURE if evaluator is not None else None)
    listed = knowledge.of(kb).load(knowledge.TACTICS)["tactics"]
    extended = dict(current, **tactics_mod.from_data({"tactics": listed + [item]}))
    repairs = RepairMap.load(kb)
    if baseline is None:
        baseline = replay(task, current, port, repairs, evaluator=evaluator)
    return gate.gate_macro(baseline, replay(task, extended, port, repairs, evaluator=evaluator)), baseline


def accept(kb, item, verdict):
    """Record an accepted macro `item` (with the gate's evidence in its provenance) in `kb`'s learned store, as
    the outer loop does; the tactics.json version it makes."""
    from agent.learn import knowledge

    item["provenance"]["gate"] = verdict.details
    return kb.accept(knowledge.TACTICS, {"append": {"tactics": [item]}}, "macro %s" % item["name"],
                     proposal=item["name"], evidence=verdict.details)


def surrogate(task, kb, port):
    """A SurrogateEvaluator of `task` from the measured rows the knowledge lists (ranker.json's datasets) on the
    device with most of them, and the port it analyzes with (lowering without nvcc); ValueError with too few."""
    from agent.learn import live_ranker
    from agent.measure.surrogate import SurrogateEvaluator

    rows, _ = live_ranker.prior_rows(kb, task.name)
    devices = collections.Counter(r["device"] for r in rows)
    device = devices.most_common(1)[0][0] if devices else None
    return SurrogateEvaluator(task, [r for r in rows if r["device"] == device], port)


def curve(store):
    """Best-so-far fitness after each evaluation of a run's store, in the order they finished."""
    best, out = math.inf, []
    for (fitness,) in store.db.execute("SELECT fitness_s FROM candidates WHERE fitness_s IS NOT NULL "
                                       "ORDER BY finished_at, id"):
        best = min(best, fitness)
        out.append(best)
    return out


def replay(task, tactics, port, repairs, seeds=REPLAY_SEEDS, evaluations=REPLAY_EVALUATIONS, evaluator=None):
    """Best-so-far curves of seeded runs of `task` with `tactics` (by name), one per seed: on the cost model, or
    measured by `evaluator` (then `port` should lower without nvcc: its builds are not run)."""
    from agent import loop
    from agent.authors.search import SearchAuthor
    from agent.bandit import Bandit
    from agent.events import EventLog
    from agent.progress import PlainProgress
    from agent.store import Store

    task = task.with_budget(evaluations=evaluations, wall_s=600.0, stale_generations=1000)
    curves = []
    with tempfile.TemporaryDirectory(prefix="cake-macro-replay-") as tmp:
        for seed in seeds:
            store = Store(os.path.join(tmp, "seed%d.db" % seed))
            try:
                mode = loop.COST_MODEL if evaluator is None else loop.MEASURE
                store.start_run("replay-%d" % seed, task.to_json(), {"mode_line": "macro replay"}, mode, seed)
                bandit = Bandit({n: t.weight for n, t in tactics.items()})
                events = EventLog(os.path.join(tmp, "events%d.jsonl" % seed))
                try:
                    loop.Evolver(task, store, events, port, evaluator, tactics, repairs, bandit,
                                 [SearchAuthor(tactics, bandit, task.fixed)], PlainProgress(io.StringIO()),
                                 loop.Settings(mode=mode, seed=seed)).run()
                finally:
                    events.close()
                curves.append(curve(store))
            finally:
                store.close()
    return curves


def main(argv=None):
    ap = argparse.ArgumentParser(description="judge the macro-tactics mined from measured runs, as the gate would")
    ap.add_argument("--runs", nargs="+", required=True, help="run databases (agent.db)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-support", type=int, default=2)
    ap.add_argument("--judge", choices=("cost-model", "surrogate"), default="cost-model",
                    help="replay on the analytic cost model, or measured by the surrogate of the task's measured rows "
                         "(measure/surrogate.py)")
    ap.add_argument("--accept-into", metavar="DIR",
                    help="a learned store to record the accepted macros in (agent.promote --runs-root PARENT writes them "
                         "into the checkout); without it nothing is written")
    args = ap.parse_args(argv)
    from agent import task as task_mod
    from agent.compiler_port import in_process_port
    from agent.learn import knowledge
    from compiler import host

    kb = knowledge.Knowledge(knowledge.default_dir(), args.accept_into)
    listed = kb.load(knowledge.TACTICS)["tactics"]
    rewrites = {t["name"] for t in listed if t["kind"] == "rewrite"}
    known = [tuple(t["steps"]) for t in listed if t["kind"] == "macro"]
    port = in_process_port(source_only=args.judge == "surrogate")
    baselines, evaluators, rows = {}, {}, []
    try:
        for cand, tasks in mine(args.runs, rewrites, known, min_support=args.min_support):
            row = {"macro": name(cand.steps), "steps": cand.steps, "support": cand.support, "gain": cand.gain,
                   "evidence": cand.evidence, "tasks": sorted(tasks)}
            if len(tasks) == 1:
                (task_name, task_json), = tasks.items()
                task = task_mod.Task.from_json(json.loads(task_json))
                if args.judge == "surrogate" and task_name not in evaluators:
                    evaluators[task_name] = surrogate(task, kb, port)
                item = tactic_item(cand)
                verdict, baselines[task_name] = judge(item, task, kb, port, baselines.get(task_name),
                                                      evaluators.get(task_name))
                row["gate"] = verdict.to_dict()
                if verdict.accepted and args.accept_into:
                    row["knowledge_version"] = accept(kb, item, verdict)
            rows.append(row)
            print("%s (%d chains): %s" % (row["macro"], cand.support, row.get("gate", {}).get("why")), flush=True)
    finally:
        port.close()
    result = {"machine": host.record(), "runs": [os.path.relpath(p) for p in args.runs],
              "how": {"min_gain": MIN_GAIN, "min_support_outer_loop": MIN_SUPPORT, "min_support_here": args.min_support,
                      "replay_seeds": list(REPLAY_SEEDS), "replay_evaluations": REPLAY_EVALUATIONS,
                      "gate": "learn/gate.gate_macro", "judge": args.judge},
              "surrogate_answers": {t: dict(e.answers) for t, e in evaluators.items()},
              "accepted": sum(bool(r.get("gate", {}).get("accepted")) for r in rows), "candidates": rows}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
