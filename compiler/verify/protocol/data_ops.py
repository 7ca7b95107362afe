"""The protocol model's memory ops: tile reads and writes, asynchronous copies and MMAs, fences.

A mixin of simulate.Model (it uses the model's runners, memory and clocks).
Synchronous accesses are the class's own; TMA loads, MMAs and TMA stores issue
on the class's asynchronous units, whose completions (barrier completion,
mma_wait, mma_commit, bulk_wait, cp_async_wait) carry their clocks back.
An access covers one box per warpgroup, warp or thread of the class where its
window or its writers differ at that level (`pieces`). A read of a ring stage
that finds its data missing after a wait on the ring's `full` blames a short
expect_tx when the phase it acquired completed without that stage's load.
"""

from cake.ir.v1 import ir_pb2

from compiler.verify.protocol import program
from compiler.verify.protocol.happens_before import MMA_AGENT, STORE_AGENT, TMA_AGENT, Violation, join

MMA_SYNC = ir_pb2.MMA_KIND_MMA_SYNC
_LEVELS = (None, "warpgroup", "warp", "thread")
_BUILTINS = ("thread", "warp", "warpgroup", "lane", "elected")


def _finer(a, b):
    return a if _LEVELS.index(a) >= _LEVELS.index(b) else b


class DataOps:
    """Ops that read or write regions, issue asynchronous work or fence."""

    def slot(self, r, tile, path):
        if tile.stage is None:
            return 0
        s = tile.stage(r.env)
        if not 0 <= s < tile.stages:
            raise Violation(
                "stage_range", path, "stage %d of `%s` is outside its %d stages" % (s, tile.name, tile.stages)
            )
        return s

    def pieces(self, r, tile, unit=None):
        """[(writer key or None, box)] an access of `tile` by class r covers: one box per warpgroup, warp or
        thread of the class where its window's starts or its writers (`unit`, Node.write_unit) differ at that
        level; the key names the writer (role, level, index) for units, None for a cooperative access."""
        if tile.grain is None and unit is None:
            return [(None, tile.box(r.env))]
        env = r.env
        try:
            key = (tile, unit, tuple([env[n] for n in tile.deps]))
        except KeyError:  # a name without a value: evaluating the window says so
            key = None
        cached = r.pieces.get(key)
        if cached is not None:
            return cached
        level = _finer(tile.grain, unit)
        out, seen = [], set()
        saved = {b: env[b] for b in _BUILTINS}
        try:
            for u, b in r.cls.units(level):
                env.update(b)
                writer = (r.cls.role_index, unit, b[unit]) if unit else None
                box = tile.box(env)
                if (writer, box) not in seen:
                    seen.add((writer, box))
                    out.append((writer, box))
                if tile.grain is None and len(out) > 1:  # every unit writes the same box: two make the overlap
                    break
        finally:
            env.update(saved)
        if key is not None:
            r.pieces[key] = out
        return out

    def read(self, r, tile, node, agent_vc=None, agent=None, async_proxy=False):
        key = (tile.region, self.slot(r, tile, node.path) if tile.stage is not None else 0)
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
        writers = self.writers.get(tile.region)
        elsewhere = writers is not None and (len(writers) > 1 or r.cls.role_index not in writers)
        inst = (node.path, tuple(r.iters))  # (Model.inst and the common case of pieces, inline)
        for _, box in self.pieces(r, tile) if tile.grain is not None else ((None, tile.box(r.env)),):
            try:
                self.memory.read(key, box, who, vc, node.path, inst, r.index, tile.ring, async_proxy, elsewhere,
                                 not async_proxy and tile.space == program.SHARED)
            except Violation as v:
                short = self.short_phase(r, tile, key[1], node) if v.kind in ("raw", "uninit_read") and tile.ring else None
                raise short or v

    def short_phase(self, r, tile, slot, node):
        """When a read of a ring stage finds its data missing after the reader waited on the ring's `full`: the
        Violation blaming the expect_tx of the phase it acquired, if that phase completed without this region's
        load (its bytes were short, so it completed early), else None."""
        ring = self.ctx.pipeline_of_region.get(tile.name)
        full = self.ctx.barriers.get(ring.full) if ring is not None else None
        if full is None or (tile.region, full[0]) not in self.tma_filled:
            return None
        array, completion = self.arrays.get(full[0]), r.acquired.get((full[0], slot))
        s = array.slots.get(slot) if array is not None else None
        if s is None or completion is None or not 0 <= completion < len(s.history):
            return None
        expects, expected, loads, regions = s.history[completion]
        if not loads or tile.region in regions:
            return None
        return Violation(
            "tx_bytes", expects[-1] if expects else loads[-1],
            "expects %d transaction bytes on `%s`[%d], fewer than its round's loads bring: the phase completed "
            "before the load of `%s` arrived, and a consumer read that stage" % (expected, ring.full, slot, tile.name),
            (("the read that finds `%s` missing" % tile.name, node.path), ("`%s` is declared here" % ring.full,
                                                                          array.path)),
            "Set expect_tx bytes to the sum of the boxes every load of the round brings.",
        )

    def write(self, r, tile, node, agent_vc=None, agent=None, generic=False, async_unit=False):
        key = (tile.region, self.slot(r, tile, node.path) if tile.stage is not None else 0)
        if tile.space == program.REGISTER:
            r.regs_written.add(key)
            if async_unit:
                r.regs_pending[key] = node.path
            return key
        vc = agent_vc if agent_vc is not None else r.vc
        who = agent if agent is not None else r.base
        inst = (node.path, tuple(r.iters))  # (Model.inst, inline)
        async_proxy = agent is not None and not generic and tile.space == program.SHARED  # a TMA load's
        for unit, box in self.pieces(r, tile, node.write_unit):
            self.memory.write(key, box, who, vc, node.path, inst, r.index, tile.ring, generic, unit, async_proxy)
        return None

    def unit(self, r, which):
        """Issue on one of the class's async units: its clock joins the issuer's and ticks."""
        r.tick()
        u = join(r.units[which], r.vc)
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

    op_fill = op_elementwise = op_reduce = op_arg_reduce = op_top_k = op_rescore = op_scan = op_tri_solve = op_copy
    op_ldmatrix = op_stmatrix = op_tmem_load = op_atomic = op_copy

    def op_tma_load(self, r, node):
        self.check_round(r, node, node.bar)
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
            self.released_before_refill(r, node, tile, index)
        self.write(r, tile, node, agent_vc=u, agent=r.agent[TMA_AGENT])
        nbytes = node.bytes * node.copies * r.cls.weight
        self.contribute(array, index, node, u, 0, -nbytes, self.intended(r, node.bar), tile.region)
        return True

    def released_before_refill(self, r, node, tile, index):
        """A load of round r >= stages into a ring stage needs the consumers' release of round r - stages done:
        else it refills a slot they may not have read yet (whether or not they read it first in this run)."""
        p = self.full_of.get(node.bar.array)
        empty = self.ctx.barriers.get(self.kernel.pipelines[p].empty) if p is not None else None
        if empty is None or empty[0] not in self.arrays:
            return
        fills = self.slot_value(r, node.bar) // node.bar.count  # fills of this slot before this one
        slot = self.arrays[empty[0]].slots.get(index)
        if fills and (slot is None or slot.ph < fills):
            raise Violation(
                "ring_race", node.path,
                "refills stage %d of `%s` for round %d before its consumers released round %d of ring `%s`: nothing "
                "orders this load after their release" % (index, tile.name, self.slot_value(r, node.bar),
                                                          self.slot_value(r, node.bar) - node.bar.count,
                                                          self.kernel.pipelines[p].name),
            )

    def op_tma_store(self, r, node):
        u = self.unit(r, STORE_AGENT)
        for t in node.reads:
            self.read(r, t, node, agent_vc=u, agent=r.agent[STORE_AGENT], async_proxy=True)
        r.store_groups.append(list(u))
        return True

    def op_bulk_wait(self, r, node):
        keep = max(0, node.pending)
        while len(r.store_groups) > keep:
            r.vc = join(r.vc, r.store_groups.pop(0))
        r.tick()
        return True

    def op_cp_async(self, r, node):
        r.tick()
        group = []
        for t in node.writes:
            if t.space != program.SHARED:
                continue
            key, inst = (t.region, self.slot(r, t, node.path)), self.inst(r, node)
            for _, box in self.pieces(r, t):
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
            r.vc = join(r.vc, snapshot)
            for rk in written:
                r.regs_pending.pop(rk, None)

    def op_mma_wait(self, r, node):
        self.retire_mma(r, max(0, node.pending))
        r.tick()
        return True

    def op_mma_commit(self, r, node):
        self.check_round(r, node, node.bar)
        r.tick()
        arrival = join(r.vc, r.units[MMA_AGENT]) if MMA_AGENT in r.units else list(r.vc)
        array, index = self.mbarrier(r, node.bar, node, arrival, async_proxy=True)
        self.release(r, node, node.bar.array, index)
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
