"""The protocol model: role programs executed on small concrete inputs, thread class by thread class.

For each input from inputs.Binder.scenarios (every symbolic loop running
t = 1, 2, ..., 2 * stages + 1 trips; docs/verifier_rules.md says why that
covers every reachable ring state), the model runs each role's thread classes
(threads.py) as coroutines:

- mbarriers: per slot a completed-phase count, pending arrivals, the
  transaction balance; arrive / expect_tx count one arrival per executing
  thread, TMA loads bring prod(box) * element size bytes; a phase completes
  when arrivals reach the declared count and the bytes balance. A wait of
  parity p passes once the barrier's current phase parity differs from p
  (try_wait.parity semantics). Waits by round derive parity via phases.py.
- named barriers (each index of an array its own) and block_sync release when all
  their threads have arrived;
  collective ops (.sync.aligned MMAs, ldmatrix, cross-thread reductions)
  rendezvous the classes sharing a warp or warpgroup.
- happens_before.py tracks happens-before: releases (arrive, commit, barrier
  completion) carry vector clocks that acquiring waits join.

The scheduler always steps the least advanced class (fewest ops executed)
that can move, so classes progress in near lockstep: a producer that does
not wait for releases overtakes its consumers the way it would on hardware.
The first defect ends the model (later states depend on it); scenarios are
reported in increasing trip count, so the defect is shown on the smallest input
that has it. Inputs that differ only in loop ends and branch conditions fork
from the longest one's run (forks.py). `run(ctx)` returns a ModelResult.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import oprefs
from compiler.verify import exprs, threads
from compiler.verify.protocol import forks, program, slots
from compiler.verify.protocol.data_ops import MMA_SYNC, DataOps
from compiler.verify.protocol.happens_before import (
    MMA_AGENT,
    STORE_AGENT,
    THREAD_AGENT,
    TMA_AGENT,
    Memory,
    Violation,
    join,
)
from compiler.verify.protocol.sync_ops import SyncOps, MbarrierArray, NamedBarrier

# Ops and loop trips executed, over all scenarios of a kernel, before the model gives up (a note says so).
# The corpus needs at most a few thousand; the bound keeps every verification fast.
MAX_STEPS = 50000
# Thread classes beyond this make the model too costly (conditions on `thread` values).
MAX_CLASSES = 64
# Stages beyond this are modelled as this many (resource rules reject such rings anyway).
MAX_STAGES = 8
# What _Runner.advance returns where inputs still to fork leave the run.
FORK = object()


class Skipped(Exception):
    """The model cannot run this kernel (too big, no valid input); the reason goes into a note."""


def least_advanced(runners):
    """(runner, limit): the least advanced class that can move (ties: declaration order) and the op count at
    which it stops being so (None when no other can move); (None, None) when none can move."""
    best = holder = None  # the least advanced movable class, and the next one
    for r in runners:
        if r.done or r.stuck:
            continue
        if best is None or r.count < best.count:
            best, holder = r, best
        elif holder is None or r.count < holder.count:
            holder = r
    if best is None:
        return None, None
    return best, None if holder is None else holder.count + (0 if best.index > holder.index else 1)


class ModelResult:
    """What the model found: a Violation or None, the inputs it ran, or why it was skipped."""

    def __init__(self, violation=None, scenarios=(), skipped=None):
        self.violation = violation
        self.scenarios = list(scenarios)  # [(t, env)] run, in order
        self.skipped = skipped


class _Rendezvous:
    __slots__ = ("expected", "arrived", "acc", "done", "left")

    def __init__(self, expected, agents):
        self.expected = expected
        self.arrived = set()
        self.acc = [0] * agents
        self.done = False
        self.left = set()

    def copy(self, same):
        new = _Rendezvous.__new__(_Rendezvous)
        new.expected, new.arrived, new.acc, new.done, new.left = (self.expected, set(self.arrived), self.acc,
                                                                   self.done, set(self.left))
        same[id(self)] = new
        return new


class _Runner:
    """One thread class executing its role's body."""

    __slots__ = ("index", "steps", "cls", "agent", "base", "env", "iters", "vc", "units", "body", "j", "loop", "trips",
                 "trip", "shadows", "forks", "frames", "scenarios", "varying", "forking", "pending", "done", "stuck", "waits",
                 "count", "mma_groups", "store_groups", "cp_groups", "init_fences", "regs_written", "regs_pending",
                 "named", "held", "last_full", "rounds", "acquired", "slot_values", "pieces", "spreads", "rv", "syncs",
                 "sync_reg")

    def __init__(self, index, cls, nodes, env, agents, steps, agent, memo, scenarios):
        self.index = index
        self.steps = steps  # [ops and loop trips executed], shared by all classes of the run
        self.cls = cls
        self.agent = agent  # THREAD_AGENT / TMA_AGENT / ... -> agent index
        self.base = agent[THREAD_AGENT]
        self.env = dict(env)
        self.env.update(cls.env)
        self.iters = []
        self.vc = [0] * agents
        self.units = {which: [0] * agents for which in agent if which != THREAD_AGENT}
        # Where its walk is (advance): the body and next index, the innermost loop (None in a branch's body), that
        # loop's trips (a range; None before its first), the trip it is on, the trips of inputs still to fork
        # (sid -> range) and the trips where they leave it (trip -> [sid]); the enclosing ones in `frames`.
        self.body, self.j, self.loop, self.trips, self.trip, self.shadows, self.forks = nodes, 0, None, None, -1, None, None
        self.frames = []
        self.scenarios = scenarios  # the inputs still to fork from this run (forks.py): sid -> their symbols' values
        self.varying = frozenset().union(*scenarios.values())  # the names they differ in
        self.forking = ()  # the inputs that leave this run where advance returned FORK
        self.pending = None
        self.done = False
        self.stuck = False  # blocked, and nothing it waits for changed since it last tried
        self.waits = ()  # what its blocked op waits for: the barrier states whose change may let it pass
        self.count = 0  # ops executed: the scheduler advances the least advanced class first
        self.mma_groups = []  # [(clock snapshot, register keys written)]
        self.store_groups = []  # [clock snapshot]
        self.cp_groups = []  # [[(location key, box, tile, path, op instance)]] in flight
        self.init_fences = []
        self.regs_written = set()
        self.regs_pending = {}  # register key -> path of the MMA still writing it
        self.named = {}  # (barrier array, index) -> (state, generation) of the named sync it is in
        self.held = {}  # pipeline -> slot -> [completion, released, path of the wait]: the ring slots it consumes
        self.last_full = {}  # pipeline -> path of its last wait on the ring's `full`
        self.rounds = {}  # op path -> (enclosing loop values, round) of its last round reference
        self.acquired = {}  # (mbarrier array, slot) -> the completion its last wait there observed
        self.slot_values = {}  # BarRef -> (ops executed, value): sync_ops.SyncOps.slot_value
        # What depends only on the class and the values it reads, kept across scenarios (Prepared.memo):
        # (Tile, writer unit, values of the names its window reads) -> the boxes it covers, and
        # (named-barrier op, values of the names its index reads) -> threads per barrier index.
        self.pieces, self.spreads = memo
        self.rv = None  # rendezvous key this class is registered at
        self.syncs = 0  # block_syncs completed
        self.sync_reg = None

    def tick(self):
        self.vc[self.base] += 1
        return self.vc[self.base]

    def copy(self, model, sid, values, same):
        """This class's copy in `model` (Model.copy) for input `sid`, running on under `values`: each loop it is in
        takes that input's trips (recorded when it entered the loop)."""
        new = _copy_runner(self)  # then what ops change in place is copied
        new.steps = model.steps
        new.env = dict(self.env)
        new.env.update(values)
        new.iters = list(self.iters)
        new.vc = list(self.vc)
        new.units = dict(self.units)
        if self.shadows is not None and sid in self.shadows:
            new.trips = self.shadows[sid]
        new.shadows = new.forks = None
        new.frames = [(body, j, loop, shadows[sid] if shadows is not None and sid in shadows else trips, trip, None,
                       None) for body, j, loop, trips, trip, shadows, _ in self.frames]
        new.scenarios, new.varying, new.forking = model.scenarios, frozenset(), ()
        new.waits = tuple(same.get(id(w), w) for w in self.waits)  # (a state no longer in use stays as it is)
        new.mma_groups = list(self.mma_groups)
        new.store_groups = list(self.store_groups)
        new.cp_groups = list(self.cp_groups)
        new.init_fences = list(self.init_fences)
        new.regs_written = set(self.regs_written)
        new.regs_pending = dict(self.regs_pending)
        new.named = {key: (same[id(b)], gen) for key, (b, gen) in self.named.items()}
        new.held = {p: {slot: list(h) for slot, h in slots.items()} for p, slots in self.held.items()}
        new.last_full = dict(self.last_full)
        new.rounds = dict(self.rounds)
        new.acquired = dict(self.acquired)
        new.slot_values = dict(self.slot_values)
        return new

    def advance(self):
        """The next op this class executes, None once it finished, or FORK where the inputs still to fork
        (forks.py) leave this run. Loops and branches are walked here with an explicit stack of enclosing bodies
        (`frames`), so that forks.py can copy a class mid-walk; a loop's bounds are evaluated when its first trip
        is decided."""
        body, j = self.body, self.j
        if j < len(body):  # the common case: the next op of the body
            n = body[j]
            if not n.control:
                self.j = j + 1
                return n
        env = self.env
        while True:
            if j < len(body):
                n = body[j]
                j += 1
                k = n.kind
                if k == "loop":
                    self.frames.append((body, j, self.loop, self.trips, self.trip, self.shadows, self.forks))
                    self.iters.append(0)
                    body, j = n.body, len(n.body)
                    self.loop, self.trips, self.trip, self.shadows, self.forks = n, None, -1, None, None
                elif k == "branch":
                    for name, key in n.scalar_reads:
                        if key not in self.regs_written:
                            raise Violation("uninit_read", n.path,
                                            "the condition reads register `%s` before anything has written it" % name)
                    if self.scenarios and not n.cond_names.isdisjoint(self.varying) and self.parts(n):
                        self.body, self.j = body, j - 1  # the copies decide the branch themselves
                        return FORK
                    try:
                        taken = n.cond(env)
                    except exprs.ExprError as e:
                        raise Violation("undefined", n.path, "branch condition has no value here (%s)" % e)
                    arm = n.then if taken else n.els
                    if arm:  # (an empty arm: nothing to walk, and its frame would be popped as pushed)
                        self.frames.append((body, j, self.loop, self.trips, self.trip, self.shadows, self.forks))
                        body, j = arm, 0
                        self.loop = None
                else:
                    self.body, self.j = body, j
                    return n
                continue
            loop = self.loop
            if loop is not None:  # the end of a loop's body: its next trip, or out of it
                trip = self.trip + 1
                if trip == 0:
                    if not self.scenarios:
                        self.trips = bounds(loop, env)
                    else:
                        self.body, self.j = body, j
                        if self.enter(loop):
                            return FORK
                elif self.forks is not None and trip in self.forks:
                    live = [s for s in self.forks[trip] if s in self.scenarios]
                    if live:
                        self.body, self.j, self.forking = body, j, live
                        return FORK
                trips = self.trips
                if trip < len(trips):
                    self.steps[0] += 1
                    if self.steps[0] > MAX_STEPS:
                        raise Skipped("the model stopped after %d steps" % MAX_STEPS)
                    self.trip = trip
                    v = trips[trip]
                    env[loop.var] = v
                    if loop.counter:
                        env[loop.counter] = trip
                    self.iters[-1] = v
                    j = 0
                    continue
                self.iters.pop()
            if not self.frames:
                self.body, self.j = body, j
                return None
            body, j, self.loop, self.trips, self.trip, self.shadows, self.forks = self.frames.pop()

    def enter(self, loop):
        """Evaluate the bounds of `loop`, entered now, and see where the inputs still to fork leave it: True
        when some leave it here (self.forking), before it has bounds; else it records the trips they leave it
        at (self.forks) and their own trips (self.shadows, which their forks take)."""
        try:
            trips = bounds(loop, self.env)
        except Violation as v:
            trips = v
        shadows, forks, now = {}, {}, []
        for sid, delta in self.scenarios.items():
            if loop.end_names.isdisjoint(delta):
                continue  # the same trips
            scope = dict(self.env)
            scope.update(delta)
            try:
                theirs = bounds(loop, scope)
            except Violation:
                now.append(sid)
                continue
            if isinstance(trips, Violation):
                now.append(sid)
            elif len(theirs) != len(trips):  # the same start and step: they part at the shorter's end
                at = min(len(theirs), len(trips))
                if at == 0:
                    now.append(sid)
                else:
                    shadows[sid] = theirs
                    forks.setdefault(at, []).append(sid)
        if now:
            self.forking = now
            return True
        if isinstance(trips, Violation):
            raise trips
        self.trips = trips
        self.shadows, self.forks = shadows or None, forks or None
        return False

    def parts(self, branch):
        """Whether some inputs still to fork take the other arm of `branch` (or its condition has no value for
        them or here): then they leave here (self.forking), before it is decided."""
        try:
            taken = bool(branch.cond(self.env))
        except exprs.ExprError:
            taken = None
        now = []
        for sid, delta in self.scenarios.items():
            if branch.cond_names.isdisjoint(delta):
                continue
            scope = dict(self.env)
            scope.update(delta)
            try:
                theirs = bool(branch.cond(scope))
            except exprs.ExprError:
                theirs = None
            if theirs is None or theirs != taken:
                now.append(sid)
        self.forking = now
        return bool(now)


