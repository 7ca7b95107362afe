"""The batch-asynchronous evolve loop: the serial loop's decisions, its work done by an executor, overlapped.

Proposing, checking (verify + analyze), compiling and measuring are jobs an executor
runs (work.py) while the driver, the only writer of the run store, decides. Up to
`window` + 1 generations are open at once: generation g+1 is drawn while g is still
being checked, compiled and measured, so every worker has work.

Determinism. Jobs are pure functions of their inputs, and the driver commits their
results in a fixed order (a reorder buffer of two lanes, each in the order its entries
were made: draws and attempts in one, checks, decisions and prunes in the other;
proposals may run up to `window` generations ahead of the oldest check). Every
decision (which parents, which tactics, which candidates to measure, which repairs
are new) is taken at a commit, from the store as those commits left it, so it cannot
depend on which worker was faster. Work is started ahead where it will likely be
needed (a child's check when it is proposed, a rejected candidate's repairs' checks,
the compile of a round's best predicted), which changes only when results are ready.
Compiling and measuring take long and would hold the buffer up, so a candidate chosen
for measurement leaves it: its measurement is recorded when it arrives, and it becomes
visible to decisions (parent pool, pruning bar, bandit credit; a build failure is
recorded, and its repairs queued, only then) at the first draw or decision `window`
draws after the one it was sent off under, which waits for it if it must. For a
fixed seed, window and task, a run's candidates and outcomes are the same run after
run (measured times are as reproducible as the GPU's timings).

Where it differs from the serial loop (agent/loop.py):
- delayed updates: a generation is drawn from the results committed when its draw
  comes up, without the open generations' (measurements: the last `window` draws'),
  and the bandit is credited in that order;
- budgets are checked at commits: an evaluations budget counts measurements sent
  off, and a run that stops lets those in flight finish and records them;
- LLM authors still write in the driver (their answers cannot be replayed by a worker).
With window 0 nothing overlaps across generations (each is drawn when the last is
done and measured), but each generation's own jobs still run in parallel.
"""

import collections
import random
import time

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
    """One result to commit, in creation order: a draw, attempt, check, decision or prune."""

    __slots__ = ("kind", "round", "cid", "job", "value", "done")

    def __init__(self, kind, round_, cid=None, job=None, done=False):
        self.kind, self.round, self.cid, self.job = kind, round_, cid, job
        self.value, self.done = None, done


class _Chain:
    """A candidate sent to be compiled and measured: recorded when it comes back, visible `window` draws later."""

    __slots__ = ("seq", "round", "row", "epoch", "built", "repairs", "rewards", "measured")

    def __init__(self, seq, round_, row, epoch):
        self.seq, self.round, self.row, self.epoch = seq, round_, row, epoch
        self.built, self.repairs, self.rewards, self.measured = None, [], [], False


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
        self.predicted = []  # predictions of its candidates analyzed since its last decision (prefetch ranks)
        self.deciding = False

    def open(self):
        return bool(self.proposing or self.entries or self.analyzed)


