"""The protocol model: role programs executed on small concrete inputs, thread class by thread class.

For each input from binding.Binder.scenarios (every symbolic loop running
t = 1, 2, ..., 2 * stages + 1 trips; docs/verifier_rules.md says why that
covers every reachable ring state), the model runs each role's thread classes
(threads.py) as coroutines:

- mbarriers: per slot a completed-phase count, pending arrivals, the
  transaction balance; arrive / expect_tx count one arrival per executing
  thread, TMA loads bring prod(box) * element size bytes; a phase completes
  when arrivals reach the declared count and the bytes balance. A wait of
  parity p passes once the barrier's current phase parity differs from p
  (try_wait.parity semantics). Waits by round derive parity via phases.py.
- named barriers and block_sync release when all their threads have arrived;
  collective ops (.sync.aligned MMAs, ldmatrix, cross-thread reductions)
  rendezvous the classes sharing a warp or warpgroup.
- memory.py tracks happens-before: releases (arrive, commit, barrier
  completion) carry vector clocks that acquiring waits join.

The scheduler always steps the least advanced class (fewest ops executed)
that can move, so classes progress in near lockstep: a producer that does
not wait for releases overtakes its consumers the way it would on hardware.
The first defect ends the model (later states depend on it); scenarios run in
increasing trip count, so the defect is shown on the smallest input that has
it. `run(ctx)` returns a ModelResult.
"""

from cake.ir.v1 import ir_pb2

from compiler.verify import exprs, phases, program, threads
from compiler.verify.memory import Memory, Violation

# Ops and loop trips executed, over all scenarios of a kernel, before the model gives up (a note says so).
# The corpus needs at most a few thousand; the bound keeps every verification fast.
MAX_STEPS = 50000
# Thread classes beyond this make the model too costly (conditions on `thread` values).
MAX_CLASSES = 64
# Stages beyond this are modelled as this many (resource rules reject such rings anyway).
MAX_STAGES = 8
# A class's agents: its threads, and the asynchronous units its role uses (TMA loads, MMAs, TMA stores).
THREAD_AGENT, TMA_AGENT, MMA_AGENT, STORE_AGENT = range(4)
MMA_SYNC = ir_pb2.MMA_KIND_MMA_SYNC


class Skipped(Exception):
    """The model cannot run this kernel (too big, no valid input); the reason goes into a note."""


class ModelResult:
    """What the model found: a Violation or None, the inputs it ran, or why it was skipped."""

    def __init__(self, violation=None, scenarios=(), skipped=None):
        self.violation = violation
        self.scenarios = list(scenarios)  # [(t, env)] run, in order
        self.skipped = skipped


def _join(a, b):
    return [x if x >= y else y for x, y in zip(a, b)]


class _Slot:
    """One mbarrier: completed phases, what the current phase still needs, who contributed."""

    __slots__ = ("ph", "pending", "tx", "acc", "last", "arrives", "expects", "loads", "expected")

    def __init__(self, arrivals, agents):
        self.ph = 0
        self.last = [0] * agents
        self.reset(arrivals, agents)

    def reset(self, arrivals, agents):
        self.pending = arrivals
        self.tx = 0  # expected minus delivered bytes
        self.acc = [0] * agents
        self.arrives, self.expects, self.loads = [], [], []
        self.expected = 0


class _Array:
    """An mbarrier array: its declaration, initialisation and slots."""

    def __init__(self, decl, path):
        self.decl = decl
        self.path = path
        self.arrivals = max(1, decl.arrivals)
        self.count = max(1, decl.count)
        self.init = None  # (agent, time, class, path) of the initialisation
        self.slots = {}


class _Named:
    """A named barrier (or block_sync): arrivals of the current generation, released clocks."""

    def __init__(self, threads, agents):
        self.threads = threads
        self.arrived = 0
        self.acc = [0] * agents
        self.gen = 0
        self.released = {}
        self.who = []


class _Rendezvous:
    __slots__ = ("expected", "arrived", "acc", "done", "left")

    def __init__(self, expected, agents):
        self.expected = expected
        self.arrived = set()
        self.acc = [0] * agents
        self.done = False
        self.left = set()


