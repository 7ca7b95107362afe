"""The batch-asynchronous evolve loop: the serial loop's decisions, its work done by an executor, overlapped.

Proposing, checking (verify + analyze), compiling and measuring are jobs an executor
runs (work.py) while the driver, the only writer of the run store, decides. Up to
`window` + 1 generations are open at once: generation g+1 is drawn while g is still
being checked, compiled and measured, so every worker has work.

Determinism. Jobs are pure functions of their inputs, and the driver commits their
results in a fixed order, the order it created the entries for them (a reorder buffer):
a draw, then the generation's attempts in turn, each candidate's check, a decision,
the builds and prunes it ordered. Every decision (which parents, which tactics,
which candidates to measure, which repairs are new) is taken at a commit, from the
store as those commits left it, so it cannot depend on which worker was faster.
Measurements take long and would hold the buffer up, so they alone are recorded
when they arrive, and become visible to decisions (parent pool, pruning bar, bandit
credit) only at the first draw or decision `window` draws after the one they were
sent off under, which waits for them if it must. For a fixed seed, window and
task, a run's candidates and outcomes are the same run after run (measured times
are as reproducible as the GPU's timings).

Where it differs from the serial loop (agent/loop.py):
- delayed updates: a generation is drawn from the results committed when its draw
  comes up, without the open generations' (measurements: the last `window` draws'),
  and the bandit is credited in that order;
- a candidate is checked in the job that proposed it, so its check commits with its
  proposal (its repairs before the next attempt's child), and a repair's random
  draws are seeded by its parent's IR hash, not its id;
- budgets are checked at commits: an evaluations budget counts measurements sent
  off, and a run that stops lets those in flight finish and records them;
- LLM authors still write in the driver (their answers cannot be replayed by a worker).
With window 0 nothing overlaps across generations (each is drawn when the last is
done and measured), but each generation's own jobs still run in parallel.
"""

import collections
import random

from cake.ir.v1 import ir_pb2

from agent import assess, bandit as bandit_mod, loop
from agent.authors.base import Context
from agent.executors.base import Failed
from agent.genome import Genome
from agent.learn.signatures import failure
from compiler.ir.hashing import ir_hash
from compiler.ir.text import parse_kernel, print_kernel
from runtime import results_log

POLL_S = 0.5  # the longest the driver waits without looking at the budget


class _Entry:
    """One result to commit, in creation order: a draw, attempt, check, decision, build or prune."""

    __slots__ = ("kind", "round", "cid", "job", "value", "done")

    def __init__(self, kind, round_, cid=None, job=None, done=False):
        self.kind, self.round, self.cid, self.job = kind, round_, cid, job
        self.value, self.done = None, done


class _Round:
    """A generation's candidates on their way through (or, after a resume, those left unfinished)."""

    def __init__(self, generation, pool=()):
        self.generation = generation
        self.pool = list(pool)  # the parents it draws from
        self.proposing = bool(pool)
        self.made = self.tried = self.outstanding = 0  # attempts that made a child, started, unfinished
        self.entries = 0  # its entries not yet committed
        self.checks = 0  # of those, checks
        self.analyzed = []  # candidate ids checked and awaiting a decision
        self.held = []  # check entries waiting for the proposals to be in
        self.deciding = False

    def open(self):
        return bool(self.proposing or self.entries or self.analyzed)


