"""The evolve loop: generations of proposals, assessed by the compiler, ranked by the cost model, measured.

Per generation: authors propose `task.batch` children of the best candidates so far
(rank-based choice of parents); every child is verified and predicted; a rejected
one is recorded with its diagnostics and its repair children (tactics the
diagnostics call for) are queued; with a GPU the best-predicted children (within a
margin of the best measured one) are compiled and measured in isolated workers and
the rest pruned, without one the prediction is the fitness. Tactics are credited
with their children's outcomes (bandit.py).

Every step commits to the store before the next begins, and the loop's state (the
generation, stale count, elapsed time, candidates still pending or awaiting a
decision, tactic statistics) lives there, so `run` on an existing store resumes.
"""

import dataclasses
import hashlib
import json
import math
import random
import time

from agent import bandit as bandit_mod
from agent import assess, repair as repair_mod, seeds, tactics as tactics_mod
from agent.authors.base import Context, Parent
from agent.genome import Genome
from agent.learn import live_ranker, ranker
from compiler.ir.hashing import ir_hash
from compiler.ir.text import parse_kernel, print_kernel

COST_MODEL, MEASURE = "cost_model", "measure"


@dataclasses.dataclass(frozen=True)
class Settings:
    mode: str  # COST_MODEL or MEASURE
    seed: int = 0
    parent_pool: int = 6  # parents are drawn from this many best candidates (doubling per empty generation)
    max_repair_depth: int = 2
    repairs_per_failure: int = 2
    throttle_s: float = 0.0  # a pause per assessed candidate (tests use it to land a kill mid-run)