class _Runner:
    """One thread class executing its role's body."""

    def __init__(self, index, cls, nodes, env, agents, steps, agent):
        self.index = index
        self.steps = steps  # [ops and loop trips executed], shared by all classes and scenarios
        self.cls = cls
        self.agent = agent  # THREAD_AGENT / TMA_AGENT / ... -> agent index
        self.base = agent[THREAD_AGENT]
        self.env = dict(env)
        self.env.update(cls.env)
        self.iters = []
        self.vc = [0] * agents
        self.units = {which: [0] * agents for which in agent if which != THREAD_AGENT}
        self.gen = self._body(nodes)
        self.pending = None
        self.done = False
        self.stuck = False  # blocked, and nothing changed since it last tried
        self.count = 0  # ops executed: the scheduler advances the least advanced class first
        self.mma_groups = []  # [(clock snapshot, register keys written)]
        self.store_groups = []  # [clock snapshot]
        self.cp_groups = []  # [[(location key, box, tile, path, op instance)]] in flight
        self.init_fences = []
        self.regs_written = set()
        self.regs_pending = {}  # register key -> path of the MMA still writing it
        self.named = {}  # barrier -> generation this class arrived in
        self.rv = None  # rendezvous key this class is registered at
        self.syncs = 0  # block_syncs completed
        self.sync_reg = None

    def tick(self):
        self.vc[self.base] += 1
        return self.vc[self.base]

    def _body(self, nodes):
        env, iters = self.env, self.iters
        for n in nodes:
            k = n.kind
            if k == "loop":
                try:
                    start, end = n.start(env), n.end(env)
                    step = n.step(env) if n.step is not None else 1
                    if n.persistent:
                        start, step = start + env["block.x"], env["grid.x"]
                except exprs.ExprError as e:
                    raise Violation("undefined", n.path, "loop bounds have no value here (%s)" % e)
                if step <= 0:
                    raise Violation("undefined", n.path, "loop step %d is not positive" % step)
                iters.append(0)
                steps = self.steps
                for i, v in enumerate(range(start, end, step)):
                    steps[0] += 1
                    if steps[0] > MAX_STEPS:
                        raise Skipped("the model stopped after %d steps" % MAX_STEPS)
                    env[n.var] = v
                    if n.counter:
                        env[n.counter] = i
                    iters[-1] = v
                    yield from self._body(n.body)
                iters.pop()
            elif k == "branch":
                try:
                    taken = n.cond(env)
                except exprs.ExprError as e:
                    raise Violation("undefined", n.path, "branch condition has no value here (%s)" % e)
                yield from self._body(n.then if taken else n.els)
            else:
                yield n


class Prepared:
    """What every scenario of one kernel shares: compiled roles, thread classes, who writes what."""

    def __init__(self, ctx, roles, classes):
        self.roles = roles
        self.classes = classes
        self.writers = _writer_roles(ctx)
        self.groups = _partner_groups(classes)
        self.agents, self.agent_class = [], []  # class -> {unit: agent}; agent -> class of its threads or -1
        units = [_units(nodes) for nodes, _, _ in roles]
        for i, c in enumerate(classes):
            agent = {THREAD_AGENT: len(self.agent_class)}
            self.agent_class.append(i)
            for which in sorted(units[c.role_index]):
                agent[which] = len(self.agent_class)
                self.agent_class.append(-1)
            self.agents.append(agent)


