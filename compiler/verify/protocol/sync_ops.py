"""The protocol model's synchronization ops: mbarriers (init, arrive, expect_tx, wait), named barriers, block_sync.

A mixin of simulate.Model. Each mbarrier slot counts completed phases, pending
arrivals and the transaction balance of its current phase; contributions and
waits by round check that they meet the phase their round means (phases.py).
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import phases
from compiler.verify import threads
from compiler.verify.protocol import slots
from compiler.verify.protocol.happens_before import Violation, join
from compiler.verify.report import path_key


class MbarrierSlot:
    """One mbarrier: completed phases, what the current phase still needs, who contributed."""

    __slots__ = ("ph", "pending", "tx", "acc", "last", "arrives", "expects", "loads", "expected", "regions", "seen",
                 "history", "observed")

    def __init__(self, arrivals, agents):
        self.ph = 0
        self.last = [0] * agents
        self.seen = 0  # completions some wait has observed
        self.observed = {}  # completion -> [(agent, time)] of the waits that observed it
        self.history = []  # per completed phase: (expect_tx paths, bytes expected, load paths, regions loaded)
        self.reset(arrivals, agents)

    def copy(self, same):
        new = _copy_slot(self)  # clocks are replaced, never changed in place: shared
        new.arrives, new.expects, new.loads = list(self.arrives), list(self.expects), list(self.loads)
        new.regions, new.history = set(self.regions), list(self.history)
        new.observed = {c: list(waits) for c, waits in self.observed.items()}
        same[id(self)] = new
        return new

    def reset(self, arrivals, agents):
        self.pending = arrivals
        self.tx = 0  # expected minus delivered bytes
        self.acc = None  # the join of the contributions' clocks (None before the first: the zero clock)
        self.arrives, self.expects, self.loads = [], [], []
        self.expected = 0
        self.regions = set()  # regions the phase's TMA loads wrote


_copy_slot = slots.copier(MbarrierSlot)


class MbarrierArray:
    """An mbarrier array: its declaration, initialisation and slots."""

    def __init__(self, decl, path):
        self.decl = decl
        self.path = path
        self.arrivals = max(1, decl.arrivals)
        self.count = max(1, decl.count)
        self.init = None  # (agent, time, class, path) of the initialisation
        self.init_fence = None  # the initialising class's first fence.mbarrier_init after it, once there is one
        self.slots = {}

    def copy(self, same):
        new = MbarrierArray.__new__(MbarrierArray)
        new.__dict__.update(self.__dict__)
        new.slots = {i: s.copy(same) for i, s in self.slots.items()}
        same[id(self)] = new
        return new


class NamedBarrier:
    """A named barrier (or block_sync): arrivals of the current generation, released clocks, and how many
    threads each role brought to a generation (to tell which sync brings the wrong count)."""

    def __init__(self, threads, agents):
        self.threads = threads
        self.arrived = 0
        self.acc = [0] * agents
        self.gen = 0
        self.released = {}
        self.who = []  # (op path, role, threads) of the current generation's arrivals
        self.roles = {}  # role -> the most threads it brought to one completed generation

    def copy(self, same):
        new = NamedBarrier.__new__(NamedBarrier)
        new.__dict__.update(self.__dict__)  # clocks (acc, released ones) are replaced, never changed: shared
        new.released, new.who, new.roles = dict(self.released), list(self.who), dict(self.roles)
        same[id(self)] = new
        return new

    def shares(self):
        """role -> (threads it brings to a generation, the first path it syncs at): the completed generations'
        counts, then the current one's."""
        out = {role: [n, None] for role, n in self.roles.items()}
        current = {}
        for path, role, n in self.who:
            current[role] = current.get(role, 0) + n
            out.setdefault(role, [0, path])
            if out[role][1] is None:
                out[role][1] = path
        for role, n in current.items():
            out[role][0] = max(out[role][0], n)
        return out