_copy_runner = slots.copier(_Runner)


def bounds(loop, env):
    """The values a loop's variable takes under env (a range); a Violation when its bounds have none."""
    try:
        start, end = loop.start(env), loop.end(env)
        step = loop.step(env) if loop.step is not None else 1
        if loop.persistent:
            start, step = start + env["block.x"], env["grid.x"]
    except exprs.ExprError as e:
        raise Violation("undefined", loop.path, "loop bounds have no value here (%s)" % e)
    if step <= 0:
        raise Violation("undefined", loop.path, "loop step %d is not positive" % step)
    # No run gets past MAX_STEPS trips (each costs a step), and len() of a range longer than sys.maxsize raises:
    # the trips past the budget are cut off.
    return range(start, min(end, start + (MAX_STEPS + 1) * step), step)


class Prepared:
    """What every scenario of one kernel shares: compiled roles, thread classes, who writes what."""

    def __init__(self, ctx, roles, classes):
        self.roles = roles
        self.classes = classes
        for nodes, _, _ in roles:
            _bind(nodes)
        self.writers = _writer_roles(ctx)
        self.groups = _partner_groups(classes)
        self.memo = [({}, {}) for _ in classes]  # per class: its runners' pieces and spreads, in every scenario
        self.tma_filled = set()  # (region, mbarrier array) of every TMA load
        for site in ctx.sites("tma_load"):
            region, bar = ctx.regions.get(site.msg.dst.region), ctx.barriers.get(site.msg.barrier.barrier)
            if region is not None and bar is not None:
                self.tma_filled.add((region[0], bar[0]))
        self.agents, self.agent_class = [], []  # class -> {unit: agent}; agent -> class of its threads or -1
        units = [_units(nodes) for nodes, _, _ in roles]
        for i, c in enumerate(classes):
            agent = {THREAD_AGENT: len(self.agent_class)}
            self.agent_class.append(i)
            for which in sorted(units[c.role_index]):
                agent[which] = len(self.agent_class)
                self.agent_class.append(-1)
            self.agents.append(agent)


