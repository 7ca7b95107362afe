"""A measured run without a GPU: times from a task's earlier H200 measurements, or the learned ranker's estimate.

The analytic cost model is a poor judge of what a measured run finds: at the KMeans paper
cell it sees a 6% gap between the seed's family and the tuned kernel where the H200 measures
35%, so a replay on it cannot tell whether a move pays off on the GPU (learn/macros.py's gate
saw every mined macro reach the same predicted best either way). This evaluator stands in for
the GPU with what the measurements say:
- a candidate measured before (a dataset row of the task, learn/dataset.py, with its IR
  hash) gets the median of its measured times;
- any other gets the learned ranker's estimate (learn/ranker.py, trained on every row of the
  task): the task's best measured time times exp(its score), from the compiler's analysis
  and IR features of the kernel, asked through the run's port.
It knows the region the runs explored and guesses outside it, so a replay on it is evidence
about moves in that region, not a measurement. Every answer says which it was (detail).
"""

import collections
import math
import statistics

from compiler.ir.hashing import ir_hash

from agent.learn import ranker
from agent.measure.result import Measured


class SurrogateEvaluator:
    def __init__(self, task, rows, port):
        """rows: the dataset rows of `task` (at least ranker.MIN_ROWS); port: the compiler port to analyze with."""
        rows = [r for r in rows if r["task"] == task.name]
        if len(rows) < ranker.MIN_ROWS:
            raise ValueError("a surrogate of %s needs at least %d measured rows of it, got %d"
                             % (task.name, ranker.MIN_ROWS, len(rows)))
        times = collections.defaultdict(list)
        for r in rows:
            times[r["ir_hash"]].append(r["measured_s"])
        self.known = {h: statistics.median(t) for h, t in times.items()}
        self.best_s = min(r["measured_s"] for r in rows)
        self.model = ranker.Ranker.fit(rows)
        self.task, self.port = task, port
        self.answers = collections.Counter()  # "measured before" / "estimated" / "refused"

    def warm(self):
        """Nothing to start."""

    def measure(self, compiled, kernel, binding, label):
        h = ir_hash(kernel)
        if h in self.known:
            self.answers["measured before"] += 1
            t = self.known[h]
            return Measured(True, t, t, t, 0.0, detail={"surrogate": "measured before"})
        analysis = self.port.analyze(kernel, self.task.shapes, self.task.device)
        if analysis.report is None:
            self.answers["refused"] += 1
            return Measured(False, kind="wrong_result", message="the surrogate's analysis refuses %s: %s" % (
                label, "; ".join(d.message for d in analysis.diagnostics)))
        features = ranker.summarize(analysis.features, analysis.report.predicted_seconds, self.port.features(kernel))
        t = self.best_s * math.exp(self.model.predict([features])[0])
        self.answers["estimated"] += 1
        return Measured(True, t, t, t, 0.0, detail={"surrogate": "estimated"})

    def peers(self):
        return {}

    def close(self):
        pass
