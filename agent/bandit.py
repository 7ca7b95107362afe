"""Tactic choice: a softmax bandit over running mean rewards, scaled by each tactic's prior weight.

    p(t) ~ prior(t) * exp(mean(t) / temperature),  mean(t) = sum of rewards / (n + PSEUDO)

(PSEUDO pseudo-outcomes of reward 0 keep an untried tactic near its prior), mixed
with `explore` of uniform choice. Rewards lie in [-1, 1]: a valid child earns the
log of its speedup over its parent scaled so that 5% is the full point; invalid,
failed, duplicate and pruned children earn fixed penalties. The counts live in the
run's database (tactic_stats), so a resumed run continues with the same beliefs,
and the outer loop turns them into new prior weights (agent/learn/weights.py).
"""

import fractions
import math

PSEUDO = 2.0
INVALID = -0.5  # the verifier, the analysis or the build rejected it
FAILED = -1.0  # the oracle rejected it, or it faulted or hung: the costliest outcome
DUPLICATE = -0.2  # the move led to a kernel already seen
PRUNED = -0.1  # the cost model ranked it out before measurement
SPEEDUP_SCALE = 20.0  # log-speedup of 0.05 earns the full reward


def improvement(parent_s, child_s):
    """Reward of a valid child: scaled log speedup over its parent, clipped to [-1, 1]."""
    if not parent_s or not child_s or parent_s <= 0 or child_s <= 0:
        return 0.0
    return max(-1.0, min(1.0, SPEEDUP_SCALE * math.log(parent_s / child_s)))


class Bandit:
    """Beliefs about tactics: priors (weights) and outcome statistics (n, reward sum)."""

    def __init__(self, priors, stats=None, temperature=0.5, explore=0.1):
        self.priors = dict(priors)
        self.stats = {name: list(v) for name, v in (stats or {}).items()}
        # Sums kept exactly, so beliefs do not depend on the order outcomes arrive in (the pipelined loop
        # credits measurements later than the serial loop would, and must still decide the same way).
        self._exact = {name: fractions.Fraction(v[1]) for name, v in self.stats.items()}
        self.temperature = temperature
        self.explore = explore

    def mean(self, name):
        n, total = self.stats.get(name, (0, 0.0))
        return total / (n + PSEUDO)

    def score(self, name):
        return math.log(self.priors.get(name, 1.0)) + self.mean(name) / self.temperature

    def probabilities(self, names, scores=None):
        """name -> probability of choosing it among `names` (`scores`: their scores, when already known)."""
        names = list(names)
        if not names:
            return {}
        scores = [self.score(n) for n in names] if scores is None else [scores[n] for n in names]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        uniform = 1.0 / len(names)
        return {n: (1 - self.explore) * w / total + self.explore * uniform for n, w in zip(names, weights)}

    def order(self, names, rng):
        """`names` in the order to try them: drawn one by one without replacement by probability."""
        left, out = list(names), []
        scores = {n: self.score(n) for n in left}  # once: they do not change while drawing
        while left:
            probs = self.probabilities(left, scores)
            pick, acc, x = left[-1], 0.0, rng.random()
            for n in left:
                acc += probs[n]
                if x < acc:
                    pick = n
                    break
            out.append(pick)
            left.remove(pick)
        return out

    def update(self, name, reward):
        n, _ = self.stats.get(name, (0, 0.0))
        total = self._exact[name] = self._exact.get(name, 0) + fractions.Fraction(reward)
        self.stats[name] = [n + 1, float(total)]
