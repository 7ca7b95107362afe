"""The protocol model's synchronization ops: mbarriers (init, arrive, expect_tx, wait), named barriers, block_sync.

A mixin of simulate.Model. Each mbarrier slot counts completed phases, pending
arrivals and the transaction balance of its current phase; contributions and
waits by round check that they meet the phase their round means (phases.py).
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import phases
from compiler.verify.protocol.happens_before import Violation, join


class MbarrierSlot:
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


class MbarrierArray:
    """An mbarrier array: its declaration, initialisation and slots."""

    def __init__(self, decl, path):
        self.decl = decl
        self.path = path
        self.arrivals = max(1, decl.arrivals)
        self.count = max(1, decl.count)
        self.init = None  # (agent, time, class, path) of the initialisation
        self.slots = {}


class NamedBarrier:
    """A named barrier (or block_sync): arrivals of the current generation, released clocks."""

    def __init__(self, threads, agents):
        self.threads = threads
        self.arrived = 0
        self.acc = [0] * agents
        self.gen = 0
        self.released = {}
        self.who = []


class SyncOps:
    """Ops on barriers."""

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
            slot = array.slots[index] = MbarrierSlot(array.arrivals, self.agents)
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
        s.acc = join(s.acc, vc)
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
        s.last = join(s.last, s.acc)
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
        r.vc = join(r.vc, s.last)
        r.tick()
        return True

    def named_targets(self, r, node):
        """[(key, state, name, threads)]: the named barriers an op's class reaches and with how many threads.

        Each barrier of an array is its own hardware barrier; the op's index (unset: 0) picks one. An index
        that reads only `warp` and `warpgroup` of the thread builtins (`wg_done[warpgroup]`) is evaluated
        per warp of the class, so one class spanning several warpgroups reaches each of their barriers."""
        decl = self.kernel.barriers[node.array]
        if decl.kind != ir_pb2.BARRIER_KIND_NAMED:
            raise Violation("kind_mismatch", node.path, "`%s` is not a named barrier" % decl.name)
        if node.index is None:
            shares = {0: r.cls.weight}
        elif not node.spread:
            shares = {node.index(r.env): r.cls.weight}
        else:
            shares, env = {}, r.env
            saved = env["warp"], env["warpgroup"]
            try:
                for warp, threads in r.cls.warp_weights.items():
                    env["warp"], env["warpgroup"] = warp, warp >> 2
                    index = node.index(env)
                    shares[index] = shares.get(index, 0) + threads
            finally:
                env["warp"], env["warpgroup"] = saved
        count = max(1, decl.count)
        out = []
        for index, threads in shares.items():
            if not 0 <= index < count:
                raise Violation(
                    "barrier_index", node.path,
                    "named barrier index %d is outside `%s`'s %d barriers" % (index, decl.name, count),
                    (("`%s` is declared here" % decl.name, "kernel.barriers[%d]" % node.array),),
                )
            key = (node.array, index)
            b = self.named.get(key)
            if b is None:
                b = self.named[key] = NamedBarrier(decl.arrivals, self.agents)
            out.append((key, b, self.named_name(key), threads))
        return out

    def named_name(self, key):
        """How messages name the named barrier (array, index): `wg_done[2]`, or `wg` for an array of one."""
        decl = self.kernel.barriers[key[0]]
        return decl.name if max(1, decl.count) == 1 else "%s[%d]" % (decl.name, key[1])

    def arrive_named(self, b, r, node, weight, name):
        if b.arrived + weight > b.threads:
            raise Violation(
                "arrival_count", node.path,
                "%d more threads reach named barrier `%s` whose generation needs only %d more of its %d"
                % (weight, name, b.threads - b.arrived, b.threads),
            )
        b.arrived += weight
        b.acc = join(b.acc, r.vc)
        b.who.append(node.path)
        gen = b.gen
        if b.arrived == b.threads:
            self.changed = True
            b.released[gen] = b.acc
            b.gen += 1
            b.arrived, b.acc, b.who = 0, [0] * self.agents, []
        return gen

    def op_named_barrier_sync(self, r, node):
        if not r.named:  # first attempt: arrive; later attempts only check the generations
            r.tick()
            for key, b, name, threads in self.named_targets(r, node):
                r.named[key] = (b, self.arrive_named(b, r, node, threads, name))
        for b, gen in r.named.values():
            if b.gen <= gen:
                return False
        for b, gen in r.named.values():
            r.vc = join(r.vc, b.released[gen])
        r.named = {}
        self.peer_syncs[r.index] = r.tick()
        return True

    def op_named_barrier_arrive(self, r, node):
        r.tick()
        for _, b, name, threads in self.named_targets(r, node):
            self.arrive_named(b, r, node, threads, name)
        return True

    def op_block_sync(self, r, node):
        b = self.block
        if r.sync_reg is None:
            r.tick()
            r.sync_reg = self.arrive_named(b, r, node, 1, "block_sync")
        if b.gen <= r.sync_reg:
            return False
        r.vc = join(r.vc, b.released[r.sync_reg])
        r.sync_reg = None
        r.syncs += 1
        self.peer_syncs[r.index] = r.tick()
        return True