class Pipeline(loop.Evolver):
    def __init__(self, *args, executor, window, **kwargs):
        super().__init__(*args, **kwargs)
        self.executor, self.window = executor, window
        self._rob = collections.deque()
        self._jobs = {}  # ticket -> the entry waiting for it
        self._measuring = {}  # ticket -> (seq, row, build outcome, epoch) of measurements in flight
        self._arrived = []  # (seq, row, rewards, epoch) of measurements recorded but not yet visible
        self._hidden = set()  # their candidate ids
        self._hidden_fit = 0  # how many of them have a fitness
        self._seq = 0
        self._epoch = 0  # draws committed
        self._rounds = []
        self._drawing = False  # a draw entry is queued
        self._last_made = None  # children of the last generation drawn

    # -- state -------------------------------------------------------------------------------

    def exhausted(self, clocks_only=False):
        b = self.task.budget
        if not clocks_only and b.evaluations and (self._measuring or self._hidden) \
                and self.counted_evaluations() >= b.evaluations:
            # Measurements still out may fail: wait for them all, then count exactly (as the serial loop would).
            while self._measuring:
                self._wait(POLL_S)
            self._apply(float("inf"))
        return super().exhausted(clocks_only)

    def counted_evaluations(self):
        # Measurements in flight or not yet visible count: the budget is then decided the same way every run.
        return self.evaluations() - self._hidden_fit + len(self._hidden) + len(self._measuring)

    def kernel(self, row):
        k = self._kernels.get(row["id"])
        if isinstance(k, bytes):
            return ir_pb2.Kernel.FromString(k)
        return k if k is not None else parse_kernel(row["ir_text"]).kernel

    def _kernel_bytes(self, row):
        k = self._kernels.get(row["id"])
        if not isinstance(k, bytes):
            k = self._kernels[row["id"]] = (k if k is not None else parse_kernel(row["ir_text"]).kernel).SerializeToString()
        return k

    def _ranked_visible(self, limit):
        rows = self.store.ranked(limit=limit + len(self._hidden))
        return [r for r in rows if r["id"] not in self._hidden][:limit]

    # -- the loop ----------------------------------------------------------------------------

    def run(self):
        if not self.store.count("candidates"):
            self._insert_seed()
            self._kernels = {cid: k.SerializeToString() for cid, k in self._kernels.items()}
        self._recover()
        why = None
        self._advance()
        while why is None:
            why = self._commit_ready()
            if why is None:
                why = self.exhausted(clocks_only=True)  # the others are decided at commits, the same every run
            if why is None:
                self._wait(POLL_S)
        self._finish()
        self.store.set_meta("elapsed_s", self.elapsed_s())
        return why

    def _recover(self):
        """The candidates a stopped run left: pending ones are checked, analyzed ones decided, as the serial loop does."""
        r = _Round(None)
        self._rounds.append(r)
        for row in self.store.candidates("pending"):
            self._check_entry(r, row)
        r.analyzed = [row["id"] for row in self.store.candidates("analyzed")]
        self._maybe_decide(r)

    def _append(self, entry):
        self._rob.append(entry)
        entry.round.entries += 1

    def _submit(self, entry, kind, job):
        entry.job = job
        self._jobs[self.executor.submit(kind, job)] = entry

    def _advance(self):
        """Queue the next draw when the window allows it (the barrier at its commit waits for measurements)."""
        if self._drawing or any(r.proposing for r in self._rounds):
            return
        self._rounds = [r for r in self._rounds if r.open()]
        if self._last_made == 0:  # an empty generation: widen the pool only once everything is known
            if self._rounds:
                return
        elif len(self._rounds) > self.window:
            return
        self._drawing = True
        self._rob.append(_Entry("draw", None))

    def _ready(self, entry):
        if entry.kind in ("draw", "decide"):
            limit = self._visible_epoch(entry)
            return not any(epoch <= limit for _, _, _, epoch in self._measuring.values())
        return entry.done

    def _visible_epoch(self, entry):
        """Measurements sent off under this draw count or earlier are visible at `entry`'s decision."""
        if entry.kind == "draw" and self._last_made == 0:
            return float("inf")
        return self._epoch - self.window

    def _commit_ready(self):
        while self._rob and self._ready(self._rob[0]):
            entry = self._rob[0]
            if entry.kind in ("draw", "decide"):
                self._apply(self._visible_epoch(entry))
            why = getattr(self, "_commit_" + entry.kind)(entry)
            if why == "stall":  # the entry went back to work (a child seen meanwhile)
                return None
            self._rob.popleft()
            if entry.round is not None:
                entry.round.entries -= 1
                self._maybe_decide(entry.round)
            if why:
                return why
            self._advance()  # after every commit: where a draw lands must not depend on timing
        return None

    def _wait(self, timeout):
        for ticket, result in self.executor.poll(timeout):
            if ticket in self._measuring:
                self._arrive(ticket, result)
                continue
            entry = self._jobs.pop(ticket, None)
            if entry is None:
                continue
            if entry.kind == "attempt" and isinstance(result, dict) and result.get("pos") is not None \
                    and self.store.has_hash(result["child"]["ir_hash"]):
                self._resume_attempt(entry, result)  # known already: it will be at its commit too
                continue
            entry.value, entry.done = result, True

    def _finish(self):
        """Stop: what is queued is dropped (a resume redoes it), measurements in flight are waited for and recorded."""
        self._rob.clear()
        while self._measuring:
            self._wait(POLL_S)
        self._apply(float("inf"))

    # -- draws and attempts ----------------------------------------------------------------------

    def _commit_draw(self, entry):
        self._drawing = False
        why = self.exhausted()
        if why:
            return why
        self._epoch += 1
        generation = self.store.meta("generation", 0) + 1
        pool = self._ranked_visible(self.settings.parent_pool * 2 ** min(self.store.meta("stale", 0), 6))
        r = _Round(generation, pool)
        self._rounds.append(r)
        if not pool:
            self._proposed(r)
        for _ in range(self.task.batch if pool else 0):
            self._attempt(r)
        return None

    def _attempt(self, r):
        a = r.tried
        r.tried += 1
        r.outstanding += 1
        rng = random.Random("%d:%d:%d" % (self.settings.seed, r.generation, a))
        parent = r.pool[min(int(rng.expovariate(3.0 / len(r.pool))), len(r.pool) - 1)]  # as the serial loop draws
        author = self.authors[(r.generation + a + 1) % len(self.authors)]
        entry = _Entry("attempt", r)
        entry.cid = parent["id"]
        self._append(entry)
        if getattr(author, "name", "") == "search":
            order = self.bandit.order(sorted(author.tactics), rng)
            self._submit(entry, "propose", {"parent": self._kernel_bytes(parent), "genome": parent["genome"],
                                            "order": order, "rng": rng.getstate(), "check": self.repair_seed("")})
        else:  # an LLM: its proposals, made here; their checks follow at the commit
            ctx = Context(rng, lambda k: not self.store.has_hash(ir_hash(k)))
            entry.value, entry.done = {"proposals": author.propose(self._parent(parent), ctx)}, True

    def _resume_attempt(self, entry, result):
        job = dict(entry.job, order=entry.job["order"][result["pos"] + 1:], rng=result["rng"])
        entry.done = False
        self._submit(entry, "propose", job)

    def _commit_attempt(self, entry):
        r, v = entry.round, entry.value
        parent = self.store.candidate(entry.cid)
        if isinstance(v, Failed):
            self.progress.message("a proposal job failed (%s): %s" % (v.kind, v.message))
        elif "proposals" in v:
            for p in v["proposals"]:
                h = ir_hash(p.kernel)
                if self.store.has_hash(h):
                    self.store.add_reward(p.tactic, bandit_mod.DUPLICATE)
                    self._reward(p.tactic, bandit_mod.DUPLICATE)
                    continue
                c = {"kernel": p.kernel.SerializeToString(), "ir_hash": h, "ir_text": print_kernel(p.kernel),
                     "genome": p.genome.to_json() if p.genome else None}
                self._check_entry(r, self._insert(r, parent, c, p.tactic, p.author))
        elif v["pos"] is not None:
            if self.store.has_hash(v["child"]["ir_hash"]):
                self._resume_attempt(entry, v)
                return "stall"
            row = self._insert(r, parent, v["child"], v["tactic"], "search")
            check = _Entry("check", r, row["id"], done=True)
            check.value = v["check"]
            r.held.append(check)
            r.checks += 1
        r.outstanding -= 1
        if r.made + r.outstanding < self.task.batch and r.tried < 4 * self.task.batch:
            self._attempt(r)
        if r.outstanding == 0:
            self._proposed(r)
        return None

    def _insert(self, r, parent, c, tactic, author):
        cid = self.store.insert_candidate(c["ir_hash"], c["ir_text"], c["genome"], parent["id"], tactic, author,
                                          r.generation)
        self._kernels[cid] = c["kernel"]
        self.events.emit("candidate", id=cid, parent=parent["id"], tactic=tactic, author=author,
                         genome=Genome.from_json(c["genome"]).describe() if c["genome"] else None)
        r.made += 1
        return self.store.candidate(cid)

    def _proposed(self, r):
        """The generation's proposals are all in: the serial loop's bookkeeping for a generation."""
        r.proposing = False
        for entry in r.held:  # its checks commit after all its proposals, as in the serial loop
            self._append(entry)
        r.held = []
        self._last_made = r.made
        stale = 0 if r.made else self.store.meta("stale", 0) + 1
        self.store.set_meta(stale=stale, generation=r.generation, elapsed_s=self.elapsed_s())
        self.events.emit("generation", generation=r.generation, proposed=r.made, evaluations=self.evaluations())

    # -- checks, decisions, builds, measurements ---------------------------------------------------

    def _job(self, row):
        return {"kernel": self._kernel_bytes(row), "ir_hash": row["ir_hash"], "genome": row["genome"],
                "depth": row["repair_depth"], "repair_seed": self.repair_seed(row["ir_hash"])}

    def _check_entry(self, r, row):
        entry = _Entry("check", r, row["id"])
        r.held.append(entry) if r.proposing else self._append(entry)
        r.checks += 1
        self._submit(entry, "check", self._job(row))

    def _new_repairs(self, row, found):
        out = []
        for c in found:
            if len(out) >= self.settings.repairs_per_failure:
                break
            if not self.store.has_hash(c["ir_hash"]) and c["ir_hash"] not in {o[0] for o in out}:
                genome = Genome.from_json(c["genome"]) if c["genome"] else None
                out.append(self.repair_child(row, c["ir_hash"], c["ir_text"], genome, c["tactic"], c["kernel"]))
        return out

    def _commit_check(self, entry):
        why = self.exhausted()
        if why:
            return why
        r, row, v = entry.round, self.store.candidate(entry.cid), entry.value
        r.checks -= 1
        self.events.emit("assess", id=row["id"], stage="check")
        if isinstance(v, Failed):
            v = {"outcome": assess.Outcome("invalid", failures=[failure("verify", v.kind, "", v.message,
                                                                        row["ir_hash"])]), "repairs": []}
        out = v["outcome"]
        ids = self._checked(row, out, self._new_repairs(row, v["repairs"]))
        for cid in ids:
            self._check_entry(r, self.store.candidate(cid))
        if out.status == "analyzed":
            r.analyzed.append(row["id"])
        if self.settings.throttle_s:
            import time

            time.sleep(self.settings.throttle_s)
        return None

    def _maybe_decide(self, r):
        if self.settings.mode == loop.MEASURE and r.analyzed and not (r.proposing or r.checks or r.deciding):
            r.deciding = True
            self._append(_Entry("decide", r))

    def _commit_decide(self, entry):
        r = entry.round
        rows = [self.store.candidate(cid) for cid in r.analyzed]
        r.analyzed, r.deciding = [], False
        for row, measure in self.plan(rows, self._ranked_visible(1)):
            e = _Entry("build" if measure else "prune", r, row["id"], done=not measure)
            self._append(e)
            if measure:
                self._submit(e, "compile", self._job(row))
        return None

    def _commit_prune(self, entry):
        row = self.store.candidate(entry.cid)
        self._record(row, assess.Outcome("pruned"), [(row["tactic"], bandit_mod.PRUNED)])
        return None

    def _commit_build(self, entry):
        row, v = self.store.candidate(entry.cid), entry.value
        if isinstance(v, Failed):
            v = {"compiled": None, "repairs": [], "outcome": assess.Outcome(
                "failed", failures=[failure("build", v.kind, "", v.message, row["ir_hash"])])}
        if v["compiled"] is None:
            self.events.emit("assess", id=row["id"], stage="measure")
            for cid in self._measured(row, v["outcome"], self._new_repairs(row, v["repairs"])):
                self._check_entry(entry.round, self.store.candidate(cid))
            return None
        why = self.exhausted()
        if why:
            return why
        self.events.emit("assess", id=row["id"], stage="measure")
        job = {"compiled": v["compiled"], "kernel": self._kernel_bytes(row), "ir_hash": row["ir_hash"],
               "label": "candidate %d" % row["id"]}
        self._seq += 1
        self._measuring[self.executor.submit("measure", job)] = (self._seq, row, v["outcome"], self._epoch)
        return None

    def _arrive(self, ticket, result):
        """A measurement is back: recorded now, credited to the bandit when it becomes visible."""
        seq, row, built, epoch = self._measuring.pop(ticket)
        if isinstance(result, Failed):
            out = assess.Outcome("failed", failures=[failure("runtime", result.kind, "", result.message,
                                                             row["ir_hash"])])
        else:
            out = result
        out.diagnostics = built.diagnostics + out.diagnostics
        if out.record is not None and not self.executor.records_measurements:
            results_log.append(self.evaluations_path, out.record)
        rewards = self.measure_rewards(row, out)
        self._record(row, out, rewards, credit=False)
        self._arrived.append((seq, row, rewards, epoch))
        self._hidden.add(row["id"])
        self._hidden_fit += out.fitness_s is not None

    def _apply(self, limit):
        """Make the measurements sent off under draw `limit` or earlier visible, crediting them in the order sent."""
        now = sorted(a for a in self._arrived if a[3] <= limit)
        if not now:
            return
        self._arrived = [a for a in self._arrived if a[3] > limit]
        for _, row, rewards, _ in now:
            for tactic, value in rewards:
                self._reward(tactic, value)
            self._hidden.discard(row["id"])
            self._hidden_fit -= self.store.candidate(row["id"])["fitness_s"] is not None

    evaluations_path = None  # where the driver appends measurement records an executor does not keep itself
