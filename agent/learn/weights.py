"""Tactic-weight proposals: the bandit's outcomes across runs become new prior weights, per context.

A context is a seed family and a mode ("kmeans_assign_naive/measure"): rewards from the
cost model's predictions and from GPU times, or from kernels of different families, say
different things about a tactic, so each context learns its own priors. Outcomes
(tactic_stats of runs whose evidence tactics.json has not used yet) are summed per
context and tactic; a tactic with enough outcomes gets weight prior x exp(mean reward),
at most doubled or halved per update and kept within the gate's bounds, where the prior
is the context's learned weight, else the tactic's listed weight. The new weights go to
tactics.json's `context_weights[context]` (agent/tactics.load applies them for a run of
that family and mode); the runs used are listed in `learned_from`, so no evidence
counts twice.
"""

import collections
import math

from agent.learn import gate, knowledge

STEP = 2.0  # largest factor one update may change a weight by


def context(task, mode):
    """The context key of a run of `task` (its JSON object) in `mode`."""
    return knowledge.context_key(task.get("family") or task.get("name", "?"), mode)


def propose(tactics_doc, runs):
    """[(context, changes tactic -> (old, new), outcomes tactic -> n, runs used)] from
    {run id: (context, {tactic: [n, sum]})}, one item per context with a change."""
    used = set(tactics_doc.get("learned_from", []))
    by_context = collections.defaultdict(dict)
    for run, (ctx, stats) in runs.items():
        if run not in used:
            by_context[ctx][run] = stats
    priors = {t["name"]: t["weight"] for t in tactics_doc["tactics"]}
    priors.update(tactics_doc.get("param_weights", {}))
    out = []
    for ctx, fresh in sorted(by_context.items()):
        learned = tactics_doc.get("context_weights", {}).get(ctx, {})
        totals = {}
        for stats in fresh.values():
            for tactic, (n, total) in stats.items():
                t = totals.setdefault(tactic, [0, 0.0])
                t[0] += n
                t[1] += total
        changes, outcomes = {}, {}
        for tactic, (n, total) in totals.items():
            if n < gate.MIN_OUTCOMES or not _tactic_name(tactic):
                continue
            old = learned.get(tactic, priors.get(tactic, 1.0))
            factor = min(STEP, max(1 / STEP, math.exp(total / n)))
            new = round(min(gate.WEIGHT_BOUNDS[1], max(gate.WEIGHT_BOUNDS[0], old * factor)), 4)
            if abs(new - old) >= 0.1 * old:
                changes[tactic] = (old, new)
                outcomes[tactic] = n
        if changes:
            out.append((ctx, changes, outcomes, sorted(fresh)))
    return out


def _tactic_name(name):
    """Whether outcomes under `name` belong to a tactic (repairs, the LLM and seeds are credited under others)."""
    return ":" not in name and name not in ("llm", "seed")


def patch(ctx, changes, runs, tactics_doc):
    """The knowledge patch of tactics.json (learn/knowledge.apply_patch) setting the context's new weights and
    recording the runs as used."""
    merged = dict(tactics_doc.get("context_weights", {}).get(ctx, {}))
    merged.update({t: new for t, (_, new) in sorted(changes.items())})
    return {"update": {"context_weights": {ctx: dict(sorted(merged.items()))}}, "append": {"learned_from": sorted(runs)}}
