"""Tactic-weight proposals: the bandit's outcomes across runs become new prior weights.

Outcomes (tactic_stats of runs whose evidence tactics.json has not used yet) are
summed per tactic; a tactic with enough outcomes gets weight prior x exp(mean reward),
at most doubled or halved per update and kept within the gate's bounds. The runs
used are listed in tactics.json (`learned_from`), so no evidence counts twice.
"""

import math

from agent.learn import gate

STEP = 2.0  # largest factor one update may change a weight by


def propose(tactics_doc, runs_stats):
    """(changes tactic -> (old, new), outcomes tactic -> n, runs used) from {run id: {tactic: [n, sum]}}."""
    used = set(tactics_doc.get("learned_from", []))
    fresh = {run: stats for run, stats in runs_stats.items() if run not in used}
    totals = {}
    for stats in fresh.values():
        for tactic, (n, total) in stats.items():
            t = totals.setdefault(tactic, [0, 0.0])
            t[0] += n
            t[1] += total
    priors = {t["name"]: t["weight"] for t in tactics_doc["tactics"]}
    derived = tactics_doc.get("param_weights", {})
    changes, outcomes = {}, {}
    for tactic, (n, total) in totals.items():
        if n < gate.MIN_OUTCOMES or not _tactic_name(tactic):
            continue
        old = priors.get(tactic, derived.get(tactic, 1.0))
        factor = min(STEP, max(1 / STEP, math.exp(total / n)))
        new = round(min(gate.WEIGHT_BOUNDS[1], max(gate.WEIGHT_BOUNDS[0], old * factor)), 4)
        if abs(new - old) >= 0.1 * old:
            changes[tactic] = (old, new)
            outcomes[tactic] = n
    return changes, outcomes, sorted(fresh)


def _tactic_name(name):
    """Whether outcomes under `name` belong to a tactic (repairs, the LLM and seeds are credited under others)."""
    return ":" not in name and name not in ("llm", "seed")


def patch(changes, runs, tactics_doc):
    """The knowledge patch of tactics.json (learn/knowledge.apply_patch) setting the new weights (listed tactics'
    in the list, derived parameter tactics' in param_weights) and recording the runs as used."""
    listed = {t["name"] for t in tactics_doc["tactics"]}
    out = {"fields": {"tactics": {t: {"weight": new} for t, (_, new) in sorted(changes.items()) if t in listed}},
           "append": {"learned_from": sorted(runs)}}
    derived = {t: new for t, (_, new) in sorted(changes.items()) if t not in listed}
    if derived:
        out["update"] = {"param_weights": derived}
    return out
