"""The run's report: report.md with PNG plots, the best IR, its generated CUDA, speedups and what was learned;
summary.json, the run's numbers in the shape benchmarks/results/ keeps for agent runs (task, device
seconds, the seed's, best's and peers' times in ms, the cost model's prediction error over the measured
candidates, the best-so-far curve); and the best kernel itself
beside them, best.cake (its IR text) and best.cu (its generated CUDA), each headed by its lineage: every
candidate from the seed to it, with the move that made it and its fitness."""

import json
import math
import os

from agent import bandit as bandit_mod
from agent import plots
from agent.authors import llm
from agent.genome import Genome
from agent.learn import live_ranker, ranker
from agent.progress import failures_text


def _us(seconds):
    return "-" if seconds is None else "%.3f us" % (seconds * 1e6)


def ancestry(store, row):
    """The candidates from the seed to `row`, oldest first."""
    rows = []
    while row is not None:
        rows.append(row)
        row = store.candidate(row["parent_id"]) if row["parent_id"] is not None else None
    return list(reversed(rows))


def lineage(store, row):
    """The tactics from the seed to `row`, oldest first."""
    return [r["tactic"] for r in ancestry(store, row)]


BEST_FILES = {"cake": "best.cake", "cu": "best.cu"}


def _lineage_lines(store, best, what):
    out = ["best kernel of CAKE agent run %s (%s time %s)" % (store.run()["id"], what, _us(best["fitness_s"])),
           "genome: %s" % (Genome.from_json(best["genome"]).describe() if best["genome"] else
                           "none (IR written by %s)" % best["author"]),
           "lineage (candidate, move, author, %s time):" % what]
    out += ["  #%d %s (%s) %s" % (r["id"], r["tactic"], r["author"], _us(r["fitness_s"])) for r in ancestry(store, best)]
    return out


def write_best(run_dir, store, best, cuda, what):
    """best.cake (the IR text) and, when it compiled, best.cu (its CUDA) in run_dir, each headed by its lineage;
    the names written."""
    header = _lineage_lines(store, best, what)
    written = {}
    with open(os.path.join(run_dir, BEST_FILES["cake"]), "w") as f:
        f.write("".join("# %s\n" % line for line in header) + best["ir_text"])
    written["cake"] = BEST_FILES["cake"]
    if cuda:
        with open(os.path.join(run_dir, BEST_FILES["cu"]), "w") as f:
            f.write("".join("// %s\n" % line for line in header) + cuda)
        written["cu"] = BEST_FILES["cu"]
    return written


def _evaluation_order(store):
    rows = store.db.execute("SELECT fitness_s FROM candidates WHERE fitness_s IS NOT NULL ORDER BY finished_at, id")
    return [r[0] for r in rows]


def _ms(seconds):
    return None if seconds is None else round(seconds * 1e3, 6)


def summary(store, task, mode_line, stop_reason, files=None):
    """The run's numbers: what summary.json holds (times in ms; `fitness` says predicted or measured; `files`:
    the best kernel's files beside it, as write_best returns them)."""
    run = store.run()
    seed, best = store.first(), (store.ranked(limit=1) or [None])[0]
    rows = store.db.execute(
        "SELECT c.id, c.fitness_s, m.device_s FROM candidates c LEFT JOIN measurements m ON m.candidate_id = c.id"
        " WHERE c.fitness_s IS NOT NULL ORDER BY c.finished_at, c.id")
    curve, device_s, best_s = [], 0.0, None
    for i, (cid, fitness_s, spent) in enumerate(rows, 1):
        device_s += spent or 0.0
        best_s = fitness_s if best_s is None else min(best_s, fitness_s)
        curve.append({"evaluation": i, "candidate": cid, "device_s": round(device_s, 3), "best_ms": _ms(best_s)})
    measured = run["mode"] == "measure"
    return {
        "run": run["id"], "task": task.to_json(), "mode": run["mode"], "mode_line": mode_line,
        "fitness": "measured median" if measured else "predicted", "stopped": stop_reason,
        "candidates": store.count("candidates"), "evaluations": len(curve),
        "device_s": round(float(store.meta("device_s", 0.0)), 3), "search_s": round(store.meta("elapsed_s", 0.0), 3),
        "seed": {"candidate": seed["id"], "median_ms": _ms(seed["fitness_s"])} if seed else None,
        "best": {"candidate": best["id"], "median_ms": _ms(best["fitness_s"]), "lineage": lineage(store, best),
                 "files": dict(files or {})} if best else None,
        "peers": {name: {"median_ms": _ms(p["median_s"]) if measured else None, "detail": json.loads(p["detail"])}
                  for name, p in sorted(store.peers().items())},
        "prediction_error": prediction_error(store.predicted_and_measured()),
        "ranker_error": live_ranker.error(store),
        "llm_usage": store.meta(llm.USAGE),
        "curve": curve,
    }