class Model(DataOps, SyncOps):
    """One scenario's execution state."""

    def __init__(self, ctx, prepared, env, steps, chooser=None, scenarios=None):
        self.ctx = ctx
        self.chooser = chooser  # a random.Random choosing the schedule (tests); None: the least advanced class first
        self.kernel = ctx.kernel
        classes = prepared.classes
        self.agents = len(prepared.agent_class)
        self.steps = steps  # [steps so far]
        # The inputs still to fork from this run (forks.py: sid -> their symbols' values where they differ), what
        # each forked one found (sid -> (Violation, Skipped or None, steps)), and a check run after each fork (it
        # may end this run early: forks.settle).
        self.scenarios = scenarios if scenarios is not None else {}
        self.outcomes = {}
        self.settled = None
        self.runners = [
            _Runner(i, c, prepared.roles[c.role_index][0], env, self.agents, self.steps, prepared.agents[i],
                    prepared.memo[i], self.scenarios)
            for i, c in enumerate(classes)
        ]
        self.arrays = {}
        for i, b in enumerate(self.kernel.barriers):
            if b.kind == ir_pb2.BARRIER_KIND_MBARRIER:
                self.arrays[i] = MbarrierArray(b, "kernel.barriers[%d]" % i)
        self.named = {}  # (barrier array, index) -> NamedBarrier
        self.named_names = {}  # (barrier array, index) -> its name in messages (sync_ops.SyncOps.named_name)
        self.block = NamedBarrier(len(classes), self.agents)
        self.rendezvous = {}
        self.proxy_fences = [[] for _ in classes]
        self.peer_syncs = [0] * len(classes)
        self.memory = Memory(
            self.proxy_fences, [r.name for r in self.kernel.regions], [c.weight for c in classes], self.peer_syncs,
            prepared.agent_class,
        )
        self.clusters = any(c > 1 for c in self.kernel.launch.cluster)
        self.full_of, self.empty_of = {}, {}  # mbarrier array -> the pipeline it fills / releases
        for i, p in enumerate(self.kernel.pipelines):
            for table, name in ((self.full_of, p.full), (self.empty_of, p.empty)):
                hit = ctx.barriers.get(name)
                if hit is not None:
                    table.setdefault(hit[0], i)
        self.deferred = None  # a finding that waits for the end of the run (sync_ops.SyncOps.complete)
        self.tma_filled = prepared.tma_filled
        self.writers = prepared.writers
        self.groups = prepared.groups
        self.woken = []  # barrier states the op being executed moved (blocked classes waiting on them may pass)

    # -- scheduling ------------------------------------------------------------

    def pick(self):
        """(class, budget, limit) of the class to run next: the least advanced one that can move (ties: declaration
        order), until it is more advanced than the next one (as advanced, when declared after it): `limit` ops
        executed, no budget; under a random schedule, any class that can move, for `budget` ops. None once every
        class finished (and the end checks passed); raises the Violation when some are blocked and none can move."""
        best, limit = least_advanced(self.runners)
        if best is None:
            if all(r.done for r in self.runners):
                self.finish()
                return None
            self.diagnose()
        if self.chooser is not None:  # another interleaving: any class that can move, for a few ops
            r = self.chooser.choice(self.lockstep([x for x in self.runners if not (x.done or x.stuck)]))
            return r, self.chooser.randint(1, 12), limit
        return best, None, limit

    def run(self, resume=None):
        """Step the least advanced class that can move (ties: declaration order) until all finish or none can.
        `resume`: (class index, limit) of the class a fork of this state was running (copy)."""
        runners = self.runners
        steps = self.steps
        woken = self.woken  # one list, filled by the op being executed, emptied after it
        chooser = self.chooser
        while True:
            if resume is not None:
                r, budget, limit = runners[resume[0]], None, resume[1]
                resume = None
            elif chooser is None:  # pick()'s choice without its end checks (once per op executed)
                r, limit = least_advanced(runners)
                if r is None:  # every class finished (pick checks the end) or is blocked (it raises)
                    self.pick()
                    return
                budget = None
            else:
                picked = self.pick()
                if picked is None:
                    return
                r, budget, limit = picked
            # Run `r` until another class is less advanced (or ties and comes first), it blocks, or state changes.
            while True:
                node = r.pending
                if node is None:
                    body, j = r.body, r.j  # advance's common case, inline: the next op of the body
                    if j < len(body) and not body[j].control:
                        node = body[j]
                        r.j = j + 1
                    else:
                        node = r.advance()
                        if node is FORK:
                            self.split(r, limit)
                            continue
                        if node is None:
                            r.done = True
                            break
                try:
                    ok = node.run(self, r, node)  # its handler, or execute for a collective op (_bind)
                except exprs.ExprError as e:
                    raise Violation("undefined", node.path, "an expression of this op has no value here (%s)" % e)
                if ok:
                    r.pending = None
                    r.count += 1
                    steps[0] += 1
                    if steps[0] > MAX_STEPS:
                        raise Skipped("the model stopped after %d steps" % MAX_STEPS)
                else:
                    r.pending = node
                    r.stuck = True
                if woken:  # barrier state moved: classes blocked on it may pass now
                    for x in runners:
                        # A blocked op's retry passes, or fails without effect, unless what it waits for moved
                        # (sync_ops, meet): wake only those. A random schedule wakes every class, as it chooses
                        # among the classes that can move.
                        if x.stuck:
                            if self.chooser is not None:
                                x.stuck = False
                                continue
                            for w in x.waits:
                                if w in woken:
                                    x.stuck = False
                                    break
                    woken.clear()
                    break
                if budget is not None:
                    budget -= 1
                    if not ok or budget <= 0:
                        break
                elif not ok or (limit is not None and r.count >= limit):
                    break  # another class is less advanced now (or as advanced, and declared first)

    # -- forks (forks.py) ----------------------------------------------------------

    def outcome(self, resume=None):
        """(Violation, Skipped or None, the step count at the end): run to the end."""
        try:
            self.run(resume)
        except (Violation, Skipped) as e:
            return e, self.steps[0]
        return None, self.steps[0]

    def split(self, r, limit):
        """Class r (running for `limit` ops) decides a loop's trips here differently for the inputs r.forking: run
        each of them on from a copy of this state, then carry on (unless that settles the model)."""
        for sid in r.forking:
            self.outcomes[sid] = self.copy(sid, self.scenarios.pop(sid)).outcome((r.index, limit))
        r.forking = ()
        self.settled(self.outcomes)

    def copy(self, sid, values):
        """A copy of this state that runs on as input `sid` under `values` (symbol -> value where its input differs) and forks
        nothing. What ops only read (the kernel, compiled bodies, caches keyed by the values they depend on) is
        shared; the barrier states blocked classes wait on are mapped to their copies (`same`)."""
        new = Model.__new__(Model)
        new.__dict__.update(self.__dict__)
        new.steps = [self.steps[0]]
        new.scenarios, new.outcomes, new.settled = {}, {}, None
        new.woken = []  # (empty between ops)
        same = {}
        new.arrays = {i: a.copy(same) for i, a in self.arrays.items()}
        new.named = {key: b.copy(same) for key, b in self.named.items()}
        new.block = self.block.copy(same)
        new.rendezvous = {key: rv.copy(same) for key, rv in self.rendezvous.items()}
        new.proxy_fences = [list(f) for f in self.proxy_fences]
        new.peer_syncs = list(self.peer_syncs)
        new.memory = self.memory.copy(new.proxy_fences, new.peer_syncs)
        new.runners = [r.copy(new, sid, values, same) for r in self.runners]
        return new

    def lockstep(self, movable):
        """The movable classes no movable class of one of their warps is behind: the lanes of a warp run one
        instruction stream, so a random schedule does not let some of them run ahead of the others."""
        behind = {}
        for x in movable:
            for w in x.cls.warps:
                key = (x.cls.role_index, w)
                behind[key] = min(behind.get(key, x.count), x.count)
        return [x for x in movable if all(behind[(x.cls.role_index, w)] >= x.count for w in x.cls.warps)]

    def execute(self, r, node):
        if not node.collective:
            return node.handler(self, r, node)
        group = self.groups[node.collective][r.index]
        if len(group) == 1:  # nobody to meet
            return node.handler(self, r, node)
        # A collective op's effect is per class (it never blocks); then the classes sharing its unit meet,
        # so what each one retired or wrote is known to all of them afterwards.
        key = (node.path, tuple(r.iters), group)  # the rendezvous of this op instance for the classes sharing r's unit
        if r.rv != key:
            node.handler(self, r, node)
        return self.meet(r, node, key)

    # -- collectives ------------------------------------------------------------

    def inst(self, r, node):
        return (node.path, tuple(r.iters))

    def meet(self, r, node, key):
        """Rendezvous of the classes that share the op's unit at `key` (execute's); True once all of them are here."""
        rv = self.rendezvous.get(key)
        if rv is None:
            rv = self.rendezvous[key] = _Rendezvous(key[2], self.agents)
        if r.index not in rv.arrived:
            # The first arrival's join with the zero clock is a copy (clocks never go below 0).
            rv.acc = join(rv.acc, r.vc) if rv.arrived else list(r.vc)
            rv.arrived.add(r.index)
            r.rv = key
            if rv.arrived >= rv.expected:
                rv.done = True
                self.woken.append(rv)
        if not rv.done:
            r.waits = (rv,)
            return False
        r.vc = list(rv.acc)  # join(r.vc, rv.acc): rv.acc holds r's clock on arrival, which has not moved since
        r.rv = None
        rv.left.add(r.index)
        if rv.left >= rv.expected:
            del self.rendezvous[key]
        return True

    # -- the end ----------------------------------------------------------------

    def finish(self):
        """After every class finished: no phase may be left half-arrived or short of bytes, every fill waited for,
        no cp.async in flight; then what waited for the end of the run (sync_ops.SyncOps.complete)."""
        for array in self.arrays.values():
            for index in sorted(array.slots):
                s = array.slots[index]
                if s.pending != array.arrivals and s.arrives and s.pending:
                    raise Violation(
                        "arrival_count", s.arrives[-1],
                        "`%s`[%d] is left with %d of its %d arrivals: the arrivals per round do not match its count"
                        % (array.decl.name, index, array.arrivals - s.pending, array.arrivals),
                        (("`%s` is declared here" % array.decl.name, array.path),),
                    )
                if s.pending == 0 and s.tx:
                    self.incomplete(array, index, s)
        for key, b in sorted(self.named.items()):
            if b.arrived:
                raise self.named_blame(b, key) or Violation(
                    "arrival_count", b.who[-1][0],
                    "named barrier `%s` is left with %d of its %d threads arrived"
                    % (self.named_name(key), b.arrived, b.threads),
                )
        self.drained()
        if self.deferred is not None:
            raise self.deferred

    def drained(self):
        """Raise when the block exits with loads in flight: a TMA fill nothing waited for, or cp.async copies no
        cp_async_wait retired."""
        for a in sorted(self.arrays):
            array = self.arrays[a]
            for index in sorted(array.slots):
                s = array.slots[index]
                for c in range(s.seen, s.ph):
                    _, _, loads, _ = s.history[c]
                    if loads:
                        raise self.undrained(a, array, index, c, loads[-1])
        for r in self.runners:
            group = next((g for g in r.cp_groups if g), None)
            if group is not None:
                raise Violation(
                    "ring_drain", group[0][3],
                    "issues cp.async copies that no cp_async_wait retires: they are still in flight when the block "
                    "exits (a prefetch past the last round?)",
                    (),
                    "Wait for every cp.async group before the block exits (cp_async_wait with pending 0 after the "
                    "last round), and prefetch only rounds that are consumed.",
                )

    def undrained(self, a, array, index, completion, load):
        """The finding for fills of `array`[index] beyond `completion` that nothing waits for."""
        name = array.decl.name
        filled = sum(s.ph for s in array.slots.values())
        waited = sum(s.seen for s in array.slots.values())
        p = self.full_of.get(a)
        what = "ring `%s`" % self.kernel.pipelines[p].name if p is not None else "`%s`" % name
        notes = [("the load nobody waits for", load)]
        wait = next((site.path for site in self.ctx.sites("mbarrier_wait") if site.msg.barrier.barrier == name), None)
        if wait is not None:
            notes.append(("the waits on `%s`" % name, wait))
        notes.append(("`%s` is declared here" % name, array.path))
        return Violation(
            "ring_drain", _enclosing_loop(load),
            "fills round %d of %s (`%s`[%d]), which nothing waits for: %d rounds are filled but %d waited for, so the "
            "last loads are still in flight when the block exits" % (completion * array.count + index, what, name,
                                                                      index, filled, waited),
            notes,
            "Run this loop over exactly the rounds the consumers wait for (the same trip count), so that every fill "
            "is waited for before the block exits.",
        )

    def overfilled(self, blocked):
        """A producer blocked refilling a ring whose consumers finished after releasing every round they consumed:
        it runs more rounds than they drain (rather than a deadlock of the protocol). The Violation, or None."""
        for r in blocked:
            node = r.pending
            p = self.empty_of.get(node.bar.array) if node.kind == "mbarrier_wait" else None
            if p is None:
                continue
            ring = self.kernel.pipelines[p]
            consumers = {self.ctx.roles[c][0] for c in ring.consumers if c in self.ctx.roles}
            users = [x for x in self.runners if x.cls.role_index in consumers]
            if not users or not all(x.done for x in users):
                continue
            full, empty = self.ctx.barriers.get(ring.full), self.ctx.barriers.get(ring.empty)
            if full is None or full[0] not in self.arrays or empty[0] not in self.arrays:
                continue
            waited = sum(s.seen for s in self.arrays[full[0]].slots.values())
            if sum(s.ph for s in self.arrays[empty[0]].slots.values()) < waited:
                continue  # a consumed round was never released: a missing release, the deadlock's own finding
            return Violation(
                "ring_drain", _enclosing_loop(node.path),
                "waits to refill a slot of ring `%s` for round %d, but its consumers finished after %d rounds: this "
                "loop runs more rounds than they drain" % (ring.name, self.slot_value(r, node.bar), waited),
                (("the wait that never passes", node.path), ("ring `%s` is declared here" % ring.name,
                                                            "kernel.pipelines[%d]" % p)),
                "Run this loop over exactly the rounds the consumers wait for (the same trip count).",
            )
        return None

    def diagnose(self):
        """No class can move: name the cause (see docs/verifier_rules.md for the order)."""
        blocked = [r for r in self.runners if not r.done]
        finished = [r for r in self.runners if r.done]
        for r in blocked:
            node = r.pending
            if node.collective and r.rv is not None:
                rv = self.rendezvous[r.rv]
                for m in sorted(rv.expected - rv.arrived):
                    other = self.runners[m]
                    if other.done or (other.pending is not None and other.pending.collective and other.rv != r.rv):
                        where = other.pending.path if not other.done else self.ctx.role_path(other.cls.role_index)
                        raise Violation(
                            "divergence", node.path,
                            "only part of its %s reaches this collective op; the other threads are elsewhere"
                            % node.collective,
                            (("where the other threads are", where),),
                        )
        for r in blocked:
            if r.pending.kind == "block_sync" and finished:
                f = finished[0]
                raise Violation(
                    "block_sync_count", r.pending.path,
                    "waits at block_sync %d, but role `%s` finished after %d block_syncs"
                    % (r.syncs + 1, self.kernel.roles[f.cls.role_index].name, f.syncs),
                    (("the role that finished", self.ctx.role_path(f.cls.role_index)),),
                )
        for r in blocked:
            node = r.pending
            if node.kind != "mbarrier_wait":
                continue
            array, index = self.mbarrier(r, node.bar, node, r.vc)
            self.incomplete(array, index, array.slots[index])
        for r in blocked:
            for key, (b, gen) in sorted(r.named.items()):
                if b.gen <= gen:
                    blame = self.named_blame(b, key)
                    if blame is not None:
                        raise blame
        over = self.overfilled(blocked)
        if over is not None:
            raise over
        first = blocked[0].pending
        others = sorted({r.pending.path for r in blocked} - {first.path})
        notes = [("also blocked", path) for path in others[:3]]
        name = getattr(getattr(first, "bar", None), "name", None)
        if name:
            notes.append(("`%s` is declared here" % name, self.ctx.barrier_path(name)))
        what = "the barrier it waits on"
        r = blocked[0]
        if first.kind == "mbarrier_wait":
            array, index = self.mbarrier(r, first.bar, first, r.vc)
            what = "phase %d of `%s`[%d] to complete" % (array.slots[index].ph, first.bar.name, index)
        elif first.kind == "named_barrier_sync":
            for key, (b, gen) in r.named.items():
                if b.gen <= gen:
                    what = "named barrier `%s` (%d of its %d threads arrived)" % (self.named_name(key), b.arrived, b.threads)
                    break
        raise Violation(
            "deadlock", first.path,
            "waits forever for %s: every thread of the block is blocked or finished, so nothing will" % what,
            notes,
        )


