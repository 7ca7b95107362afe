"""Runs of one task side by side: how many evaluations each took to reach a reference run's best.

Issue 18 asks that a run with the knowledge learned from an earlier run of its task
reach that run's best in at most half the evaluations. Each run's summary.json
(agent/report.py) holds its best-so-far curve (evaluation, best measured ms). A run
"reaches" the reference's best at its first evaluation within REACHED (the macro
gate's tolerance, learn/gate.MACRO_TOLERANCE) of it, judged two ways:
- absolute: its best time against the reference's best time;
- against the hand-tuned kernel each run timed beside itself (`cake-tuned`), its best
  over that peer against the reference's best over its peer, so a change in the
  compiler or the machine between the runs (a release fence added to every kernel,
  another H200) moves both sides alike.

    python3 -m agent.learn.curves --run first=A/summary.json --run second=B/summary.json \
        --reference first --out benchmarks/results/agent_knowledge_h200.json [--plot FILE.png] [--note first="..."]

writes both curves, where each reached the reference, and whether that took at most half its evaluations.
"""

import argparse
import json
import os

from agent.learn.gate import MACRO_TOLERANCE as REACHED

PEER = "cake-tuned"


def curve(summary):
    """[(evaluation, best ms so far)] of a run's summary."""
    return [(p["evaluation"], p["best_ms"]) for p in summary["curve"]]


def reached(points, target_ms, scale=1.0):
    """The first evaluation whose best, times `scale`, is within REACHED of `target_ms`; None if none is."""
    for evaluation, best_ms in points:
        if best_ms * scale <= target_ms * (1 + REACHED):
            return evaluation
    return None


def _peer_ms(summary):
    peer = (summary.get("peers") or {}).get(PEER) or {}
    return peer.get("median_ms")


def compare(summaries, reference):
    """{run name: its row} for `summaries` ({name: summary dict}), each judged against run `reference`'s best."""
    if reference not in summaries:
        raise ValueError("--reference %s is not one of the runs (%s)" % (reference, ", ".join(sorted(summaries))))
    tasks = {s["task"]["name"] for s in summaries.values()}
    if len(tasks) != 1:
        raise ValueError("the runs are of several tasks (%s): curves compare runs of one task" % ", ".join(sorted(tasks)))
    ref = summaries[reference]
    ref_best, ref_peer = ref["best"]["median_ms"], _peer_ms(ref)
    ref_at = reached(curve(ref), ref_best)
    out = {}
    for name, s in summaries.items():
        points, peer = curve(s), _peer_ms(s)
        by_peer = reached(points, ref_best / ref_peer, 1.0 / peer) if peer and ref_peer else None
        row = {"run": s["run"], "evaluations": s["evaluations"], "best_ms": s["best"]["median_ms"],
               "best_lineage": s["best"].get("lineage"), "peer_ms": peer,
               "reached_reference": {"absolute": reached(points, ref_best), "against_the_tuned_kernel": by_peer},
               "ranker": s.get("ranker_error"), "curve": [list(p) for p in points]}
        if name != reference:
            row["within_half"] = {k: (v is not None and v <= ref_at / 2) for k, v in row["reached_reference"].items()}
        out[name] = row
    return out, ref_at


def plot(rows, path, task):
    from agent import plots  # noqa: F401  (selects the Agg backend)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, row in rows.items():
        xs = [e for e, _ in row["curve"]]
        ax.step(xs, [b * 1e3 for _, b in row["curve"]], where="post", label=name)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best measured time so far (us)")
    ax.set_yscale("log")
    ax.set_title(task)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pairs(values, flag):
    out = {}
    for v in values or ():
        name, sep, rest = v.partition("=")
        if not sep or not name or not rest:
            raise SystemExit("curves: %s takes NAME=VALUE, got %r" % (flag, v))
        out[name] = rest
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", required=True, help="NAME=path of a run's summary.json")
    ap.add_argument("--reference", required=True, help="the run whose best the others must reach")
    ap.add_argument("--note", action="append", help="NAME=what the run was (its commit, its knowledge)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot")
    args = ap.parse_args(argv)
    paths = _pairs(args.run, "--run")
    summaries = {}
    for name, path in paths.items():
        with open(path) as f:
            summaries[name] = json.load(f)
    try:
        rows, ref_at = compare(summaries, args.reference)
    except ValueError as e:
        raise SystemExit("curves: %s" % e) from None
    for name, note in _pairs(args.note, "--note").items():
        if name not in rows:
            raise SystemExit("curves: --note %s names no run" % name)
        rows[name]["note"] = note
    task = next(iter(summaries.values()))["task"]["name"]
    result = {"task": task, "reference": args.reference, "reference_reached_at": ref_at, "reached_within": REACHED,
              "tuned_peer": PEER, "summaries": {n: os.path.relpath(p) for n, p in paths.items()}, "runs": rows}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    if args.plot:
        plot(rows, args.plot, task)
    for name, row in rows.items():
        print("%s: best %.4f ms after %d evaluations; reached %s's best at %s" % (
            name, row["best_ms"], row["evaluations"], args.reference, row["reached_reference"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
