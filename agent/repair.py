"""Repair moves: diagnostics and their fix hints -> the tactics to try on the rejected candidate.

The map is data (knowledge/repairs.json): by diagnostic id first, then by words of
the message or fix hint for ids it does not list (analysis errors, learned rules).
Only error diagnostics ask for repair; the tactics come back in order, each once.
"""

from cake.compiler.v1 import diagnostics_pb2

from agent import tactics as tactics_mod
from agent.ir_edit import NotApplicable
from agent.learn import knowledge


class RepairMap:
    def __init__(self, data):
        self.by_id = {k: list(v) for k, v in data.get("by_id", {}).items()}
        self.by_text = [(tuple(w.lower() for w in e["words"]), list(e["tactics"])) for e in data.get("by_text", [])]

    @classmethod
    def load(cls, source):
        """From repairs.json of `source` (a Knowledge or a directory)."""
        return cls(knowledge.of(source).load(knowledge.REPAIRS))

    def tactics(self, diagnostics):
        """Tactic names addressing the error diagnostics, most specific first, without repeats."""
        out = []
        for d in diagnostics:
            if d.severity != diagnostics_pb2.SEVERITY_ERROR:
                continue
            names = self.by_id.get(d.id)
            if names is None:
                text = (d.message + " " + d.fix_hint).lower()
                names = [t for words, tactics in self.by_text if all(w in text for w in words) for t in tactics]
            out += [n for n in names if n not in out]
        return out


def children(repairs, tactics, subject, errors, fixed, rng):
    """(tactic name, child) for each repair tactic the errors call for that applies to `subject`, in order."""
    for name in repairs.tactics(errors):
        tactic = tactics.get(name)
        if tactic is None:
            continue
        try:
            yield name, tactics_mod.apply(tactic, subject, fixed, rng)
        except NotApplicable:
            continue