def _enclosing_loop(path):
    """The innermost loop op around the op at `path` (its own path when no loop encloses it)."""
    i = path.rfind(".loop.body[")
    return path[: i + len(".loop")] if i >= 0 else path


def _units(nodes):
    """The asynchronous units a role's body uses."""
    found, stack = set(), list(nodes)
    while stack:
        n = stack.pop()
        if n.kind == "loop":
            stack += n.body
        elif n.kind == "branch":
            stack += n.then + n.els
        elif n.kind == "tma_load":
            found.add(TMA_AGENT)
        elif n.kind == "tma_store":
            found.add(STORE_AGENT)
        elif n.kind == "mma" and n.mkind != MMA_SYNC:
            found.add(MMA_AGENT)
    return found


def _noop(model, r, node):
    return True


def _bind(nodes):
    """Give every op node its Model method (op_<kind>; ops without one do nothing in the model)."""
    for n in nodes:
        if n.kind == "loop":
            _bind(n.body)
        elif n.kind == "branch":
            _bind(n.then)
            _bind(n.els)
        else:
            n.handler = _HANDLERS.get(n.kind, _noop)
            n.run = n.handler if n.collective is None else Model.execute  # what the scheduler calls


# op kind -> its Model method (op_<kind>), for the kinds that have one (a table: a getattr that misses raises).
_HANDLERS = {name[3:]: getattr(Model, name) for name in dir(Model) if name.startswith("op_")}