class SyncOps:
    """Ops on barriers."""

    def slot_value(self, r, bar):
        """The value of a ref's index or round for class r now, evaluated once per op it executes."""
        hit = r.slot_values.get(bar)
        if hit is not None and hit[0] == r.count:
            return hit[1]
        value = bar.fn(r.env)
        r.slot_values[bar] = (r.count, value)
        return value

    def mbarrier(self, r, bar, node, vc, async_proxy=False):
        """(array, slot index) a ref names, after checking the array is initialised for this use."""
        array = self.arrays.get(bar.array)
        if array is None:
            raise Violation("kind_mismatch", node.path, "`%s` is not an mbarrier" % bar.name)
        if bar.mode is None:
            index = 0
        else:
            value = self.slot_value(r, bar)
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
            fence = array.init_fence
            if fence is None:  # fences are only appended: once found, the first one after the init stays it
                fence = array.init_fence = next((f for f in self.runners[cls].init_fences if f > time), None)
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
        return phases.contribution_phase(self.slot_value(r, bar), bar.count)

    def contribute(self, array, index, node, vc, arrivals, tx, intended, region=None):
        """Arrivals and transaction bytes (tx > 0 expected, < 0 delivered, by a load into `region`) to a slot's
        current phase."""
        s = array.slots[index]
        if intended is not None and intended < 0:
            raise Violation(
                "round_skip", node.path,
                "contributes to completion %d of `%s`[%d] (round %d), before the slot's first: the round this op "
                "names is negative" % (intended, array.decl.name, index, intended * array.count + index),
                (("`%s` is declared here" % array.decl.name, array.path),),
                "Name the round this op serves: round r >= 0 is completion r / %d of slot r %% %d."
                % (array.count, array.count),
            )
        if intended is not None and intended != s.ph:
            if intended < s.ph:
                if tx < 0:  # the phase completed before this load: its expect_tx is short, whatever the load order
                    expects, expected, _, _ = s.history[intended]
                    raise Violation(
                        "tx_bytes", expects[-1] if expects else node.path,
                        "expects %d transaction bytes on `%s`[%d] for round completion %d, fewer than its loads "
                        "bring: the phase completed before this round's load of `%s` delivered its %d bytes"
                        % (expected, array.decl.name, index, intended, self.kernel.regions[region].name, -tx),
                        (("the load that arrives after the phase completed", node.path),
                         ("`%s` is declared here" % array.decl.name, array.path)),
                        "Set expect_tx bytes to the sum of the boxes every load of the round brings (%d more here)."
                        % -tx,
                    )
                raise Violation(
                    "arrival_count", node.path,
                    "arrives on `%s`[%d] for completion %d, which already completed: more threads arrive per round "
                    "than its %d arrivals" % (array.decl.name, index, intended, array.arrivals),
                    (("`%s` is declared here" % array.decl.name, array.path),),
                )
            self.incomplete(array, index, s)
            raise Violation(
                "round_skip", node.path,
                "contributes to completion %d of `%s`[%d] (round %d) while completion %d received nothing: the rounds "
                "this op names skip a completion" % (intended, array.decl.name, index, intended * array.count + index, s.ph),
                (("`%s` is declared here" % array.decl.name, array.path),),
                "Name the round this op serves: round r is completion r / %d of slot r %% %d, and every completion "
                "needs its arrivals before the next one (no round a lap ahead, none skipped under a branch)."
                % (array.count, array.count),
            )
        if arrivals > s.pending:
            raise Violation(
                "arrival_count", node.path,
                "%d threads arrive on `%s`[%d] whose phase needs only %d more of its %d arrivals"
                % (arrivals, array.decl.name, index, s.pending, array.arrivals),
                (("`%s` is declared here" % array.decl.name, array.path),),
            )
        s.pending -= arrivals
        s.tx += tx
        if tx > 0:
            s.expected += tx
            s.expects.append(node.path)
        elif tx < 0:
            s.loads.append(node.path)
            s.regions.add(region)
        if arrivals:
            s.arrives.append(node.path)
        s.acc = join(s.acc, vc) if s.acc is not None else list(vc)
        if s.pending == 0:
            if s.tx < 0:
                raise Violation(
                    "tx_bytes", (s.expects or [node.path])[-1],
                    "the loads bring %d bytes more to `%s`[%d] than the phase expects" % (-s.tx, array.decl.name, index),
                    self.phase_notes(array, s),
                )
            if s.tx == 0:
                self.complete(array, index, s, node)

    def complete(self, array, index, s, node):
        declared = array.decl.tx_bytes
        if declared != s.expected and self.deferred is None:
            # Reported when the run ends: a load of this round still to come would show the expect_tx short
            # (CAKE-SYNC-006), whichever order the loads complete in.
            self.deferred = Violation(
                "tx_declared", (s.expects or [node.path])[-1],
                "the phase of `%s`[%d] expects %d transaction bytes but the barrier declares tx_bytes %d"
                % (array.decl.name, index, s.expected, declared),
                (("`%s` is declared here" % array.decl.name, array.path),),
            )
        s.history.append((tuple(s.expects), s.expected, tuple(s.loads), frozenset(s.regions)))
        s.last = join(s.last, s.acc) if s.ph else s.acc  # (the first completion's: a copy; clocks are never changed
        s.ph += 1                                         # in place, so it is shared)
        s.reset(array.arrivals, self.agents)
        self.woken.append(s)

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
        array.init_fence = None
        array.slots = {}
        self.woken.append(array)
        return True

    def check_round(self, r, node, bar):
        """Raise when an op's round fails to grow while its loop (or one outside it) moved on: the round names a
        completion of the barrier again, one that already happened (a round that starts over on every tile of a
        persistent loop, or rounds of consecutive tiles that overlap)."""
        if bar.mode != "round" or bar.outer is None:
            return
        value, iters = self.slot_value(r, bar), tuple(r.iters[:len(bar.loops)])
        prev = r.rounds.get(node.path)
        r.rounds[node.path] = (iters, value)
        if prev is None or prev[0] == iters or value > prev[1]:
            return
        moved = next(i for i, (a, b) in enumerate(zip(prev[0], iters)) if a != b)
        if moved > bar.outer:
            return  # a loop inside the round's own repeats it: the same completion waited for again
        loop = bar.loops[moved]
        raise Violation(
            "round_restart", node.path,
            "uses round %d of `%s` after round %d when loop `%s` moved on: its rounds %s, so it names a completion "
            "of the barrier that already happened" % (
                value, bar.name, prev[1], loop, "start over on every iteration of that loop (every tile of a "
                "persistent loop)" if moved < bar.outer else "of one iteration overlap the next one's"),
            (("`%s` is declared here" % bar.name, self.ctx.barrier_path(bar.name)),),
            "Make the round grow across the iterations of loop `%s`: count whole iterations with that loop's "
            "variable or counter (e.g. it * rounds_per_tile + k), the same way in the producer's and the consumers' "
            "ops." % loop,
        )

    def acquire(self, r, node, array_index, index, completion):
        """After a wait passed: a wait on a ring's `full` makes the thread hold that slot until it releases it."""
        p = self.full_of.get(array_index)
        if p is not None:
            r.held.setdefault(p, {})[index] = [completion, False, node.path]
            r.last_full[p] = node.path

    def release(self, r, node, array_index, index):
        """An arrival on a ring's `empty` by a thread that waits on its `full` must free a slot it holds (and such
        a thread's arrivals on the ring's `full`, which the loads complete, are releases sent to the wrong barrier)."""
        p = self.full_of.get(array_index)
        if p is not None and p in r.held:
            ring = self.kernel.pipelines[p]
            raise Violation(
                "release_unheld", node.path,
                "arrives on `%s`, the barrier ring `%s`'s loads complete, from a thread that consumes the ring: its "
                "arrival counts towards the producer's fill of slot %d" % (ring.full, ring.name, index),
                self.waits_on(ring.empty, "the producer's wait its release should answer")
                + (("ring `%s` is declared here" % ring.name, "kernel.pipelines[%d]" % p),),
                "Release consumed slots on the ring's `%s` barrier (%s@round(kt) after %s@round(kt))."
                % (ring.empty, ring.empty, ring.full),
            )
        p = self.empty_of.get(array_index)
        held = r.held.get(p) if p is not None else None
        if held is None:  # not a ring's release, or by a thread that never consumes the ring: it releases for others
            return
        h = held.get(index)
        if h is not None and not h[1]:
            h[1] = True
            return
        ring = self.kernel.pipelines[p]
        holding = sorted(slot for slot, (_, done, _) in held.items() if not done)
        state = ("holds slot %s" % ", ".join(map(str, holding))) if holding else "holds no slot"
        why = "it released that slot already" if h is not None else "it never waited for that slot on `%s`" % ring.full
        last = r.last_full[p]
        raise Violation(
            "release_unheld", node.path,
            "releases slot %d of ring `%s` (`%s`[%d]), which this thread does not hold: %s, and %s. A release lets "
            "the producer refill the slot, so it must free one this thread waited for and still holds"
            % (index, ring.name, ring.empty, index, why, state),
            (("this thread's wait on `%s`" % ring.full, last),) + self.waits_on(ring.empty, "the producer's wait "
                                                                                   "this release answers")
            + (("ring `%s` is declared here" % ring.name, "kernel.pipelines[%d]" % p),),
            "Release the slot this thread consumed: arrive on `%s` with the round of the `%s` wait it follows "
            "(%s@round(kt) after %s@round(kt)), once per round." % (ring.empty, ring.full, ring.empty, ring.full),
        )

    def waits_on(self, barrier, what):
        """A note at the first wait on `barrier` (the op a wrong arrival leaves blocked or misled), or none."""
        site = next((x for x in self.ctx.sites("mbarrier_wait") if x.msg.barrier.barrier == barrier), None)
        return ((what, site.path),) if site is not None else ()

    def op_mbarrier_arrive(self, r, node):
        self.check_round(r, node, node.bar)
        r.tick()
        array, index = self.mbarrier(r, node.bar, node, r.vc)
        self.release(r, node, node.bar.array, index)
        self.contribute(array, index, node, r.vc, r.cls.weight, 0, self.intended(r, node.bar))
        return True

    def op_mbarrier_expect_tx(self, r, node):
        self.check_round(r, node, node.bar)
        r.tick()
        array, index = self.mbarrier(r, node.bar, node, r.vc)
        w = r.cls.weight
        self.contribute(array, index, node, r.vc, w, w * node.bytes, self.intended(r, node.bar))
        return True

    def op_mbarrier_wait(self, r, node):
        self.check_round(r, node, node.bar)
        array, index = self.mbarrier(r, node.bar, node, r.vc)
        s = array.slots[index]
        expect = None
        if node.phase is not None:
            parity = node.phase(r.env) % 2
        elif node.bar.mode == "round":
            expect = phases.wait_completion(self.slot_value(r, node.bar), node.bar.count, node.bar.lag)
            parity = expect % 2
        else:
            raise Violation("undefined", node.path, "a wait on a barrier named by index needs a phase")
        if s.ph % 2 == parity:
            r.waits = (s, array)  # a completed phase, or a new initialisation that replaces the slot
            return False
        if expect is not None and s.ph - 1 != expect:
            raise Violation(
                "phase_mismatch", node.path,
                "waits for completion %d of `%s`[%d] but the barrier has completed %d phases: the wait observes "
                "another round's phase" % (expect, array.decl.name, index, s.ph),
                (("`%s` is declared here" % array.decl.name, array.path),),
            )
        if expect is not None and expect > 0:
            self.previous_observed(r, node, array, index, s, expect)
        r.vc = join(r.vc, s.last)
        s.observed.setdefault(s.ph - 1, []).append((r.base, r.tick()))
        s.seen = max(s.seen, s.ph)
        r.acquired[(node.bar.array, index)] = s.ph - 1
        self.acquire(r, node, node.bar.array, index, s.ph - 1)
        return True

    def previous_observed(self, r, node, array, index, s, expect):
        """A wait by parity tells completion `expect` from `expect - 2` only once `expect - 1` is known done: some
        wait that observed it must happen before this one (the waiter's own wait on the slot's previous round,
        or another thread's, ordered by a release this thread acquired). Else, on hardware, a previous round
        still in flight (async loads complete in any order) leaves the slot's parity at `expect`'s, and the
        wait passes at once on the stale phase."""
        vc = r.vc
        for agent, time in s.observed.get(expect - 1, ()):  # (a loop: any() stopping early raises in its generator)
            if vc[agent] >= time:
                return
        rnd = (expect - 1) * array.count + index
        raise Violation(
            "phase_mismatch", node.path,
            "waits for completion %d of `%s`[%d] (round %d) without being ordered after any wait that observed "
            "completion %d (round %d): while that round is still in flight the slot's parity already reads as "
            "completed, and the wait passes on the older phase" % (expect, array.decl.name, index,
                                                                   expect * array.count + index, expect - 1, rnd),
            (("`%s` is declared here" % array.decl.name, array.path),),
            "A thread waiting on some rounds of a ring only (interleaved consumers) must also have waited on the round "
            "a ring lap before each of them: make the ring's depth a multiple of the rounds between its turns.",
        )

    def named_targets(self, r, node):
        """[(key, state, threads)]: the named barriers an op's class reaches and with how many threads.

        Each barrier of an array is its own hardware barrier; the op's index (unset: 0) picks one. An index
        that reads only `warp` and `warpgroup` of the thread builtins (`wg_done[warpgroup]`) is evaluated
        per warp of the class, so one class spanning several warpgroups reaches each of their barriers."""
        decl = node.decl  # (its kind and count, read once: program.py)
        if not node.is_named:
            raise Violation("kind_mismatch", node.path, "`%s` is not a named barrier" % decl.name)
        if node.index is None:
            shares = {0: r.cls.weight}
        elif not node.spread:
            shares = {node.index(r.env): r.cls.weight}
        else:
            env = r.env
            try:
                key = (node, tuple([env[n] for n in node.index_deps]))
            except KeyError:  # a name without a value: evaluating the index says so
                key = None
            shares = r.spreads.get(key)
            if shares is None:
                shares = {}
                saved = env["warp"], env["warpgroup"]
                try:
                    for warp, threads in r.cls.warp_weights.items():
                        env["warp"], env["warpgroup"] = warp, warp >> 2
                        index = node.index(env)
                        shares[index] = shares.get(index, 0) + threads
                finally:
                    env["warp"], env["warpgroup"] = saved
                if key is not None:
                    r.spreads[key] = shares
        count = node.count
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
            out.append((key, b, threads))
        return out

    def named_name(self, key):
        """How messages name the named barrier (array, index): `wg_done[2]`, or `wg` for an array of one."""
        name = self.named_names.get(key)
        if name is None:
            decl = self.kernel.barriers[key[0]]
            name = self.named_names[key] = decl.name if max(1, decl.count) == 1 else "%s[%d]" % (decl.name, key[1])
        return name

    def arrive_named(self, b, r, node, weight, key=None):
        """Arrive with `weight` threads on named barrier `b` (`key` (array, index); None for block_sync)."""
        role = r.cls.role_index
        if b.arrived + weight > b.threads:
            name = self.named_name(key) if key is not None else "block_sync"
            b.who.append((node.path, role, weight))
            raise (self.named_blame(b, key) if key is not None else None) or Violation(
                "arrival_count", node.path,
                "%d more threads reach named barrier `%s` whose generation needs only %d more of its %d"
                % (weight, name, b.threads - b.arrived, b.threads),
            )
        b.arrived += weight
        b.acc = join(b.acc, r.vc) if b.who else list(r.vc)  # (the generation's first arrival: a copy of its clock)
        b.who.append((node.path, role, weight))
        gen = b.gen
        if b.arrived == b.threads:
            self.woken.append(b)
            b.released[gen] = b.acc
            b.gen += 1
            current = {}  # (shares()' counts, without its paths: each role's most threads in one generation)
            for _, who, n in b.who:
                current[who] = current.get(who, 0) + n
            for who, n in current.items():
                if who not in b.roles or n > b.roles[who]:
                    b.roles[who] = n
            b.arrived, b.acc, b.who = 0, [0] * self.agents, []
        return gen

    def named_blame(self, b, key):
        """The sync that brings the wrong thread count to a named barrier several roles use, as a Violation, or
        None (one role alone: the caller's finding stands). Decided on the threads each role brings (its sites'
        executing threads; for an array indexed per warpgroup, its counts in the generations so far), not on
        which arrived first: the role whose count differs from the barrier's while another's equals it, else a
        role that brings fewer threads than it has."""
        array, name = key[0], self.named_name(key)
        if max(1, self.kernel.barriers[array].count) == 1:
            # One barrier: each role brings what its sites' threads can (a generation that mixed roles' syncs
            # says nothing about what each was meant to bring).
            shares = {}
            for site in self.ctx.sites("named_barrier_sync", "named_barrier_arrive"):
                if site.msg.barrier == self.kernel.barriers[array].name:
                    n = threads.executing_threads(self.ctx.spans[site.role_index].threads, site.conds)
                    old = shares.setdefault(site.role_index, [n, site.path])
                    old[0] = max(old[0], n)
        else:
            shares = b.shares()
        if len(shares) < 2:
            return None
        roles = self.kernel.roles
        paths = {role: path or self.first_named_site(role, array) for role, (n, path) in shares.items()}
        exact = [role for role, (n, _) in shares.items() if n == b.threads]
        if exact:
            culprit = min((role for role in shares if role not in exact), key=lambda role: path_key(paths[role]))
            owner = exact[0]
            return Violation(
                "arrival_count", paths[culprit],
                "role `%s` syncs on named barrier `%s` here with %d thread(s), but the barrier counts %d threads, "
                "which role `%s` brings by itself: the two roles' syncs fall into one another's generations"
                % (roles[culprit].name, name, shares[culprit][0], b.threads, roles[owner].name),
                (("role `%s` syncs on it here" % roles[owner].name, paths[owner]),
                 ("`%s` is declared here" % name, "kernel.barriers[%d]" % array)),
                "Give role `%s` a named barrier of its own%s." % (
                    roles[culprit].name, "" if (shares[culprit][0] + b.threads) % 32 else
                    ", or count both roles in `%s`'s arrivals (%d) so that they sync together"
                    % (name, shares[culprit][0] + b.threads)),
            )
        partial = [role for role, (n, _) in shares.items() if n < self.ctx.spans[role].threads]
        if not partial:
            return None
        culprit = min(partial, key=lambda role: path_key(paths[role]))
        others = [role for role in shares if role != culprit]
        return Violation(
            "arrival_count", paths[culprit],
            "only %d of role `%s`'s %d threads reach named barrier `%s` here; with role %s it counts %d threads"
            % (shares[culprit][0], roles[culprit].name, self.ctx.spans[culprit].threads, name,
               ", ".join("`%s` (%d)" % (roles[o].name, shares[o][0]) for o in others), b.threads),
            tuple(("role `%s` syncs on it here" % roles[o].name, paths[o]) for o in others)
            + (("`%s` is declared here" % name, "kernel.barriers[%d]" % array),),
            "Have every thread of role `%s` reach this sync (hoist it out of the branch that splits them), or count "
            "only the threads that do." % roles[culprit].name,
        )

    def first_named_site(self, role, array):
        """Where role `role` first syncs on named-barrier array `array` (the role itself if nowhere)."""
        for site in self.ctx.sites("named_barrier_sync", "named_barrier_arrive"):
            if site.role_index == role and site.msg.barrier == self.kernel.barriers[array].name:
                return site.path
        return self.ctx.role_path(role)

    def op_named_barrier_sync(self, r, node):
        if not r.named:  # first attempt: arrive; later attempts only check the generations
            r.tick()
            for key, b, threads in self.named_targets(r, node):
                r.named[key] = (b, self.arrive_named(b, r, node, threads, key))
        for b, gen in r.named.values():
            if b.gen <= gen:
                r.waits = tuple(b for b, _ in r.named.values())
                return False
        # Each generation's release holds this class's clock on arrival, which has not moved since: the first
        # join is a copy.
        for i, (b, gen) in enumerate(r.named.values()):
            released = b.released[gen]
            if i == 0:
                r.vc = list(released)
            elif released != r.vc:  # (barriers the same classes reached together release one clock)
                r.vc = join(r.vc, released)
        r.named = {}
        self.peer_syncs[r.index] = r.tick()
        return True

    def op_named_barrier_arrive(self, r, node):
        r.tick()
        for key, b, threads in self.named_targets(r, node):
            self.arrive_named(b, r, node, threads, key)
        return True

    def op_block_sync(self, r, node):
        b = self.block
        if r.sync_reg is None:
            r.tick()
            r.sync_reg = self.arrive_named(b, r, node, 1)
        if b.gen <= r.sync_reg:
            r.waits = (b,)
            return False
        r.vc = list(b.released[r.sync_reg])  # the join with r.vc: the release holds r's clock on arrival
        r.sync_reg = None
        r.syncs += 1
        self.peer_syncs[r.index] = r.tick()
        return True