class Model:
    """One scenario's execution state."""

    def __init__(self, ctx, prepared, env, steps):
        self.ctx = ctx
        self.kernel = ctx.kernel
        classes = prepared.classes
        self.agents = len(prepared.agent_class)
        self.steps = steps  # [steps so far], shared by every scenario of the kernel
        self.runners = [
            _Runner(i, c, prepared.roles[c.role_index][0], env, self.agents, self.steps, prepared.agents[i])
            for i, c in enumerate(classes)
        ]
        self.arrays = {}
        for i, b in enumerate(self.kernel.barriers):
            if b.kind == ir_pb2.BARRIER_KIND_MBARRIER:
                self.arrays[i] = _Array(b, "kernel.barriers[%d]" % i)
        self.named = {}
        self.block = _Named(len(classes), self.agents)
        self.rendezvous = {}
        self.proxy_fences = [[] for _ in classes]
        self.peer_syncs = [0] * len(classes)
        self.memory = Memory(
            self.proxy_fences, [r.name for r in self.kernel.regions], [c.weight for c in classes], self.peer_syncs,
            prepared.agent_class,
        )
        self.clusters = any(c > 1 for c in self.kernel.launch.cluster)
        self.writers = prepared.writers
        self.groups = prepared.groups
        self.changed = False
        self.handlers = {name[3:]: getattr(self, name) for name in dir(self) if name.startswith("op_")}

    # -- scheduling ------------------------------------------------------------

    def run(self):
        """Step the least advanced class that can move (ties: declaration order) until all finish or none can."""
        runners = self.runners
        steps = self.steps
        while True:
            best = holder = None  # the least advanced movable class, and the next one
            for r in runners:
                if r.done or r.stuck:
                    continue
                if best is None or r.count < best.count:
                    best, holder = r, best
                elif holder is None or r.count < holder.count:
                    holder = r
            if best is None:
                if all(r.done for r in runners):
                    self.finish()
                    return
                self.diagnose()
            r = best
            # Run `r` until another class is less advanced (or ties and comes first), it blocks, or state changes.
            while True:
                node = r.pending or next(r.gen, None)
                if node is None:
                    r.done = True
                    break
                self.changed = False
                try:
                    ok = self.execute(r, node)
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
                if self.changed:  # barrier state moved: blocked classes may pass now
                    for x in runners:
                        x.stuck = False
                    break
                if not ok or (holder is not None and _progress(r) > _progress(holder)):
                    break

    def execute(self, r, node):
        if not node.collective or len(self.groups[node.collective][r.index]) == 1:  # nobody to meet
            return self.handlers.get(node.kind, _noop)(r, node)
        # A collective op's effect is per class (it never blocks); then the classes sharing its unit meet,
        # so what each one retired or wrote is known to all of them afterwards.
        if r.rv != self.rv_key(r, node):
            self.handlers.get(node.kind, _noop)(r, node)
        return self.meet(r, node)

    # -- collectives ------------------------------------------------------------

    def inst(self, r, node):
        return (node.path, tuple(r.iters))

    def rv_key(self, r, node):
        """The rendezvous of this op instance for the group of classes sharing r's unit."""
        return node.path, tuple(r.iters), self.groups[node.collective][r.index]

    def meet(self, r, node):
        """Rendezvous of the classes that share the op's unit; True once all of them are here."""
        key = self.rv_key(r, node)
        rv = self.rendezvous.get(key)
        if rv is None:
            rv = self.rendezvous[key] = _Rendezvous(key[2], self.agents)
        if r.index not in rv.arrived:
            rv.arrived.add(r.index)
            rv.acc = _join(rv.acc, r.vc)
            r.rv = key
            if rv.arrived >= rv.expected:
                rv.done = True
                self.changed = True
        if not rv.done:
            return False
        r.vc = _join(r.vc, rv.acc)
        r.rv = None
        rv.left.add(r.index)
        if rv.left >= rv.expected:
            del self.rendezvous[key]
        return True

    # -- memory -----------------------------------------------------------------

    def slot(self, r, tile, path):
        if tile.stage is None:
            return 0
        s = tile.stage(r.env)
        if not 0 <= s < tile.stages:
            raise Violation(
                "stage_range", path, "stage %d of `%s` is outside its %d stages" % (s, tile.name, tile.stages)
            )
        return s

    def read(self, r, tile, node, agent_vc=None, agent=None, async_proxy=False):
        key = (tile.region, self.slot(r, tile, node.path))
        if tile.space == program.REGISTER:  # this class's own registers: program order, plus in-flight MMAs
            if key in r.regs_pending:
                raise Violation(
                    "async_read", node.path,
                    "reads `%s` while the MMA writing it is still in flight (no mma_wait retired it)" % tile.name,
                    (("the MMA", r.regs_pending[key]),),
                )
            if key not in r.regs_written:
                raise Violation("uninit_read", node.path, "reads registers `%s` before anything has written them" % tile.name)
            return
        vc = agent_vc if agent_vc is not None else r.vc
        who = agent if agent is not None else r.base
        elsewhere = self.writers.get(tile.region, set()) - {r.cls.role_index}
        self.memory.read(
            key, tile.box(r.env), who, vc, node.path, self.inst(r, node), r.index, tile.ring, async_proxy, bool(elsewhere)
        )

    def write(self, r, tile, node, agent_vc=None, agent=None, generic=False, async_unit=False):
        key = (tile.region, self.slot(r, tile, node.path))
        if tile.space == program.REGISTER:
            r.regs_written.add(key)
            if async_unit:
                r.regs_pending[key] = node.path
            return key
        vc = agent_vc if agent_vc is not None else r.vc
        who = agent if agent is not None else r.base
        self.memory.write(key, tile.box(r.env), who, vc, node.path, self.inst(r, node), r.index, tile.ring, generic)
        return None

    def unit(self, r, which):
        """Issue on one of the class's async units: its clock joins the issuer's and ticks."""
        r.tick()
        u = _join(r.units[which], r.vc)
        u[r.agent[which]] += 1
        r.units[which] = u
        return u

    def op_copy(self, r, node):
        if node.registers_only:  # the common case, kept cheap: no clocks, only this class's registers
            written = r.regs_written
            for key, t in node.register_reads:
                if key not in written or key in r.regs_pending:
                    self.read(r, t, node)  # raises the precise violation
            written.update(node.register_writes)
            return True
        r.tick()
        for t in node.reads:
            self.read(r, t, node)
        for t in node.writes:
            self.write(r, t, node, generic=t.space == program.SHARED)
        return True

    op_fill = op_elementwise = op_reduce = op_arg_reduce = op_top_k = op_scan = op_tri_solve = op_copy
    op_ldmatrix = op_stmatrix = op_tmem_load = op_atomic = op_copy

    def op_tma_load(self, r, node):
        u = self.unit(r, TMA_AGENT)
        tile = node.writes[0]
        array, index = self.mbarrier(r, node.bar, node, u, async_proxy=True)
        slot_of_tile = self.slot(r, tile, node.path)
        if tile.ring and node.bar.mode == "round" and tile.stages == node.bar.count:
            if slot_of_tile != index:
                raise Violation(
                    "slot_mismatch", node.path,
                    "loads into stage %d of `%s` but signals barrier `%s` slot %d"
                    % (slot_of_tile, tile.name, node.bar.name, index),
                )
        self.write(r, tile, node, agent_vc=u, agent=r.agent[TMA_AGENT])
        nbytes = node.bytes * node.copies * r.cls.weight
        self.contribute(array, index, node, u, 0, -nbytes, self.intended(r, node.bar))
        return True

    def op_tma_store(self, r, node):
        u = self.unit(r, STORE_AGENT)
        for t in node.reads:
            self.read(r, t, node, agent_vc=u, agent=r.agent[STORE_AGENT], async_proxy=True)
        r.store_groups.append(list(u))
        return True

    def op_bulk_wait(self, r, node):
        keep = max(0, node.pending)
        while len(r.store_groups) > keep:
            r.vc = _join(r.vc, r.store_groups.pop(0))
        r.tick()
        return True

    def op_cp_async(self, r, node):
        r.tick()
        group = []
        for t in node.writes:
            if t.space != program.SHARED:
                continue
            key, box, inst = (t.region, self.slot(r, t, node.path)), t.box(r.env), self.inst(r, node)
            self.memory.check_write(key, box, r.vc, node.path, inst, r.index, t.ring, r.base)
            self.memory.loc(key).pending.append((r.index, node.path, box))
            group.append((key, box, t, node.path, inst))
        r.cp_groups.append(group)
        return True

    def op_cp_async_wait(self, r, node):
        keep = max(0, node.pending)
        while len(r.cp_groups) > keep:
            for key, box, t, path, inst in r.cp_groups.pop(0):
                self.memory.loc(key).pending.remove((r.index, path, box))
                r.tick()
                self.memory.write(key, box, r.base, r.vc, path, inst, r.index, t.ring, generic=True)
        r.tick()
        return True

    def op_mma(self, r, node):
        accumulate = node.accumulate(r.env)
        if node.mkind == MMA_SYNC:
            r.tick()
            for t in node.reads:
                self.read(r, t, node)
            if accumulate:
                self.read(r, node.acc, node)
            self.write(r, node.acc, node)
            return True
        u = self.unit(r, MMA_AGENT)
        agent = r.agent[MMA_AGENT]
        for t in node.reads:
            if t.space == program.SHARED:
                self.read(r, t, node, agent_vc=u, agent=agent, async_proxy=True)
            else:
                self.read(r, t, node)
        if node.acc.space == program.REGISTER:
            rk = node.acc.region, self.slot(r, node.acc, node.path)
            if accumulate and rk not in r.regs_written:
                raise Violation("uninit_read", node.path, "accumulates into `%s` before anything has written it" % node.acc.name)
            written = [self.write(r, node.acc, node, async_unit=True)]
        else:
            if accumulate:
                self.read(r, node.acc, node, agent_vc=u, agent=agent)
            self.write(r, node.acc, node, agent_vc=u, agent=agent)
            written = []
        r.mma_groups.append((list(u), written))
        return True

    def retire_mma(self, r, keep):
        while len(r.mma_groups) > keep:
            snapshot, written = r.mma_groups.pop(0)
            r.vc = _join(r.vc, snapshot)
            for rk in written:
                r.regs_pending.pop(rk, None)

    def op_mma_wait(self, r, node):
        self.retire_mma(r, max(0, node.pending))
        r.tick()
        return True

    def op_mma_commit(self, r, node):
        r.tick()
        arrival = _join(r.vc, r.units[MMA_AGENT]) if MMA_AGENT in r.units else list(r.vc)
        array, index = self.mbarrier(r, node.bar, node, arrival, async_proxy=True)
        r.mma_groups = []  # completion is routed to the barrier, not to this thread
        self.contribute(array, index, node, arrival, r.cls.weight, 0, self.intended(r, node.bar))
        return True

    def op_fence(self, r, node):
        t = r.tick()
        if node.fkind == ir_pb2.FENCE_KIND_PROXY_ASYNC:
            self.proxy_fences[r.index].append(t)
        elif node.fkind == ir_pb2.FENCE_KIND_MBARRIER_INIT:
            r.init_fences.append(t)
        return True

    # -- mbarriers --------------------------------------------------------------

    def mbarrier(self, r, bar, node, vc, async_proxy=False):
        """(array, slot index) a ref names, after checking the array is initialised for this use."""
        array = self.arrays.get(bar.array)
        if array is None:
            raise Violation("kind_mismatch", node.path, "`%s` is not an mbarrier" % bar.name)
        if bar.mode is None:
            index = 0
        else:
            value = bar.fn(r.env)
            index = phases.ring_slot(value, bar.count) if bar.mode == "round" else value
        if not 0 <= index < array.count:
            raise Violation(
                "barrier_index", node.path,
                "barrier index %d is outside `%s`'s %d barriers" % (index, bar.name, array.count),
                (("`%s` is declared here" % bar.name, array.path),),
            )
        if array.init is None:
            raise Violation(
                "use_before_init", node.path,
                "uses mbarrier `%s` before any thread has initialised it" % bar.name,
                (("`%s` is declared here" % bar.name, array.path),),
            )
        agent, time, cls, init_path = array.init
        if vc[agent] < time:
            raise Violation(
                "use_before_init", node.path,
                "uses mbarrier `%s` without being ordered after its initialisation (no block_sync between)" % bar.name,
                (("the initialisation", init_path),),
            )
        if async_proxy or self.clusters:
            fence = next((f for f in self.runners[cls].init_fences if f > time), None)
            if fence is None or vc[agent] < fence:
                raise Violation(
                    "init_fence", init_path,
                    "initialises mbarrier `%s`, which the async proxy (TMA or tcgen05) then uses, without "
                    "fence.mbarrier_init before the synchronization that publishes it" % bar.name,
                    (("the async-proxy use", node.path),),
                )
        slot = array.slots.get(index)
        if slot is None:
            slot = array.slots[index] = _Slot(array.arrivals, self.agents)
        return array, index

    def intended(self, r, bar):
        """The completion index a contribution by round belongs to; None for refs by index."""
        if bar.mode != "round":
            return None
        return phases.contribution_phase(bar.fn(r.env), bar.count)

    def contribute(self, array, index, node, vc, arrivals, tx, intended):
        """Arrivals and transaction bytes (tx > 0 expected, < 0 delivered) to a slot's current phase."""
        s = array.slots[index]
        name = array.decl.name
        if intended is not None and intended != s.ph:
            if intended < s.ph:
                if tx < 0:
                    raise Violation(
                        "tx_bytes", node.path,
                        "bytes of round completion %d reach `%s`[%d] after that phase completed: the expected "
                        "transaction bytes are fewer than the loads bring" % (intended, name, index),
                        self.phase_notes(array, s),
                    )
                raise Violation(
                    "arrival_count", node.path,
                    "arrives on `%s`[%d] for completion %d, which already completed: more threads arrive per round "
                    "than its %d arrivals" % (name, index, intended, array.arrivals),
                    (("`%s` is declared here" % name, array.path),),
                )
            self.incomplete(array, index, s)
            raise Violation(
                "arrival_count", node.path,
                "contributes to completion %d of `%s`[%d] while completion %d received nothing: some round skips "
                "its arrival" % (intended, name, index, s.ph),
                (("`%s` is declared here" % name, array.path),),
            )
        if arrivals > s.pending:
            raise Violation(
                "arrival_count", node.path,
                "%d threads arrive on `%s`[%d] whose phase needs only %d more of its %d arrivals"
                % (arrivals, name, index, s.pending, array.arrivals),
                (("`%s` is declared here" % name, array.path),),
            )
        s.pending -= arrivals
        s.tx += tx
        if tx > 0:
            s.expected += tx
            s.expects.append(node.path)
        elif tx < 0:
            s.loads.append(node.path)
        if arrivals:
            s.arrives.append(node.path)
        s.acc = _join(s.acc, vc)
        if s.pending == 0:
            if s.tx < 0:
                raise Violation(
                    "tx_bytes", (s.expects or [node.path])[-1],
                    "the loads bring %d bytes more to `%s`[%d] than the phase expects" % (-s.tx, name, index),
                    self.phase_notes(array, s),
                )
            if s.tx == 0:
                self.complete(array, index, s, node)

    def complete(self, array, index, s, node):
        declared = array.decl.tx_bytes
        if declared != s.expected:
            raise Violation(
                "tx_declared", (s.expects or [node.path])[-1],
                "the phase of `%s`[%d] expects %d transaction bytes but the barrier declares tx_bytes %d"
                % (array.decl.name, index, s.expected, declared),
                (("`%s` is declared here" % array.decl.name, array.path),),
            )
        s.ph += 1
        s.last = _join(s.last, s.acc)
        s.reset(array.arrivals, self.agents)
        self.changed = True

    def incomplete(self, array, index, s):
        """Raise when the slot's current phase received contributions but cannot complete with them."""
        name = array.decl.name
        declared = (("`%s` is declared here" % name, array.path),)
        if s.tx < 0 and not s.expects:
            raise Violation(
                "tx_bytes", s.loads[0],
                "the loads bring %d bytes to `%s`[%d] but no expect_tx announces them" % (-s.tx, name, index),
                declared,
            )
        if s.pending and s.arrives:
            raise Violation(
                "arrival_count", s.arrives[-1],
                "only %d of the %d arrivals `%s`[%d] is initialised with arrive per phase"
                % (array.arrivals - s.pending, array.arrivals, name, index),
                declared,
            )
        if not s.pending and s.tx:
            raise Violation(
                "tx_bytes", s.expects[-1],
                "the phase of `%s`[%d] expects %d transaction bytes but the loads bring %d"
                % (name, index, s.expected, s.expected - s.tx),
                self.phase_notes(array, s),
            )

    def phase_notes(self, array, s):
        notes = [("`%s` is declared here" % array.decl.name, array.path)]
        notes += [("a load of this phase", p) for p in s.loads[:4]]
        return notes

    def op_mbarrier_init(self, r, node):
        array = self.arrays.get(node.array)
        if array is None:
            raise Violation("kind_mismatch", node.path, "`%s` is not an mbarrier" % self.kernel.barriers[node.array].name)
        if r.cls.weight != 1:
            raise Violation(
                "init_multi", node.path,
                "%d threads initialise `%s`: every extra initialisation resets phases others may be using"
                % (r.cls.weight, array.decl.name),
            )
        t = r.tick()
        array.init = (r.base, t, r.index, node.path)
        array.slots = {}
        self.changed = True
        return True

    def op_mbarrier_arrive(self, r, node):
        r.tick()
        array, index = self.mbarrier(r, node.bar, node, r.vc)
        self.contribute(array, index, node, r.vc, r.cls.weight, 0, self.intended(r, node.bar))
        return True

    def op_mbarrier_expect_tx(self, r, node):
        r.tick()
        array, index = self.mbarrier(r, node.bar, node, r.vc)
        w = r.cls.weight
        self.contribute(array, index, node, r.vc, w, w * node.bytes, self.intended(r, node.bar))
        return True

    def op_mbarrier_wait(self, r, node):
        array, index = self.mbarrier(r, node.bar, node, r.vc)
        s = array.slots[index]
        expect = None
        if node.phase is not None:
            parity = node.phase(r.env) % 2
        elif node.bar.mode == "round":
            expect = phases.wait_completion(node.bar.fn(r.env), node.bar.count, node.bar.lag)
            parity = expect % 2
        else:
            raise Violation("undefined", node.path, "a wait on a barrier named by index needs a phase")
        if s.ph % 2 == parity:
            return False
        if expect is not None and s.ph - 1 != expect:
            raise Violation(
                "phase_mismatch", node.path,
                "waits for completion %d of `%s`[%d] but the barrier has completed %d phases: the wait observes "
                "another round's phase" % (expect, array.decl.name, index, s.ph),
                (("`%s` is declared here" % array.decl.name, array.path),),
            )
        r.vc = _join(r.vc, s.last)
        r.tick()
        return True

    # -- named barriers and block_sync -----------------------------------------

    def named_state(self, node):
        b = self.named.get(node.array)
        if b is None:
            decl = self.kernel.barriers[node.array]
            b = self.named[node.array] = _Named(decl.arrivals, self.agents)
        return b

    def arrive_named(self, b, r, node, weight, name):
        if b.arrived + weight > b.threads:
            raise Violation(
                "arrival_count", node.path,
                "%d more threads reach named barrier `%s` whose generation needs only %d more of its %d"
                % (weight, name, b.threads - b.arrived, b.threads),
            )
        b.arrived += weight
        b.acc = _join(b.acc, r.vc)
        b.who.append(node.path)
        gen = b.gen
        if b.arrived == b.threads:
            self.changed = True
            b.released[gen] = b.acc
            b.gen += 1
            b.arrived, b.acc, b.who = 0, [0] * self.agents, []
        return gen

    def op_named_barrier_sync(self, r, node):
        decl = self.kernel.barriers[node.array]
        if decl.kind != ir_pb2.BARRIER_KIND_NAMED:
            raise Violation("kind_mismatch", node.path, "`%s` is not a named barrier" % decl.name)
        b = self.named_state(node)
        if node.array not in r.named:
            r.tick()
            r.named[node.array] = self.arrive_named(b, r, node, r.cls.weight, decl.name)
        gen = r.named[node.array]
        if b.gen <= gen:
            return False
        del r.named[node.array]
        r.vc = _join(r.vc, b.released[gen])
        self.peer_syncs[r.index] = r.tick()
        return True

    def op_named_barrier_arrive(self, r, node):
        decl = self.kernel.barriers[node.array]
        if decl.kind != ir_pb2.BARRIER_KIND_NAMED:
            raise Violation("kind_mismatch", node.path, "`%s` is not a named barrier" % decl.name)
        r.tick()
        self.arrive_named(self.named_state(node), r, node, r.cls.weight, decl.name)
        return True

    def op_block_sync(self, r, node):
        b = self.block
        if r.sync_reg is None:
            r.tick()
            r.sync_reg = self.arrive_named(b, r, node, 1, "block_sync")
        if b.gen <= r.sync_reg:
            return False
        r.vc = _join(r.vc, b.released[r.sync_reg])
        r.sync_reg = None
        r.syncs += 1
        self.peer_syncs[r.index] = r.tick()
        return True

    # -- the end ----------------------------------------------------------------

    def finish(self):
        """After every class finished: no phase may be left half-arrived or short of bytes."""
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
        for i, b in sorted(self.named.items()):
            if b.arrived:
                raise Violation(
                    "arrival_count", b.who[-1],
                    "named barrier `%s` is left with %d of its %d threads arrived"
                    % (self.kernel.barriers[i].name, b.arrived, b.threads),
                )

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
        first = blocked[0].pending
        others = sorted({r.pending.path for r in blocked} - {first.path})
        notes = [("also blocked", path) for path in others[:3]]
        name = getattr(getattr(first, "bar", None), "name", None)
        if name:
            notes.append(("`%s` is declared here" % name, self.ctx.barrier_path(name)))
        what = "the barrier it waits on"
        if first.kind == "mbarrier_wait":
            r = blocked[0]
            array, index = self.mbarrier(r, first.bar, first, r.vc)
            what = "phase %d of `%s`[%d] to complete" % (array.slots[index].ph, first.bar.name, index)
        raise Violation(
            "deadlock", first.path,
            "waits forever for %s: every thread of the block is blocked or finished, so nothing will" % what,
            notes,
        )


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