class Evolver:
    def __init__(self, task, store, events, port, evaluator, tactics, repairs, bandit, authors, progress, settings):
        self.task = task
        self.family = seeds.family(task.family)
        self.store, self.events, self.port, self.evaluator = store, events, port, evaluator
        self.tactics, self.repairs, self.bandit, self.authors = tactics, repairs, bandit, authors
        self.progress, self.settings = progress, settings
        self._kernels = {}
        self._features = {}
        self.ranking = None  # a live_ranker.LiveRanker: the learned ranker orders what is measured (measured runs)
        self._session_start = time.monotonic()
        self._elapsed_before = store.meta("elapsed_s", 0.0)

    # -- state ---------------------------------------------------------------------------

    def elapsed_s(self):
        return self._elapsed_before + time.monotonic() - self._session_start

    def evaluations(self):
        return self.store.count("candidates", "fitness_s IS NOT NULL")

    def device_s(self):
        return float(self.store.meta("device_s", 0.0))

    def counted_evaluations(self):
        """The evaluations the budget counts (the pipeline counts the measurements it has sent off too)."""
        return self.evaluations()

    def exhausted(self, clocks_only=False):
        """Why the budget is spent, or None (`clocks_only`: only the wall-clock and device-time limits)."""
        b = self.task.budget
        if not clocks_only and b.evaluations and self.counted_evaluations() >= b.evaluations:
            return "%d evaluations" % b.evaluations
        if b.wall_s and self.elapsed_s() >= b.wall_s:
            return "%.0f s of search" % b.wall_s
        if b.device_s and self.settings.mode == MEASURE and self.device_s() >= b.device_s:
            return "%.0f s of device time" % b.device_s
        if not clocks_only and b.stale_generations and self.store.meta("stale", 0) >= b.stale_generations:
            return "no new candidates in %d generations" % b.stale_generations
        return None

    def kernel(self, row):
        k = self._kernels.get(row["id"])
        if k is None:
            k = self._kernels[row["id"]] = parse_kernel(row["ir_text"]).kernel
        return k

    def features(self, row):
        """The learned ranker's features of an analyzed candidate (its analysis' and the verifier's), computed once."""
        f = self._features.get(row["id"])
        if f is None:
            p = self.store.prediction(row["id"])
            f = self._features[row["id"]] = ranker.summarize(json.loads(p["features"]), p["predicted_s"],
                                                             self.port.features(self.kernel(row)))
        return f

    def _measurements(self):
        """([(row, median seconds)] of the measured candidates, the device they were measured on or None)."""
        out, device = [], None
        for row in self.store.candidates("measured"):
            m = self.store.measurement(row["id"])
            out.append((row, m["median_s"]))
            device = device or json.loads(m["detail"] or "{}").get("environment", {}).get("gpu_name")
        return out, device

    def _reward(self, tactic, value):
        self.bandit.update(tactic, value)

    # -- the loop ----------------------------------------------------------------------------

    def run(self):
        """Search until the budget is spent; returns why it stopped."""
        if not self.store.count("candidates"):
            self._insert_seed()
        while True:
            why = self._drain()
            if why:
                break
            why = self.exhausted()
            if why:
                break
            made = self._generation()
            stale = 0 if made else self.store.meta("stale", 0) + 1
            self.store.set_meta(stale=stale, generation=self.store.meta("generation", 0) + 1,
                                elapsed_s=self.elapsed_s())
            self.events.emit("generation", generation=self.store.meta("generation"), proposed=made,
                             evaluations=self.evaluations())
        self.store.set_meta("elapsed_s", self.elapsed_s())
        self.progress.update(self.snapshot())  # the last state, for the display's closing line
        return why

    def _insert_seed(self):
        genome = Genome(self.task.family, dict(self.task.seed_params), {})
        kernel = tactics_mod.materialize(genome, self.task.fixed)
        cid = self.store.insert_candidate(ir_hash(kernel), print_kernel(kernel), genome.to_json(), None, "seed", "seed", 0)
        self._kernels[cid] = kernel
        self.events.emit("candidate", id=cid, parent=None, tactic="seed", author="seed", genome=genome.describe())

    def _drain(self):
        """Assess every pending candidate (repairs they spawn included), then decide the analyzed ones."""
        while True:
            pending = self.store.candidates("pending")
            if not pending:
                break
            for row in pending:
                why = self.exhausted()
                if why:
                    return why
                self._check(row)
        if self.settings.mode == MEASURE:
            return self._decide()
        return None

    def _reference(self, row):
        """The fitness a child is judged against: its nearest ancestor's with a fitness."""
        while row and row["parent_id"] is not None:
            row = self.store.candidate(row["parent_id"])
            if row["fitness_s"] is not None:
                return row["fitness_s"]
        return None

    def _check(self, row):
        self.events.emit("assess", id=row["id"], stage="check")
        kernel = self.kernel(row)
        out = assess.check(self.port, kernel, row["ir_hash"], self.family.analysis_shapes(self.task.shapes, kernel),
                           self.task.device, task=self.task)
        self._checked(row, out, self._repairs(row, kernel, out.errors) if out.status == "invalid" else [])
        if self.settings.throttle_s:
            time.sleep(self.settings.throttle_s)

    def _checked(self, row, out, children):
        """Record a check's outcome (`children`: the repairs of a rejected candidate) and credit its tactic;
        the ids of the children inserted."""
        rewards = []
        if out.status == "invalid":
            if row["tactic"] != "seed":
                rewards.append((row["tactic"], bandit_mod.INVALID))
        elif self.settings.mode == COST_MODEL:
            out.status, out.fitness_s = "evaluated", out.prediction["predicted_s"]
            if row["tactic"] != "seed":
                rewards.append((row["tactic"], bandit_mod.improvement(self._reference(row), out.fitness_s)))
        return self._record(row, out, rewards, children)

    def _record(self, row, out, rewards, children=(), credit=True):
        """Record `out` for `row` with its tactic rewards and repair children (ids returned); `credit`: tell the
        bandit now (the pipeline credits measurements later, at a fixed point of the run)."""
        ids = self.store.record(row["id"], out.status, out.fitness_s, out.diagnostics, out.prediction, out.measurement,
                                out.failures, rewards, [c[:-1] for c in children], out.device_s)
        for (tactic, value) in rewards if credit else ():
            self._reward(tactic, value)
        for cid, child in zip(ids, children):
            self._kernels[cid] = child[-1]
            self.events.emit("candidate", id=cid, parent=row["id"], tactic=child[4], author="repair")
        self.events.emit("outcome", id=row["id"], status=out.status, fitness_s=out.fitness_s,
                         predicted_s=out.prediction["predicted_s"] if out.prediction else None,
                         failures=[f["signature"] for f in out.failures], device_s=out.device_s or None)
        if self.progress.due():
            self.progress.update(self.snapshot(row, out))
        return ids

    def _repairs(self, row, kernel, errors):
        """Repair children of a rejected candidate: the tactics its diagnostics call for, applied to it."""
        if row["repair_depth"] >= self.settings.max_repair_depth:
            return []
        subject = tactics_mod.Subject(kernel, Genome.from_json(row["genome"]) if row["genome"] else None)
        rng = random.Random(self.repair_seed(row["ir_hash"]))
        out, seen = [], set()
        for name, child in repair_mod.children(self.repairs, self.tactics, subject, errors, self.task.fixed, rng):
            h = ir_hash(child.kernel)
            if h in seen or self.store.has_hash(h):
                continue
            seen.add(h)
            out.append(self.repair_child(row, h, print_kernel(child.kernel), child.genome, name, child.kernel))
            if len(out) >= self.settings.repairs_per_failure:
                break
        return out

    def tie_order(self, h):
        """Where a candidate goes among equal predictions: a draw seeded by the run's seed and its IR hash,
        so ties are explored in an order no structure favours (the candidate id would favour the oldest
        lineage), the same on every resume and in every executor."""
        return hashlib.sha256(("%d:tie:%s" % (self.settings.seed, h)).encode()).hexdigest()

    def repair_seed(self, h):
        """The seed of a candidate's repair draws: its IR hash (known before it has an id, to a worker too)."""
        return "%d:repair:%s" % (self.settings.seed, h)

    @staticmethod
    def repair_child(row, h, ir_text, genome, tactic, kernel):
        """A repair child of `row` as Store.record inserts it (with its kernel last)."""
        return (h, ir_text, genome.to_json() if genome else None, row["id"], "repair:" + tactic, "repair",
                row["generation"], row["repair_depth"] + 1, kernel)

    def _decide(self):
        """Measure the best-predicted analyzed candidates (within the margin), prune the rest."""
        for row, measure in self.plan(self.store.candidates("analyzed"), self.store.ranked(limit=1)):
            if not measure:
                self._record(row, assess.Outcome("pruned"), [(row["tactic"], bandit_mod.PRUNED)])
                continue
            why = self.exhausted()
            if why:
                return why
            self._measure(row)
        return None

    def plan(self, analyzed, best):
        """(row, measure?) for analyzed candidates, best predicted first (equal predictions in `tie_order`): the
        `measure_top` best within the margin of the best measured one (`best`: [that row] or []) are measured (the
        seed always), the rest pruned. With a learned ranker (`ranking`) that has rows enough, its scores order
        and prune them instead of the analytic predictions."""
        preds = {r["id"]: self.store.prediction(r["id"])["predicted_s"] for r in analyzed}
        bar = None
        if best:
            p = self.store.prediction(best[0]["id"])
            bar = p["predicted_s"] * (1 + self.task.prune_margin) if p else None
        learned = self._learned_scores(analyzed, best)
        if learned is not None:
            preds, bar = learned
        out, measured = [], 0
        for row in sorted(analyzed, key=lambda r: (preds[r["id"]], self.tie_order(r["ir_hash"]))):
            seed = row["tactic"] == "seed"
            measure = seed or not (measured >= self.task.measure_top or (bar is not None and preds[row["id"]] > bar))
            measured += measure
            out.append((row, measure))
        return out

    def _learned_scores(self, analyzed, best):
        """(scores, bar) of the learned ranker in plan's terms (lower first; prune above bar: the best measured
        one's score plus the margin), refit on everything measured so far; None without a ranker or rows enough."""
        if self.ranking is None:
            return None
        measured, device = self._measurements()
        fits = self.ranking.fits
        if not self.ranking.refit(measured, device, self.features):
            return None
        scores = self.ranking.scores(list(analyzed) + list(best), self.features)
        live_ranker.record(self.store, {r["id"]: scores[r["id"]] for r in analyzed}, self.ranking.fits - fits)
        bar = scores[best[0]["id"]] + math.log1p(self.task.prune_margin) if best else None
        return scores, bar

    def _measure(self, row):
        self.events.emit("assess", id=row["id"], stage="measure")
        kernel = self.kernel(row)
        out = assess.compile_and_measure(self.port, self.evaluator, kernel, row["ir_hash"], self.family.binding,
                                         "candidate %d" % row["id"])
        self._measured(row, out, self._repairs(row, kernel, out.errors) if out.status == "failed" and out.errors
                       else [])

    def _measured(self, row, out, children):
        """Record a compile-and-measure outcome (`children`: repairs of a build failure) and credit its tactic;
        the ids of the children inserted."""
        return self._record(row, out, self.measure_rewards(row, out), children)

    def measure_rewards(self, row, out):
        """The tactic's credit for a compile-and-measure outcome: [(tactic, reward)] (none for the seed)."""
        if row["tactic"] == "seed":
            return []
        return [(row["tactic"], bandit_mod.improvement(self._reference(row), out.fitness_s) if out.status == "measured"
                 else bandit_mod.FAILED)]

    # -- proposals ------------------------------------------------------------------------------

    def _parent(self, row):
        pred = self.store.prediction(row["id"])
        report = None
        if pred:
            from cake.compiler.v1 import analysis_pb2
            from google.protobuf import json_format

            report = json_format.Parse(pred["report"], analysis_pb2.CostReport())
        diags = self.store.diagnostics(row["id"])
        return Parent(id=row["id"], kernel=self.kernel(row),
                      genome=Genome.from_json(row["genome"]) if row["genome"] else None, ir_text=row["ir_text"],
                      fitness_s=row["fitness_s"], diagnostics=diags, report=report)

    def _generation(self):
        """Propose and insert one generation of children; returns how many were new."""
        generation = self.store.meta("generation", 0) + 1
        # Widen the parents' pool while generations come up empty: the best ones' neighbourhoods are explored.
        pool = self.store.ranked(limit=self.settings.parent_pool * 2 ** min(self.store.meta("stale", 0), 6))
        if not pool:
            return 0
        made, attempts = 0, 0
        while made < self.task.batch and attempts < 4 * self.task.batch:
            rng = random.Random("%d:%d:%d" % (self.settings.seed, generation, attempts))
            attempts += 1
            parent_row = pool[min(int(rng.expovariate(3.0 / len(pool))), len(pool) - 1)]  # rank-based: mean a third in
            author = self.authors[(generation + attempts) % len(self.authors)]
            seen = set()

            def is_new(kernel, seen=seen):
                h = ir_hash(kernel)
                return h not in seen and not self.store.has_hash(h)

            for p in author.propose(self._parent(parent_row), Context(rng, is_new)):
                h = ir_hash(p.kernel)
                if h in seen or self.store.has_hash(h):
                    self.store.add_reward(p.tactic, bandit_mod.DUPLICATE)
                    self._reward(p.tactic, bandit_mod.DUPLICATE)
                    continue
                seen.add(h)
                cid = self.store.insert_candidate(h, print_kernel(p.kernel), p.genome.to_json() if p.genome else None,
                                                  parent_row["id"], p.tactic, p.author, generation)
                self._kernels[cid] = p.kernel
                self.events.emit("candidate", id=cid, parent=parent_row["id"], tactic=p.tactic, author=p.author,
                                 genome=p.genome.describe() if p.genome else None)
                made += 1
        return made

    # -- display ---------------------------------------------------------------------------------

    def snapshot(self, row=None, out=None):
        best = self.store.ranked(limit=1)
        seed = self.store.first()
        return {
            "mode": self.settings.mode,
            "generation": self.store.meta("generation", 0),
            "evaluations": self.evaluations(),
            "candidates": self.store.count("candidates"),
            "elapsed_s": self.elapsed_s(),
            "device_s": self.device_s(),
            "best_s": best[0]["fitness_s"] if best else None,
            "best_id": best[0]["id"] if best else None,
            "seed_s": seed["fitness_s"] if seed else None,
            "failures": self.store.failure_counts(),
            "last": None if row is None else "#%d %s -> %s" % (row["id"], row["tactic"], out.status),
        }
