"""The built-in author: applies the tactic the bandit draws, falling back to the next until one makes a new kernel.

A move that leads to a kernel already seen is skipped without penalty: it says the
neighbourhood is explored, not that the tactic is bad.
"""

from agent import tactics as tactics_mod
from agent.authors.base import Proposal
from agent.ir_edit import NotApplicable


class SearchAuthor:
    name = "search"

    def __init__(self, tactics, bandit, fixed):
        self.tactics = tactics
        self.bandit = bandit
        self.fixed = fixed

    def propose(self, parent, ctx):
        order = self.bandit.order(sorted(self.tactics), ctx.rng)
        subject = tactics_mod.Subject(parent.kernel, parent.genome)
        for _, name, child in applicable(self.tactics, order, subject, self.fixed, ctx.rng):
            if ctx.is_new(child.kernel):
                return [Proposal(child.kernel, child.genome, name, self.name)]
        return []


def applicable(tactics, order, subject, fixed, rng):
    """(position in `order`, tactic name, child) for each tactic of `order` that applies to `subject`, in turn.

    The one walk of the tactic order: the serial author filters it in place, the
    executors' workers return its first child and resume after it when that one
    turns out known (agent/executors/work.py), with the same `rng` draws either way.
    """
    for pos, name in enumerate(order):
        try:
            child = tactics_mod.apply(tactics[name], subject, fixed, rng)
        except NotApplicable:
            continue
        yield pos, name, child
