"""The protocol model's findings do not depend on the order it runs concurrent thread classes in: under random
schedules every corpus program (good, known-good neighbour, known-bad) gets the violation of the default schedule
(the same kind at the same op), or none when that finds none."""

import glob
import os
import random

import pytest

from compiler.ir.text import parse_kernel
from compiler.verify.context import Context
from compiler.verify.protocol import simulate

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
PROGRAMS = sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", "*", "*.cake")))
SEEDS = int(os.environ.get("CAKE_SCHEDULE_SEEDS", "2"))


def _kernel(path):
    with open(path) as f:
        return parse_kernel(f.read(), os.path.basename(path)).kernel


def _finding(result):
    v = result.violation
    return (v.kind, v.path) if v is not None else None


class _Greedy(random.Random):
    """A schedule that mostly runs the most advanced class on (a producer far ahead of its consumers)."""

    def choice(self, seq):
        if self.random() < 0.8:
            return max(seq, key=lambda r: (r.count, -r.index))
        return super().choice(seq)


class _Recording(random.Random):
    """A random schedule that remembers the classes it chose."""

    def __init__(self, seed):
        super().__init__(seed)
        self.chosen = []

    def choice(self, seq):
        pick = super().choice(seq)
        self.chosen.append(pick.index)
        return pick


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: "/".join(p.split(os.sep)[-2:])[: -len(".cake")])
def test_random_schedules_find_what_the_default_finds(path):
    kernel = _kernel(path)
    want = _finding(simulate.run(Context(kernel)))
    for seed in range(SEEDS):
        for chooser in (random.Random(seed), _Greedy(seed)):
            assert _finding(simulate.run(Context(kernel), chooser)) == want, "%s seed %d" % (type(chooser).__name__, seed)


def test_random_schedules_differ_from_each_other():
    kernel = _kernel(os.path.join(ROOT, "compiler", "corpus", "good", "gemm_sm90a.cake"))
    orders = set()
    for seed in range(4):
        chooser = _Recording(seed)
        assert simulate.run(Context(kernel), chooser).violation is None
        orders.add(tuple(chooser.chosen))
    assert len(orders) == 4
