"""Macro-tactics: two moves that kept paying off one after the other, mined from measured lineages, become one.

`mine` reads the measured runs (mode measure: times from the GPU, not the cost model)
and finds every chain grandparent -> parent -> child whose two steps were both rewrite
tactics and both made the kernel faster by at least MIN_GAIN. A pair of tactics seen so
at least MIN_SUPPORT times is a candidate macro: the two rewrites in order as one move
(tactic kind `macro`, agent/tactics.py), so the search reaches in one step what took it
two, and the bandit credits the pair as a whole.

`replay` is the gate's evidence: seeded cost-model runs of the mined run's task from its
seed, with the current tactics and with the macro added, each to the same number of
evaluations; `curve` reads a run's best-so-far predicted time per evaluation, and
learn/gate.gate_macro judges the two sets of curves.

    python3 -m agent.learn.macros --runs RUN/agent.db ... --out benchmarks/results/macros_h200.json [--min-support 2]

judges every mined pair (down to --min-support chains) as the gate would, without
writing knowledge: the committed file is the H200 runs' (docs/agent.md).
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


def judge(item, task, kb, port, baseline=None):
    """(Verdict, baseline curves) of the macro tactics.json `item` on `task`: learn/gate.gate_macro over replays
    with the tactics of `kb` and with the item added. `baseline`: replays without it, when already made."""
    from agent import tactics as tactics_mod
    from agent.learn import gate, knowledge
    from agent.repair import RepairMap

    current, _ = tactics_mod.load(kb, task.family)
    listed = knowledge.of(kb).load(knowledge.TACTICS)["tactics"]
    extended = dict(current, **tactics_mod.from_data({"tactics": listed + [item]}))
    repairs = RepairMap.load(kb)
    if baseline is None:
        baseline = replay(task, current, port, repairs)
    return gate.gate_macro(baseline, replay(task, extended, port, repairs)), baseline


def curve(store):
    """Best-so-far fitness after each evaluation of a run's store, in the order they finished."""
    best, out = math.inf, []
    for (fitness,) in store.db.execute("SELECT fitness_s FROM candidates WHERE fitness_s IS NOT NULL "
                                       "ORDER BY finished_at, id"):
        best = min(best, fitness)
        out.append(best)
    return out


def replay(task, tactics, port, repairs, seeds=REPLAY_SEEDS, evaluations=REPLAY_EVALUATIONS):
    """Best-so-far curves of seeded cost-model runs of `task` with `tactics` (by name), one per seed."""
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
                store.start_run("replay-%d" % seed, task.to_json(), {"mode_line": "macro replay"}, loop.COST_MODEL, seed)
                bandit = Bandit({n: t.weight for n, t in tactics.items()})
                events = EventLog(os.path.join(tmp, "events%d.jsonl" % seed))
                try:
                    loop.Evolver(task, store, events, port, None, tactics, repairs, bandit,
                                 [SearchAuthor(tactics, bandit, task.fixed)], PlainProgress(io.StringIO()),
                                 loop.Settings(mode=loop.COST_MODEL, seed=seed)).run()
                finally:
                    events.close()
                curves.append(curve(store))
            finally:
                store.close()
    return curves


def main():
    ap = argparse.ArgumentParser(description="judge the macro-tactics mined from measured runs, as the gate would")
    ap.add_argument("--runs", nargs="+", required=True, help="run databases (agent.db)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-support", type=int, default=2)
    args = ap.parse_args()
    from agent import task as task_mod
    from agent.compiler_port import in_process_port
    from agent.learn import knowledge
    from compiler import host

    kb = knowledge.Knowledge(knowledge.default_dir())
    listed = kb.load(knowledge.TACTICS)["tactics"]
    rewrites = {t["name"] for t in listed if t["kind"] == "rewrite"}
    known = [tuple(t["steps"]) for t in listed if t["kind"] == "macro"]
    port = in_process_port()
    baselines, rows = {}, []
    try:
        for cand, tasks in mine(args.runs, rewrites, known, min_support=args.min_support):
            row = {"macro": name(cand.steps), "steps": cand.steps, "support": cand.support, "gain": cand.gain,
                   "evidence": cand.evidence, "tasks": sorted(tasks)}
            if len(tasks) == 1:
                (task_name, task_json), = tasks.items()
                task = task_mod.Task.from_json(json.loads(task_json))
                verdict, baselines[task_name] = judge(tactic_item(cand), task, kb, port, baselines.get(task_name))
                row["gate"] = verdict.to_dict()
            rows.append(row)
            print("%s (%d chains): %s" % (row["macro"], cand.support, row.get("gate", {}).get("why")), flush=True)
    finally:
        port.close()
    result = {"machine": host.record(), "runs": [os.path.relpath(p) for p in args.runs],
              "how": {"min_gain": MIN_GAIN, "min_support_outer_loop": MIN_SUPPORT, "min_support_here": args.min_support,
                      "replay_seeds": list(REPLAY_SEEDS), "replay_evaluations": REPLAY_EVALUATIONS,
                      "gate": "learn/gate.gate_macro"},
              "accepted": sum(bool(r.get("gate", {}).get("accepted")) for r in rows), "candidates": rows}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
