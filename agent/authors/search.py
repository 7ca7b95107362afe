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
        subject = tactics_mod.Subject(parent.kernel, parent.genome)
        for name in self.bandit.order(sorted(self.tactics), ctx.rng):
            try:
                child = tactics_mod.apply(self.tactics[name], subject, self.fixed, ctx.rng)
            except NotApplicable:
                continue
            if not ctx.is_new(child.kernel):
                continue
            return [Proposal(child.kernel, child.genome, name, self.name)]
        return []