class Pipeline(loop.Evolver):
    def __init__(self, *args, executor, window, **kwargs):
        super().__init__(*args, **kwargs)
        self.executor, self.window = executor, window
        # Two lanes of entries, each committed in the order created: "p" draws and attempts, "c" the rest.
        # Their merge is fixed too (_lane): proposals run up to `window` generations ahead of the checks.
        self._lanes = {"p": collections.deque(), "c": collections.deque()}
        self._jobs = {}  # ticket -> the entry waiting for it
        self._known_id = 0  # the last candidate whose hash the executor's known log has
        self._chains = {}  # ticket -> _Chain of compiles and measurements in flight
        self._compiles = {}  # IR hash -> ticket of a prefetched compile, or ("done", its result)
        self._prefetching = {}  # ticket -> IR hash of a prefetched compile in flight
        self._claimed = {}  # IR hash -> the chain waiting for its prefetched compile
        self._checks = {}  # IR hash -> ticket of a repair checked ahead, or ("done", its result, its job)
        self._speculating = {}  # ticket -> (IR hash, job) of a repair being checked ahead
        self._waiting = {}  # IR hash -> the check entry waiting for that repair's check
        self._arrived = []  # chains back but not yet visible
        self._outstanding = 0  # chains sent off and not yet visible
        self._hidden = set()  # their candidate ids
        self._hidden_fit = 0  # how many of them have a fitness
        self._fit = None  # candidates with a fitness (None: not counted yet)
        self._seq = 0
        self._epoch = 0  # draws committed
        self._open = set()  # rounds with something left to commit or decide
        self._proposing = None  # the round whose proposals are not all in
        self._drawing = False  # a draw entry is queued
        self._last_made = None  # children of the last generation drawn

    # -- state -------------------------------------------------------------------------------

    def exhausted(self, clocks_only=False):
        b = self.task.budget
        if not clocks_only and b.evaluations and self._outstanding and self.counted_evaluations() >= b.evaluations:
            # Measurements still out may fail: wait for them all, then count exactly (as the serial loop would).
            while self._in_flight():
                self._wait(POLL_S)
            self._apply(float("inf"))
        return super().exhausted(clocks_only)

    def evaluations(self):
        # Counted as they are recorded (from run's start): a COUNT over the store at every commit costs too much.
        return self._fit if self._fit is not None else super().evaluations()

    def _record(self, row, out, rewards, children=(), credit=True):
        if out.fitness_s is not None and self._fit is not None:
            self._fit += 1
        return super()._record(row, out, rewards, children, credit)

    def counted_evaluations(self):
        # Measurements in flight or not yet visible count: the budget is then decided the same way every run.
        return self.evaluations() - self._hidden_fit + self._outstanding

    def kernel(self, row):
        k = self._kernels.get(row["id"])
        if isinstance(k, bytes):
            return ir_pb2.Kernel.FromString(k)
        return k if k is not None else parse_kernel(row["ir_text"]).kernel

    def _in_flight(self):
        """Chains not back yet: compiling or measuring, or waiting for a prefetched compile."""
        return list(self._chains.values()) + list(self._claimed.values())

    def _kernel_bytes(self, row):
        k = self._kernels.get(row["id"])
        if not isinstance(k, bytes):
            k = self._kernels[row["id"]] = (k if k is not None else parse_kernel(row["ir_text"]).kernel).SerializeToString()
        return k

    def _ranked_visible(self, limit):
        return self.store.ranked(limit=limit, exclude=self._hidden)

    # -- the loop ----------------------------------------------------------------------------

    def run(self):
        if not self.store.count("candidates"):
            self._insert_seed()
            self._kernels = {cid: k.SerializeToString() for cid, k in self._kernels.items()}
        self._fit = super().evaluations()
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
        self.progress.update(self.snapshot())
        return why

    def _recover(self):
        """The candidates a stopped run left: pending ones are checked, analyzed ones decided, as the serial loop does."""
        r = _Round(None)
        for row in self.store.candidates("pending"):
            self._check_entry(r, row)
        r.analyzed = [row["id"] for row in self.store.candidates("analyzed")]
        self._maybe_decide(r)
        self._touch(r)

    def _append(self, entry):
        self._lanes["c"].append(entry)
        entry.round.entries += 1
        self._open.add(entry.round)  # (again, for a round reopened by the repairs of a build that failed)

    def _touch(self, r):
        """Keep the set of open rounds current after `r` changed."""
        if r.open():
            self._open.add(r)
        else:
            self._open.discard(r)

    def _known_n(self):
        """How many of the store's hashes a proposal may skip as known: all of them now (known.py)."""
        rows = self.store.hashes_after(self._known_id)
        if rows:
            self._known_id = rows[-1][0]
            self.executor.known.extend(h for _, h in rows)
        return len(self.executor.known.hashes)

    def _submit(self, entry, kind, job):
        entry.job = job
        self._jobs[self.executor.submit(kind, job)] = entry

    def _advance(self):
        """Queue the next draw when the window allows it (the barrier at its commit waits for measurements)."""
        if not self._drawing and self._may_draw():
            self._drawing = True
            self._lanes["p"].append(_Entry("draw", None))

    def _may_draw(self):
        if self._proposing is not None:
            return False
        if self._last_made == 0:  # an empty generation: widen the pool only once everything is known
            return not self._open
        return len(self._open) <= self.window

    def _still_wanted(self, entry):
        if entry.kind == "draw":
            return self._may_draw()
        return not (entry.round.checks or entry.round.proposing)

    def _withdraw(self, entry):
        if entry.kind == "draw":
            self._drawing = False
        else:
            entry.round.deciding = False
            entry.round.entries -= 1
            self._touch(entry.round)

    def _ready(self, entry):
        if entry.kind in ("draw", "decide"):
            limit = self._visible_epoch(entry)
            return not any(c.epoch <= limit for c in self._in_flight())
        return entry.done

    def _visible_epoch(self, entry):
        """Measurements sent off under this draw count or earlier are visible at `entry`'s decision."""
        if entry.kind == "draw" and self._last_made == 0:
            return float("inf")
        return self._epoch - self.window

    def _lane(self):
        """The lane whose head commits next: proposals while they are at most `window` generations ahead of
        the oldest check or decision waiting (a rule of the entries, never of which finished first)."""
        p, c = self._lanes["p"], self._lanes["c"]
        if not p or not c:
            return p or c
        head_p = p[0].round.generation if p[0].round is not None else self.store.meta("generation", 0) + 1
        head_c = c[0].round.generation or 0
        return p if head_p <= head_c + self.window else c

    def _commit_ready(self):
        while True:
            lane = self._lane()
            if not lane or not self._ready(lane[0]):
                return None
            entry = lane[0]
            if entry.kind in ("draw", "decide"):
                self._apply(self._visible_epoch(entry))
                if not self._still_wanted(entry):  # what became visible brought more to check first
                    lane.popleft()
                    self._withdraw(entry)
                    self._advance()
                    continue
            why = getattr(self, "_commit_" + entry.kind)(entry)
            if why == "stall":  # the entry went back to work (a child seen meanwhile)
                return None
            lane.popleft()
            if entry.round is not None:
                entry.round.entries -= 1
                self._maybe_decide(entry.round)
                self._touch(entry.round)
            if why:
                return why
            self._advance()  # after every commit: where a draw lands must not depend on timing

    def _wait(self, timeout):
        for ticket, result in self.executor.poll(timeout):
            if ticket in self._chains:
                self._arrive(ticket, result)
                continue
            if ticket in self._prefetching:
                self._prefetched(ticket, result)
                continue
            if ticket in self._speculating:
                self._speculated(ticket, result)
                continue
            entry = self._jobs.pop(ticket, None)
            if entry is None:
                continue
            if entry.kind == "attempt" and isinstance(result, dict) and result.get("pos") is not None \
                    and self.store.has_hash(result["child"]["ir_hash"]):
                self._resume_attempt(entry, result)  # known already: it will be at its commit too
                continue
            entry.value, entry.done = result, True
            if isinstance(result, dict):
                if entry.kind == "attempt" and result.get("pos") is not None:
                    self._check_ahead(dict(result["child"], depth=0))  # it almost always becomes a candidate
                elif entry.kind == "check":
                    self._ahead(entry.round, entry.job, result)

    def _ahead(self, r, c, check):
        """Work a checked candidate will likely need next, started now: its repairs' checks, its compile."""
        if isinstance(check, Failed):
            return
        self._speculate(c, check)
        if self.settings.mode == loop.MEASURE:
            self._prefetch(r, c, check)

    # -- repairs checked before the commit that inserts them (work only: the commit still decides) -----------

    def _speculate(self, c, check):
        """Check the repairs a rejected candidate will most likely get (the first ones not yet in the store)."""
        if check["outcome"].status != "invalid":
            return
        n = 0
        for rep in check["repairs"]:
            if n >= self.settings.repairs_per_failure:
                break
            if not self.store.has_hash(rep["ir_hash"]):
                n += 1
                self._check_ahead(dict(rep, depth=c["depth"] + 1))

    def _check_ahead(self, c):
        """Start checking candidate `c` (kernel, hash, genome, depth) before it is in the store."""
        h = c["ir_hash"]
        if h in self._checks or self.store.has_hash(h):
            return
        job = {"kernel": c["kernel"], "ir_hash": h, "genome": c["genome"], "depth": c["depth"],
               "repair_seed": self.repair_seed(h)}  # as _job(row) will ask for it
        ticket = self.executor.submit("check", job)
        self._speculating[ticket] = (h, job)
        self._checks[h] = ticket

    def _speculated(self, ticket, result):
        h, job = self._speculating.pop(ticket)
        entry = self._waiting.pop(h, None)
        if entry is not None:
            self._jobs[ticket] = entry
            entry.job = job
            self._wait_one(ticket, result)
        elif self._checks.get(h) == ticket:
            self._checks[h] = ("done", result, job)
            if isinstance(result, dict):
                self._speculate(job, result)  # (its compile waits until it has an entry: rounds rank those)

    def _wait_one(self, ticket, result):
        """Deliver one result as `_wait` would (a speculative check claimed by its entry)."""
        entry = self._jobs.pop(ticket)
        entry.value, entry.done = result, True
        if isinstance(result, dict):
            self._ahead(entry.round, entry.job, result)

    # -- compiles started before the decision that needs them (work only: decisions never see them early) ----

    def _prefetch(self, r, c, check):
        """Compile a candidate just analyzed when it is among its round's `measure_top` best predicted so far."""
        out = check["outcome"]
        if out.status != "analyzed" or c["ir_hash"] in self._compiles:
            return
        r.predicted.append(out.prediction["predicted_s"])
        if sorted(r.predicted).index(out.prediction["predicted_s"]) >= self.task.measure_top:
            return
        job = {"kernel": c["kernel"], "ir_hash": c["ir_hash"], "genome": c["genome"], "depth": c["depth"],
               "repair_seed": self.repair_seed(c["ir_hash"])}  # as _job(row) will ask for it
        ticket = self.executor.submit("compile", job)
        self._prefetching[ticket] = c["ir_hash"]
        self._compiles[c["ir_hash"]] = ticket

    def _prefetched(self, ticket, result):
        h = self._prefetching.pop(ticket)
        chain = self._claimed.pop(h, None)
        if chain is not None:
            self._chains[ticket] = chain
            self._arrive(ticket, result)
        elif self._compiles.get(h) == ticket:
            self._compiles[h] = ("done", result)

    def _compile(self, chain):
        """Send `chain`'s candidate to be compiled, unless a prefetch has (or is)."""
        h = chain.row["ir_hash"]
        pre = self._compiles.pop(h, None)
        if isinstance(pre, tuple):
            self._chains[None] = chain  # _arrive takes the chain of a ticket: here, the one of no job
            self._arrive(None, pre[1])
        elif pre is not None:
            self._claimed[h] = chain
        else:
            self._chains[self.executor.submit("compile", self._job(chain.row))] = chain

    def _finish(self):
        """Stop: what is queued is dropped (a resume redoes it), measurements in flight are waited for and recorded."""
        for lane in self._lanes.values():
            lane.clear()
        while self._in_flight():
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
        self._proposing = r if pool else None
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
        self._lanes["p"].append(entry)
        r.entries += 1
        self._open.add(r)
        if getattr(author, "name", "") == "search":
            order = self.bandit.order(sorted(author.tactics), rng)
            self._submit(entry, "propose", {"parent": self._kernel_bytes(parent), "genome": parent["genome"],
                                            "order": order, "rng": rng.getstate(), "known_n": self._known_n()})
        else:  # an LLM: its proposals, made here; their checks follow at the commit
            ctx = Context(rng, lambda k: not self.store.has_hash(ir_hash(k)))
            entry.value, entry.done = {"proposals": author.propose(self._parent(parent), ctx)}, True

    def _resume_attempt(self, entry, result):
        job = dict(entry.job, order=entry.job["order"][result["pos"] + 1:], rng=result["rng"], known_n=self._known_n())
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
            self._check_entry(r, self._insert(r, parent, v["child"], v["tactic"], "search"))
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
        self._proposing = None
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
        spec = self._checks.pop(row["ir_hash"], None)
        if isinstance(spec, tuple):  # checked ahead already
            entry.job, entry.value, entry.done = spec[2], spec[1], True
        elif spec is not None:  # being checked ahead
            self._waiting[row["ir_hash"]] = entry
        else:
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
        plan = self.plan(rows, self._ranked_visible(1))
        r.predicted = []
        for row, measure in plan:
            if not measure:
                self._append(_Entry("prune", r, row["id"], done=True))
                continue
            why = self.exhausted()
            if why:
                return why
            self.events.emit("assess", id=row["id"], stage="measure")
            self._seq += 1
            self._outstanding += 1
            self._compile(_Chain(self._seq, r, row, self._epoch))
        for row, measure in plan:
            if not measure:  # its prefetched build, if any, is not needed
                pre = self._compiles.pop(row["ir_hash"], None)
                if pre is not None and not isinstance(pre, tuple):
                    self._prefetching.pop(pre, None)
        return None

    def _commit_prune(self, entry):
        row = self.store.candidate(entry.cid)
        self._record(row, assess.Outcome("pruned"), [(row["tactic"], bandit_mod.PRUNED)])
        return None

    def _arrive(self, ticket, result):
        """A compile or a measurement is back. A build goes on to its measurement; a measurement is recorded
        now (credited when it becomes visible); a build failure waits to be recorded then, with its repairs."""
        c = self._chains.pop(ticket)
        row = c.row
        if c.built is None:  # the compile
            if isinstance(result, Failed):
                result = {"compiled": None, "repairs": [], "outcome": assess.Outcome(
                    "failed", failures=[failure("build", result.kind, "", result.message, row["ir_hash"])])}
            c.built = result["outcome"]
            if result["compiled"] is None:
                c.repairs = result["repairs"]
                self._arrived.append(c)
                return
            job = {"compiled": result["compiled"], "kernel": self._kernel_bytes(row), "ir_hash": row["ir_hash"],
                   "label": "candidate %d" % row["id"]}
            self._chains[self.executor.submit("measure", job)] = c
            return
        if isinstance(result, Failed):
            result = assess.Outcome("failed", failures=[failure("runtime", result.kind, "", result.message,
                                                                row["ir_hash"])])
        out = result
        out.diagnostics = c.built.diagnostics + out.diagnostics
        if out.record is not None and not self.executor.records_measurements:
            results_log.append(self.evaluations_path, out.record)
        c.rewards = self.measure_rewards(row, out)
        self._record(row, out, c.rewards, credit=False)
        c.measured = True
        self._arrived.append(c)
        self._hidden.add(row["id"])
        self._hidden_fit += out.fitness_s is not None

    def _apply(self, limit):
        """Make the chains sent off under draw `limit` or earlier visible, in the order they were sent: a
        measurement is credited to the bandit; a build failure is recorded, with its repairs to check."""
        now = sorted((c for c in self._arrived if c.epoch <= limit), key=lambda c: c.seq)
        if not now:
            return
        self._arrived = [c for c in self._arrived if c.epoch > limit]
        for c in now:
            self._outstanding -= 1
            if not c.measured:
                row = self.store.candidate(c.row["id"])
                for cid in self._measured(row, c.built, self._new_repairs(row, c.repairs)):
                    self._check_entry(c.round, self.store.candidate(cid))
                continue
            for tactic, value in c.rewards:
                self._reward(tactic, value)
            self._hidden.discard(c.row["id"])
            self._hidden_fit -= self.store.candidate(c.row["id"])["fitness_s"] is not None

    evaluations_path = None  # where the driver appends measurement records an executor does not keep itself
