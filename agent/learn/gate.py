"""The corpus gate: a proposal takes effect only if it keeps the good good and catches what it targets.

- A verifier rule passes when it loads (the service's checks: ListRules with it), every
  known-good program still verifies without its error (the compiler's good corpus,
  compiler/corpus, and any further good kernels given: passing candidates), every
  program it targets (the failing candidates' IR) is now rejected by it, and the
  programs earlier learned rules target are still rejected by them. The compiler is
  asked through the agent's compiler port.
- A recalibration passes when its error on held-out measurements is lower than the
  current calibration's by at least MIN_GAIN (relative).
- Tactic weights pass when every changed weight rests on enough outcomes and stays
  within bounds.
- A repair order passes when each new list holds exactly the listed tactics and rests on
  enough trials (learn/repair_order.py).
- A macro-tactic passes when, replayed (learn/macros.replay: seeded cost-model runs of
  its task with and without it), the runs with it reach each seed's best without it in
  at most MACRO_FRACTION of the evaluations that took (median over seeds), and no seed
  ends worse with it.
Each gate returns a Verdict: accepted, why (one line) and details for the record.
"""

import dataclasses
import math
import statistics

from agent.compiler_port import Refused

MIN_GAIN = 0.02
MACRO_FRACTION = 0.8
MACRO_TOLERANCE = 0.005  # "reached": within 0.5% of the time
MIN_OUTCOMES = 8
WEIGHT_BOUNDS = (0.05, 5.0)


@dataclasses.dataclass(frozen=True)
class Verdict:
    accepted: bool
    why: str
    details: dict = dataclasses.field(default_factory=dict)

    def to_dict(self):
        return dataclasses.asdict(self)


def good_corpus():
    """(name, kernel) of every program of the compiler's good corpus."""
    from compiler.corpus import corpus

    return [(name, corpus.build(name)) for name in corpus.GOOD]


def _fires(port, rules, rule_id, kernel):
    return any(d.id == rule_id for d in port.verify(kernel, extra_rules=rules))


def gate_rule(port, rule, known_rules, targets, good=(), earlier_targets=()):
    """Gate a new rule object through `port` (a compiler port). targets: (name, kernel) it must reject; good:
    extra (name, kernel) it must not; known_rules: the rule objects already learned; earlier_targets: rule id ->
    [(name, kernel)]."""
    loaded = list(known_rules) + [rule]
    try:
        port.rules(loaded)
    except Refused as e:
        return Verdict(False, "malformed rule: %s" % e)
    new = [rule]
    checked = good_corpus() + list(good)
    rejected_good = [name for name, k in checked if _fires(port, new, rule["id"], k)]
    if rejected_good:
        return Verdict(False, "rejects %d known-good program(s): %s" % (len(rejected_good), ", ".join(rejected_good[:5])),
                       {"rejected_good": rejected_good})
    missed = [name for name, k in targets if not _fires(port, new, rule["id"], k)]
    if missed or not targets:
        return Verdict(False, "does not reject %d of the %d programs it targets" % (len(missed), len(targets)),
                       {"missed": missed})
    lapsed = [(rid, name) for rid, kernels in earlier_targets.items() for name, k in kernels
              if not _fires(port, loaded, rid, k)] if earlier_targets else []
    if lapsed:
        return Verdict(False, "earlier learned rules no longer reject their targets: %s" % lapsed[:3])
    return Verdict(True, "rejects its %d targets, keeps %d known-good programs clean" % (len(targets), len(checked)),
                   {"targets": [n for n, _ in targets], "good_checked": len(checked)})


def gate_calibration(before_error, after_error):
    if not math.isfinite(after_error) or after_error >= before_error * (1 - MIN_GAIN):
        return Verdict(False, "held-out error %.4f -> %.4f: not lower by %d%%" % (before_error, after_error,
                                                                                 MIN_GAIN * 100),
                       {"before": before_error, "after": after_error})
    return Verdict(True, "held-out error %.4f -> %.4f" % (before_error, after_error),
                   {"before": before_error, "after": after_error})


def gate_weights(changes, outcomes):
    """changes: tactic -> (old, new) weight; outcomes: tactic -> number of outcomes behind the change."""
    if not changes:
        return Verdict(False, "no weight changes")
    thin = [t for t in changes if outcomes.get(t, 0) < MIN_OUTCOMES]
    wild = [t for t, (_, new) in changes.items() if not (math.isfinite(new) and
                                                         WEIGHT_BOUNDS[0] <= new <= WEIGHT_BOUNDS[1])]
    if thin or wild:
        return Verdict(False, "changes without %d outcomes each (%s) or out of bounds (%s)" % (
            MIN_OUTCOMES, ", ".join(thin[:5]) or "-", ", ".join(wild[:5]) or "-"))
    return Verdict(True, "%d weights from %d outcomes" % (len(changes), sum(outcomes[t] for t in changes)),
                   {"changes": {t: list(v) for t, v in changes.items()}})


def _reached(curve, target):
    """Evaluations a best-so-far curve takes to come within MACRO_TOLERANCE of `target` (inf: never)."""
    return next((i + 1 for i, v in enumerate(curve) if v <= target * (1 + MACRO_TOLERANCE)), math.inf)


def gate_repair_order(changes):
    """changes: {diagnostic id: (old tactics, new tactics, {tactic: [successes, trials]})}. A new order passes when
    it holds exactly the old list's tactics and rests on MIN_OUTCOMES trials of at least one of them."""
    if not changes:
        return Verdict(False, "no repair order changes")
    bad = sorted(d for d, (old, new, _) in changes.items() if sorted(old) != sorted(new) or len(new) != len(old))
    if bad:
        return Verdict(False, "the new order of %s is not a reordering of its listed tactics" % ", ".join(bad))
    thin = sorted(d for d, (_, _, counts) in changes.items() if max(n for _, n in counts.values()) < MIN_OUTCOMES)
    if thin:
        return Verdict(False, "fewer than %d trials of any tactic of %s" % (MIN_OUTCOMES, ", ".join(thin)))
    details = {d: {"old": old, "new": new, "trials": counts} for d, (old, new, counts) in changes.items()}
    return Verdict(True, "%d repair lists reordered by their tactics' success" % len(changes), details)


def gate_macro(without, with_macro):
    """without, with_macro: best-so-far curves per seed (same seeds, same evaluation budget)."""
    if not without or len(without) != len(with_macro) or not all(without) or not all(with_macro):
        return Verdict(False, "no replay to judge")
    base = [_reached(c, c[-1]) for c in without]
    new = [_reached(m, c[-1]) for c, m in zip(without, with_macro)]
    worse = [i for i, (c, m) in enumerate(zip(without, with_macro)) if m[-1] > c[-1] * (1 + MACRO_TOLERANCE)]
    details = {"evaluations_without": base, "evaluations_with": [n if math.isfinite(n) else None for n in new],
               "best_without_s": [c[-1] for c in without], "best_with_s": [m[-1] for m in with_macro]}
    if worse:
        return Verdict(False, "ends worse on %d of %d replayed seeds" % (len(worse), len(without)), details)
    b, n = statistics.median(base), statistics.median(new)
    if not n <= MACRO_FRACTION * b:
        return Verdict(False, "reaches the best without it in %s of %s evaluations (median): not within %d%%"
                       % (n, b, MACRO_FRACTION * 100), details)
    return Verdict(True, "reaches the best without it in %s of %s evaluations (median over %d seeds)"
                   % (n, b, len(without)), details)
