"""The bandit: priors shape the first choices, outcomes move them, and rewards are bounded."""

import math
import random

from agent import bandit


def test_probabilities_sum_to_one_and_follow_the_priors():
    b = bandit.Bandit({"a": 4.0, "b": 1.0}, explore=0.0)
    p = b.probabilities(["a", "b"])
    assert math.isclose(sum(p.values()), 1.0)
    assert math.isclose(p["a"], 0.8)


def test_outcomes_shift_the_choice():
    b = bandit.Bandit({"a": 1.0, "b": 1.0})
    for _ in range(10):
        b.update("a", 1.0)
        b.update("b", bandit.INVALID)
    p = b.probabilities(["a", "b"])
    assert p["a"] > 0.85 and p["b"] >= b.explore / 2  # exploration keeps b possible


def test_order_is_a_permutation_led_by_the_likely():
    b = bandit.Bandit({"a": 100.0, "b": 1.0, "c": 1.0}, explore=0.0)
    firsts = [b.order(["a", "b", "c"], random.Random(i))[0] for i in range(50)]
    assert firsts.count("a") > 40
    assert sorted(b.order(["a", "b", "c"], random.Random(1))) == ["a", "b", "c"]


def test_improvement_is_a_clipped_log_speedup():
    assert bandit.improvement(1.0, 1.0) == 0.0
    assert math.isclose(bandit.improvement(1.0, 1 / 1.01), bandit.SPEEDUP_SCALE * math.log(1.01))
    assert bandit.improvement(1.0, 0.5) == 1.0 and bandit.improvement(0.5, 1.0) == -1.0
    assert bandit.improvement(None, 1.0) == 0.0
