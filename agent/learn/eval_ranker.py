"""Judge the learned ranker on held-out measured candidates, per task, beside the analytic cost model.

For each task of the dataset (agent/learn/dataset.py's JSON lines), its rows are split
into FOLDS folds by a hash of each candidate's IR hash; each fold's rows are ranked by
a ranker trained on every other row (the other folds of the task, and every row of the
other tasks), so every candidate is ranked by trees that never saw it (a candidate two
runs measured falls in one fold). Reported per task, and per run where a task has
several (and then also with each run ranked by trees trained on the other runs
only): the Spearman correlation with the measured times of those held-out rankings and
of the analytic predictions on the same rows, the analytic model's count of distinct
predictions, and the measured time of the candidate each would measure first.

    python3 -m agent.learn.eval_ranker --dataset benchmarks/datasets/measured_candidates_h200.jsonl \
        --out benchmarks/results/ranker_h200.json
"""

import argparse
import hashlib
import json

from agent.learn import dataset, ranker

FOLDS = 5


def fold_of(ir_hash):
    return int(hashlib.sha256(ir_hash.encode()).hexdigest(), 16) % FOLDS


def evaluate(rows):
    """{task: {"rows", "ranker_spearman", "analytic_spearman", ..., "runs": {run: the same per run}}} over held-out folds."""
    out = {}
    for task in sorted({r["task"] for r in rows}):
        mine = [r for r in rows if r["task"] == task]
        held = {}
        for fold in range(FOLDS):
            test = [r for r in mine if fold_of(r["ir_hash"]) == fold]
            if not test:
                continue
            train = [r for r in rows if not (r["task"] == task and fold_of(r["ir_hash"]) == fold)]
            model = ranker.Ranker.fit(train)
            for r, p in zip(test, model.predict([r["features"] for r in test])):
                held[(r["run"], r["ir_hash"])] = p
        out[task] = _scores(mine, held)
        runs = sorted({r["run"] for r in mine})
        if len(runs) > 1:
            out[task]["runs"] = {run: _scores([r for r in mine if r["run"] == run], held) for run in runs}
            out[task]["leave_run_out"] = {run: _leave_run_out(rows, task, run) for run in runs}
    return out


def _leave_run_out(rows, task, run):
    """A run's rows ranked by trees trained on every other run (the stricter split: no sibling of a
    candidate from its own run is in training)."""
    test = [r for r in rows if r["task"] == task and r["run"] == run]
    model = ranker.Ranker.fit([r for r in rows if r["run"] != run])
    held = {(r["run"], r["ir_hash"]): p for r, p in zip(test, model.predict([r["features"] for r in test]))}
    return _scores(test, held)


def _scores(rows, held):
    measured = [r["measured_s"] for r in rows]
    learned = [held[(r["run"], r["ir_hash"])] for r in rows]
    analytic = [r["predicted_s"] for r in rows]
    return {
        "rows": len(rows), "folds": FOLDS,
        "ranker_spearman": ranker.spearman(learned, measured),
        "analytic_spearman": ranker.spearman(analytic, measured),
        "analytic_distinct_predictions": len(set(analytic)),
        "best_measured_ms": min(measured) * 1e3,
        "ranker_first_pick_ms": measured[learned.index(min(learned))] * 1e3,
        "analytic_first_pick_ms": measured[analytic.index(min(analytic))] * 1e3,
        "devices": sorted({r["device"] for r in rows}), "toolchains": sorted({r["toolchain"] for r in rows}),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    from compiler import host

    rows = dataset.read(args.dataset)
    result = {
        "machine": host.record("lightgbm"),
        "how": __doc__.split("\n\n")[1].replace("\n", " "),
        "dataset": args.dataset, "params": ranker.PARAMS, "rounds": ranker.ROUNDS,
        "tasks": evaluate(rows),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(result["tasks"], indent=1))


if __name__ == "__main__":
    main()