def prediction_error(pairs):
    """How well the analytic predictions ranked and sized the measured candidates: {"measured", "spearman",
    "median_abs_log_error", "distinct_predictions"} over (id, predicted s, measured s) `pairs`; None when empty."""
    pairs = [(p, m) for _, p, m in pairs if p and m and p > 0 and m > 0]
    if not pairs:
        return None
    errors = sorted(abs(math.log(p / m)) for p, m in pairs)
    return {"measured": len(pairs), "spearman": ranker.spearman([p for p, _ in pairs], [m for _, m in pairs]),
            "median_abs_log_error": errors[len(errors) // 2], "distinct_predictions": len({p for p, _ in pairs})}


def llm_usage_text(u):
    """One line of what the LLM author's calls used (authors/llm.record_usage's totals)."""
    tokens = "%d prompt + %d completion tokens" % (u["prompt_tokens"], u["completion_tokens"])
    if u["unreported_calls"]:
        tokens += " (%d calls reported none)" % u["unreported_calls"]
    cost = "$%.4f" % u["cost_usd"] if u["cost_usd"] is not None else "cost unknown (no CAKE_LLM_USD_PER_MTOK_IN/_OUT)"
    return "%s: %d calls, %d samples, %s, %s" % (u["model"], u["calls"], u["samples"], tokens, cost)


def _rho(value):
    return "-" if value is None else "%.3f" % value


def _tactic_table(bandit):
    names = sorted(set(bandit.priors) | set(bandit.stats))
    probs = bandit.probabilities([n for n in names if n in bandit.priors])
    lines = ["| tactic | outcomes | mean reward | prior weight | choice probability now |", "|---|---|---|---|---|"]
    for n in sorted(names, key=lambda n: -bandit.stats.get(n, (0, 0))[0]):
        count, total = bandit.stats.get(n, (0, 0.0))
        lines.append("| %s | %d | %+.3f | %s | %s |" % (
            n, count, total / count if count else 0.0, bandit.priors.get(n, "-"),
            "%.3f" % probs[n] if n in probs else "-"))
    return "\n".join(lines)


def write(run_dir, store, task, mode_line, stop_reason, bandit, cuda=None, cuda_note="", peers_note=""):
    """Write report.md (and its plots) and summary.json into run_dir; returns report.md's path."""
    run = store.run()
    seed, best = store.first(), (store.ranked(limit=1) or [None])[0]
    measured = run["mode"] == "measure"
    what = "measured" if measured else "predicted"
    fitness = _evaluation_order(store)
    images = []
    if fitness:
        plots.best_so_far(fitness, os.path.join(run_dir, "best_so_far.png"), what)
        images.append("![best so far against evaluations](best_so_far.png)")
    pairs = store.predicted_and_measured()
    if pairs:
        plots.predicted_vs_measured(pairs, os.path.join(run_dir, "predicted_vs_measured.png"))
        images.append("![predicted against measured time](predicted_vs_measured.png)")
        err = prediction_error(pairs)
        if err:
            images.append("Cost model against the %d measured candidates: Spearman %s, median |log(predicted / "
                          "measured)| %.3f, %d distinct predictions." % (
                              err["measured"], "%.3f" % err["spearman"] if err["spearman"] is not None else "-",
                              err["median_abs_log_error"], err["distinct_predictions"]))
        learned = live_ranker.error(store)
        if learned:
            images.append("Learned ranker (refit %d times as the run measured) against the %d candidates it scored "
                          "before they were measured: Spearman %s; the cost model on the same candidates: %s." % (
                              learned["fits"], learned["measured"], _rho(learned["spearman"]),
                              _rho(learned["analytic_spearman"])))
    else:
        images.append("No predicted-against-measured plot: nothing was measured (%s)." % mode_line)

    lines = ["# CAKE agent run `%s`" % run["id"], "", mode_line, ""]
    lines += ["| | |", "|---|---|",
              "| task | `%s`: %s, shapes %s, target %s, cost-model device %s |" % (
                  task.name, task.family, json.dumps(task.shapes), task.target, task.device),
              "| stopped | %s |" % stop_reason,
              "| candidates | %d (%d with a fitness) |" % (store.count("candidates"), len(fitness)),
              "| search time | %.0f s |" % store.meta("elapsed_s", 0.0)]
    if measured:
        lines.append("| device time | %.1f s |" % float(store.meta("device_s", 0.0)))
    usage = store.meta(llm.USAGE)
    if usage:
        lines.append("| LLM author | %s |" % llm_usage_text(usage))
    lines += ["", "## Result", ""]
    if best is None:
        lines.append("No candidate got a fitness.")
    else:
        seed_s = seed["fitness_s"]
        lines += ["| kernel | %s time | speedup over the seed |" % what, "|---|---|---|",
                  "| seed (#%d) | %s | 1.000x |" % (seed["id"], _us(seed_s)),
                  "| best (#%d) | %s | %s |" % (best["id"], _us(best["fitness_s"]),
                                               "%.3fx" % (seed_s / best["fitness_s"]) if seed_s else "-")]
        lines.append("")
        peers = store.peers()
        if peers:
            lines += ["| peer | measured time | best's speedup over it |", "|---|---|---|"]
            for name, p in sorted(peers.items()):
                lines.append("| %s | %s | %s |" % (name, _us(p["median_s"]), "%.3fx" % (p["median_s"] / best["fitness_s"])
                                                   if p["median_s"] and measured else "not measured"))
        else:
            lines.append(peers_note or "Peers were not measured.")
        lines += ["", "Best candidate: %s" % (Genome.from_json(best["genome"]).describe() if best["genome"]
                                              else "IR written by %s" % best["author"]),
                  "", "Lineage: %s" % " -> ".join(lineage(store, best))]
    lines += ["", "## Progress", ""] + images
    lines += ["", "## Failures by class", "", failures_text(store.failure_counts(), limit=100)]
    lines += ["", "## Tactics", "", "Rewards: a valid child earns its log speedup over its parent x%g (clipped to"
              " [-1, 1]); invalid %g, failed %g, duplicate %g, pruned %g." % (
                  bandit_mod.SPEEDUP_SCALE, bandit_mod.INVALID, bandit_mod.FAILED, bandit_mod.DUPLICATE,
                  bandit_mod.PRUNED), "", _tactic_table(bandit)]
    proposals = store.proposals()
    lines += ["", "## Learning (the outer loop)", ""]
    if proposals:
        lines += ["| kind | signature | status | knowledge version | gate |", "|---|---|---|---|---|"]
        for p in proposals:
            lines.append("| %s | `%s` | %s | %s | %s |" % (p["kind"], p["signature"][:80], p["status"],
                                                          p["knowledge_version"] or "-", json.loads(p["gate"]).get("why", "")))
    else:
        lines.append("No proposals this run.")
    files = {}
    if best is not None:
        files = write_best(run_dir, store, best, cuda, what)
        lines += ["", "## Best IR", "", "Beside this report: %s (with its lineage)." % " and ".join(
            "`%s`" % files[k] for k in ("cake", "cu") if k in files), "", "```", best["ir_text"].rstrip(), "```"]
        lines += ["", "## Generated CUDA", ""]
        lines += ["```cuda", cuda.rstrip(), "```"] if cuda else [cuda_note or "Not compiled."]
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(summary(store, task, mode_line, stop_reason, files), f, indent=1, default=str)
        f.write("\n")
    path = os.path.join(run_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