def _progress(r):
    return r.count, r.index


def _noop(r, node):
    return True


def _writer_roles(ctx):
    """Region index -> roles that write it (to tell a race from a read of never-written data)."""
    from compiler.verify import oprefs

    out = {}
    for site in ctx.ops:
        for _, ref, access in oprefs.tiles(site.kind, site.msg) if site.msg is not None else ():
            hit = ctx.regions.get(ref.region)
            if hit and access != oprefs.R:
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


def max_trips(ctx):
    """2 * S + 1 for the deepest ring S (pipelines, staged regions, barrier arrays addressed by round)."""
    depth = 1
    for p in ctx.kernel.pipelines:
        depth = max(depth, p.stages)
    for r in ctx.kernel.regions:
        depth = max(depth, r.stages)
    for site in ctx.ops:
        ref = getattr(site.msg, "barrier", None) if site.msg is not None else None
        if isinstance(ref, ir_pb2.BarrierRef) and ref.WhichOneof("slot") == "round":
            b = ctx.barrier(ref.barrier)
            if b is not None:
                depth = max(depth, b.count)
    return 2 * min(depth, MAX_STAGES) + 1


def run(ctx):
    """Model-check the kernel; a ModelResult (violation or clean, scenarios run, or why skipped)."""
    if ctx.block_threads > 1024 or ctx.block_threads == 0:
        return ModelResult(skipped="the block has %d threads" % ctx.block_threads)
    roles = program.compile_roles(ctx)
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
    done, steps = [], [0]
    for t, env in scenarios:
        done.append((t, env))
        try:
            Model(ctx, prepared, env, steps).run()
        except Violation as v:
            return ModelResult(violation=v, scenarios=done)
        except Skipped as s:
            return ModelResult(scenarios=done, skipped=str(s))
    return ModelResult(scenarios=done)