def _writer_roles(ctx):
    """Region index -> roles that write it (to tell a race from a read of never-written data)."""
    out = {}
    for site in ctx.ops:
        for u in ctx.operands(site):
            hit = u.hit
            if hit and u.access != oprefs.R:
                out.setdefault(hit[0], set()).add(site.role_index)
    return out


def _partner_groups(classes):
    """unit -> class index -> frozenset of the classes that must rendezvous with it (connected by shared units)."""
    out = {}
    for unit in ("warp", "warpgroup", "role"):
        parent = list(range(len(classes)))

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        owner = {}
        for i, c in enumerate(classes):
            ids = {"warp": c.warps, "warpgroup": c.warpgroups, "role": {0}}[unit]
            for u in ids:
                k = (c.role_index, u)
                if k in owner:
                    parent[find(i)] = find(owner[k])
                else:
                    owner[k] = i
        groups = {}
        for i in range(len(classes)):
            groups.setdefault(find(i), set()).add(i)
        out[unit] = [frozenset(groups[find(i)]) for i in range(len(classes))]
    return out


# The op kinds whose message has a `barrier` field holding a BarrierRef.
_BARRIER_REF_KINDS = frozenset(
    f.name for f in ir_pb2.Op.DESCRIPTOR.oneofs_by_name["kind"].fields
    if "barrier" in f.message_type.fields_by_name
    and f.message_type.fields_by_name["barrier"].message_type is ir_pb2.BarrierRef.DESCRIPTOR)


