"""The learned ranker inside a measured run: which analyzed candidates are measured, refit as measurements arrive.

The analytic cost model gives many structurally different candidates the same
prediction, so a generation's measurements go to whichever of them come first. Here
the ranker (ranker.py: trees over the compiler's features, trained on measured times)
orders them instead, once it has rows to learn from:
- the rows the knowledge lists (agent/knowledge/ranker.json: datasets of measured
  candidates, exported by dataset.py from earlier runs: the committed H200 runs of
  benchmarks/datasets/, and every measured run since, which `remember` adds as a
  learned version of the file) for the run's task measured on the run's device;
- every candidate this run has measured, so the run's own measurements compound.
It is refit whenever the run has measured more since the last fit: each generation's
decision is made with everything measured before it. Below ranker.MIN_ROWS rows there
is no ranker and the analytic prediction orders the candidates, as before; it stays
the fallback. Every score given before a candidate was measured is kept in the
store (meta `ranker`), so the report can say how well the ranker chose, beside the
analytic model (`error`).
"""

import json
import math
import os

from agent.learn import dataset, ranker

KNOWLEDGE = "ranker.json"
META = "ranker"


def prior_rows(kb, task_name):
    """(rows, notes): the dataset rows of `task_name` that the knowledge `kb` (learn/knowledge.py) lists in
    ranker.json, and a note per listed dataset that is not there (a checkout's runfiles, say); ValueError for a
    malformed ranker.json."""
    doc = kb.load(KNOWLEDGE, {"version": 0, "changelog": [], "datasets": []})
    datasets = doc.get("datasets")
    if not isinstance(datasets, list) or not all(isinstance(d, str) for d in datasets):
        raise ValueError("%s: `datasets` must be a list of paths relative to it, got %r" % (KNOWLEDGE, datasets))
    rows, notes = [], []
    for rel in datasets:
        path = os.path.normpath(kb.path(rel))
        if not os.path.exists(path):
            notes.append("the knowledge's ranker dataset %s is not here" % rel)
            continue
        rows += [r for r in dataset.read(path) if r["task"] == task_name]
    return rows, notes


def remember(kb, store_path, port):
    """Keep a finished run's measured candidates as knowledge: its dataset rows (dataset.from_store) in a file
    of the learned store, listed in ranker.json by an accepted patch, so later runs' rankers train on them
    (`promote` writes both into agent/knowledge for review). (rows kept, the file's version), or (0, None)."""
    rows = dataset.from_store(store_path, port, toolchain="unrecorded")
    if not rows:
        return 0, None
    run = rows[0]["run"]
    rel = "datasets/%s.jsonl" % run
    version = kb.accept(KNOWLEDGE, {"append": {"datasets": [rel]}},
                        "the %d candidates run %s measured, for the learned ranker" % (len(rows), run),
                        evidence={"run": run, "task": rows[0]["task"], "devices": sorted({r["device"] for r in rows})},
                        files={rel: dataset.dumps(rows)})
    return len(rows), version


class LiveRanker:
    """Scores for a run's analyzed candidates (lower: measure first), from a ranker refit on what is known."""

    def __init__(self, task_name, prior):
        self.task_name = task_name
        self.prior = list(prior)
        self.model = None
        self.fitted_on = None  # the run's measured count at the last fit
        self.rows = 0  # rows of the last fit
        self.fits = 0

    def refit(self, measured, device, features):
        """Refit on the prior rows of `device` and the run's measured [(store row, seconds)] when it measured more
        since the last fit; `features(row)` gives a store row's ranker features. Whether a model exists."""
        if self.fitted_on == len(measured):
            return self.model is not None
        self.fitted_on = len(measured)
        rows = [r for r in self.prior if r["device"] == device]
        rows += [{"task": self.task_name, "ir_hash": row["ir_hash"], "features": features(row), "measured_s": s}
                 for row, s in measured]
        self.rows = len(rows)
        self.model = ranker.Ranker.fit(rows) if len(rows) >= ranker.MIN_ROWS else None
        self.fits += self.model is not None
        return self.model is not None

    def scores(self, rows, features):
        """{candidate id: predicted log(time / the task's best)} of store `rows`; None without a model."""
        if self.model is None or not rows:
            return None
        return dict(zip([r["id"] for r in rows], self.model.predict([features(r) for r in rows])))


def record(store, scores, new_fits):
    """Keep `scores` (given before those candidates were measured or pruned) in the store's meta, and count the
    `new_fits` made for them (the count adds up across a resumed run's sessions)."""
    kept = store.meta(META, {"fits": 0, "scores": {}})
    kept["fits"] += new_fits
    kept["scores"].update({str(k): v for k, v in scores.items()})
    store.set_meta(META, kept)


def error(store):
    """How well the ranker's scores ranked the candidates measured after them, beside the analytic predictions on
    the same candidates: {"measured", "spearman", "analytic_spearman", "fits"}; None before it scored any."""
    kept = store.meta(META)
    if not kept or not kept["scores"]:
        return None
    scored = [(kept["scores"][str(cid)], p, m) for cid, p, m in store.predicted_and_measured()
              if str(cid) in kept["scores"] and m and m > 0]
    if not scored:
        return None
    measured = [m for _, _, m in scored]
    return {"measured": len(scored), "spearman": ranker.spearman([s for s, _, _ in scored], measured),
            "analytic_spearman": ranker.spearman([math.log(p) for _, p, _ in scored], measured),
            "fits": kept["fits"]}
