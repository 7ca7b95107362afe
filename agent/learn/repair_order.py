"""Learned repair order: which repair tactic fixes which diagnostic, from every run's repaired candidates.

A rejected candidate gets at most loop.Settings.repairs_per_failure repair children: the first tactics of
repairs.json's list for its error diagnostics that apply to it. So the order of a list decides what is
tried at all, and a tactic early in it that rarely fixes the error spends the repairs. Evidence, from every
run database (cost-model and measured runs alike: whether a repair passes is the compiler's verdict, not a
time): each child `repair:T` of a candidate rejected with error diagnostic `d`, where the map lists T for d,
is a trial of (d, T), and a success when the child passed the compiler's checks (any status but invalid or
failed). A listed order is replaced by the tactics sorted by their smoothed success rate (s + 1) / (n + 2),
so an untried tactic ranks as an even chance, ahead of one that keeps failing, and ties keep the listed
order. A diagnostic's list changes only when some tactic in it has MIN_TRIALS trials; the gate
(learn/gate.gate_repair_order) checks that each new list holds exactly the old tactics.
"""

import collections
import sqlite3

from agent.learn import gate
from agent.store import REJECTED

MIN_TRIALS = gate.MIN_OUTCOMES
PREFIX = "repair:"


def outcomes(paths, by_id):
    """{diagnostic id: {tactic: [successes, trials]}} over the run databases at `paths`, for the tactics the
    map `by_id` (repairs.json's) lists for each id."""
    out = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for path in paths:
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        try:
            rows = db.execute("SELECT c.tactic, c.status, d.diag_id FROM candidates c JOIN diagnostics d "
                              "ON d.candidate_id = c.parent_id WHERE c.tactic LIKE ? AND d.severity = 'error' "
                              "GROUP BY c.id, d.diag_id", (PREFIX + "%",)).fetchall()
        finally:
            db.close()
        for tactic, status, diag in rows:
            name = tactic[len(PREFIX):]
            if name in by_id.get(diag, ()) and status != "pending":  # pending: never assessed
                cell = out[diag][name]
                cell[0] += status not in REJECTED
                cell[1] += 1
    return out


def _rate(cell):
    s, n = cell
    return (s + 1.0) / (n + 2.0)


def propose(by_id, evidence):
    """{diagnostic id: (old list, new list, {tactic: [successes, trials]})} for the lists whose order the
    evidence changes."""
    out = {}
    for diag, listed in sorted(by_id.items()):
        seen = evidence.get(diag, {})
        if not any(seen.get(t, [0, 0])[1] >= MIN_TRIALS for t in listed):
            continue
        order = sorted(listed, key=lambda t: (-_rate(seen.get(t, [0, 0])), listed.index(t)))
        if order != listed:
            out[diag] = (list(listed), order, {t: list(seen.get(t, [0, 0])) for t in listed})
    return out


def describe(changes):
    """One line per changed list: the diagnostic, the new order with each tactic's successes/trials."""
    return ["%s: %s" % (diag, ", ".join("%s %d/%d" % (t, *counts[t]) for t in new))
            for diag, (_, new, counts) in sorted(changes.items())]