def max_trips(ctx):
    """2 * S + 1 for the deepest ring S (pipelines, staged regions, barrier arrays addressed by round)."""
    depth = 1
    for p in ctx.kernel.pipelines:
        depth = max(depth, p.stages)
    for r in ctx.kernel.regions:
        depth = max(depth, r.stages)
    for site in ctx.ops:
        # (only the kinds whose `barrier` is a BarrierRef: a getattr that misses on a message raises)
        ref = site.msg.barrier if site.kind in _BARRIER_REF_KINDS and site.msg is not None else None
        if isinstance(ref, ir_pb2.BarrierRef) and ref.WhichOneof("slot") == "round":
            b = ctx.barrier(ref.barrier)
            if b is not None:
                depth = max(depth, b.count)
    return 2 * min(depth, MAX_STAGES) + 1


def run(ctx, chooser=None):
    """Model-check the kernel; a ModelResult (violation or clean, scenarios run, or why skipped). `chooser` (a
    random.Random) schedules the classes at random instead: the findings must not depend on the schedule."""
    if not ctx.block_threads_in_range:
        return ModelResult(skipped="the block has %d threads" % ctx.block_threads)
    roles, read = program.compile_roles(ctx)
    classes = []
    for i, (nodes, conds, values) in enumerate(roles):
        classes += threads.role_classes(i, ctx.spans[i].threads, conds, values)
        if len(classes) > MAX_CLASSES:
            return ModelResult(skipped="more than %d thread classes" % MAX_CLASSES)
    for i, c in enumerate(classes):
        c.index = i
    scenarios = ctx.binder.scenarios(max_trips(ctx))
    if not scenarios:
        return ModelResult(skipped="no valid input satisfies the contract")
    prepared = Prepared(ctx, roles, classes)
    # Data-dependent conditions (program.py) hold everywhere, then nowhere: each input runs under both.
    data = any(ctx.data_names(s.msg.cond, s.role_index) for s in ctx.sites("branch"))
    policies = (1, 0) if data else (None,)
    runs = [(t, env if policy is None else dict(env, **{program.DATA: policy}))
            for t, env in scenarios for policy in policies]
    # Inputs that differ only in loop ends and branch conditions fork from the longest one's run (forks.py); random
    # schedules run each alone.
    groups = forks.groups(runs, read) if chooser is None else {}
    base_of = {m: base for base, members in groups.items() for m in members}
    outcomes, total = {}, 0  # run index -> (Violation, Skipped or None, steps it took)
    for k in range(len(runs)):
        if k not in outcomes:
            base = base_of.get(k, k)
            members = {m: values for m, values in groups.get(base, {}).items() if m not in outcomes}
            # The run settles once it found what the inputs before the next one it does not serve found.
            upto = next((i for i in range(k, len(runs)) if i != base and i not in members), len(runs))
            outcomes.update(_run_group(ctx, prepared, runs, base, members, upto, total, chooser))
        found, steps = outcomes[k]
        total += steps
        if total > MAX_STEPS:  # (a Skipped run took more steps than the budget left)
            return ModelResult(scenarios=runs[:k + 1], skipped="the model stopped after %d steps" % MAX_STEPS)
        if found is not None:
            return ModelResult(violation=found, scenarios=runs[:k + 1])
    return ModelResult(scenarios=runs)


def _run_group(ctx, prepared, runs, base, members, upto, total, chooser):
    """{run index: (Violation, Skipped or None, steps)} of run `base` and of the runs `members` that fork from it,
    as far as those before `upto` need (the rest wait for another run), `total` steps spent before (a run stops
    once the budget is spent, as when they ran in turn)."""
    model = Model(ctx, prepared, runs[base][1], [total], chooser, dict(members))
    needed = [m for m in sorted(members) + [base] if m < upto]
    model.settled = lambda outcomes: forks.settle(needed, outcomes)
    out = {}
    try:
        found, steps = model.outcome()
    except forks.Settled:  # what the inputs before `upto` find is known (or an earlier one's finding ends the model)
        pass
    else:
        for m in [base] + list(model.scenarios):  # the base, and the inputs that never parted from it
            out[m] = (found, steps - total)
    for m, (f, steps) in model.outcomes.items():
        out[m] = (f, steps - total)
    return out
