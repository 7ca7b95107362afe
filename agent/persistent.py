"""The persistent-scheduling rewrite: a grid of blocks becomes SM-resident blocks walking the tiles.

For a kernel launched on a grid [X] or [X, Y] whose roles each start with a prologue
ending at their first block_sync (barrier set-up), the rewrite
- launches persistently (one block per SM slot) and wraps each role's work after the
  prologue in a persistent loop over the X * Y tiles (`tile`, counting `it`), with
  block.x and block.y replaced by tile % X and tile / X;
- continues every stage ring across tiles: a ring reference by round r of a loop
  over v (end E) becomes round it * E + r (and the stage it * E + v ...), so slots
  and parities stay in step between producer and consumers;
- turns each resident tile (a shared region outside the rings, loaded once by TMA
  with a one-shot mbarrier waited at phase 0) into a one-stage ring: a new `empty`
  mbarrier that every consuming thread arrives on after its last read of the tile in
  a round, which the producer waits on before loading the next tile's data.
The kernel computes the same thing; the fill, the launch waves and the tail effect
are paid once per SM instead of once per block.
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import (
    NotApplicable,
    binary,
    const,
    copy_kernel,
    declared_names,
    fresh_name,
    sym,
    walk_ops,
    written_tiles,
)
from compiler.ir.paths import walk
from compiler.ir.roles import role_threads

TILE, COUNTER = "tile", "it"


def _expr_copy(e):
    out = ir_pb2.Expr()
    out.CopyFrom(e)
    return out


def _syms(expr):
    return {n.sym for _, n in walk(expr) if isinstance(n, ir_pb2.Expr) and n.WhichOneof("kind") == "sym"}


def _substitute(message, mapping):
    """Replace symbols in every Expr under `message` (mapping: name -> Expr)."""
    for _, node in list(walk(message)):
        if isinstance(node, ir_pb2.Expr) and node.WhichOneof("kind") == "sym" and node.sym in mapping:
            node.CopyFrom(mapping[node.sym])


def _prologue_end(body):
    for i, op in enumerate(body):
        if op.WhichOneof("kind") == "block_sync":
            return i + 1
    raise NotApplicable("a role has no block_sync ending its prologue")


def _ring_refs(op):
    """(kind, message) of the BarrierRefs and TileRefs directly in one op (not in nested bodies)."""
    kind = op.WhichOneof("kind")
    if kind in ("loop", "branch", None):
        return []
    return [n for _, n in walk(getattr(op, kind)) if isinstance(n, (ir_pb2.BarrierRef, ir_pb2.TileRef))]


def _continue_rings(ops, loops, ring_barriers, ring_regions):
    """Offset ring rounds and stages by it * E for the enclosing loop over v (loops: var -> end)."""
    for op in ops:
        kind = op.WhichOneof("kind")
        if kind == "loop":
            inner = dict(loops)
            if op.loop.kind == ir_pb2.LOOP_KIND_SERIAL_UNSPECIFIED:
                inner[op.loop.var] = op.loop.end
            _continue_rings(op.loop.body, inner, ring_barriers, ring_regions)
            continue
        if kind == "branch":
            _continue_rings(op.branch.then_body, loops, ring_barriers, ring_regions)
            _continue_rings(op.branch.else_body, loops, ring_barriers, ring_regions)
            continue
        for ref in _ring_refs(op):
            if isinstance(ref, ir_pb2.BarrierRef):
                target = ref.round if ref.barrier in ring_barriers and ref.WhichOneof("slot") == "round" else None
            else:
                target = ref.stage if ref.region in ring_regions and ref.HasField("stage") else None
            if target is None:
                continue
            used = _syms(target) & set(loops)
            if len(used) != 1:
                raise NotApplicable("a ring reference outside one loop over its rounds")
            var = used.pop()
            offset = binary(ir_pb2.BINARY_OP_MUL, sym(COUNTER), _expr_copy(loops[var]))
            _substitute(target, {var: binary(ir_pb2.BINARY_OP_ADD, offset, sym(var))})


def _resident(kernel, ring_regions):
    """(region, one-shot barrier, producer role) of each TMA-loaded shared region outside the rings."""
    barriers = {b.name: b for b in kernel.barriers}
    out = {}
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") != "tma_load":
                continue
            region, bar = op.tma_load.dst.region, op.tma_load.barrier.barrier
            if region in ring_regions:
                continue
            b = barriers.get(bar)
            if b is None or max(1, b.count) != 1:
                raise NotApplicable("resident region %r is loaded through a barrier array" % region)
            out[region] = (bar, role.name)
    return out


def _reads(op, region):
    return any(isinstance(n, ir_pb2.TileRef) and n.region == region for _, n in walk(op))


def persistent(kernel):
    if kernel.launch.persistent:
        raise NotApplicable("the launch is persistent already")
    grid = list(kernel.launch.grid)
    if not 1 <= len(grid) <= 2:
        raise NotApplicable("a %d-dimensional grid" % len(grid))
    taken = {op.loop.var for r in kernel.roles for _, _, op in walk_ops(r.body) if op.WhichOneof("kind") == "loop"}
    if {TILE, COUNTER} & taken:
        raise NotApplicable("loop variables %s are taken" % sorted({TILE, COUNTER} & taken))
    if any(p.producer in p.consumers for p in kernel.pipelines):
        # Its prefetch loop issues rounds of a loop it is not (agent/transforms/ring_form.py): split it first.
        raise NotApplicable("a role fills a ring it reads itself")
    out = copy_kernel(kernel)
    x = _expr_copy(grid[0])
    total = _expr_copy(x) if len(grid) == 1 else binary(ir_pb2.BINARY_OP_MUL, _expr_copy(x), _expr_copy(grid[1]))
    blocks = {"block.x": binary(ir_pb2.BINARY_OP_MOD, sym(TILE), x),
              "block.y": binary(ir_pb2.BINARY_OP_DIV, sym(TILE), x) if len(grid) == 2 else const(0)}
    ring_barriers = {name for p in out.pipelines for name in (p.full, p.empty)}
    ring_regions = {name for p in out.pipelines for name in p.regions}
    resident = _resident(out, ring_regions)
    for role in out.roles:
        split = _prologue_end(role.body)
        work = list(role.body[split:])
        if not work:
            raise NotApplicable("role %r has no work after its prologue" % role.name)
        for op in work:
            _substitute(op, blocks)
        _continue_rings(work, {}, ring_barriers, ring_regions)
        loop = ir_pb2.Loop(var=TILE, start=const(0), end=total, kind=ir_pb2.LOOP_KIND_PERSISTENT, counter=COUNTER,
                           body=work)
        del role.body[split:]
        role.body.add(loop=loop)
    for region, (bar, producer) in resident.items():
        _ring_of_one(out, region, bar, producer)
    _per_tile_phases(out, {bar for bar, _ in resident.values()} | ring_barriers)
    _tile_barriers(out, ring_regions | set(resident))
    out.launch.persistent = True
    out.launch.min_blocks_per_sm = max(1, out.launch.min_blocks_per_sm)
    del out.launch.grid[:]
    return out


def _ring_of_one(kernel, region, full, producer):
    """Make the resident `region` a one-stage ring (full, new empty) cycled once per tile."""
    empty = region + "_empty"
    if any(b.name == empty for b in kernel.barriers):
        raise NotApplicable("barrier %r exists already" % empty)
    consumers = []
    for role in kernel.roles:
        tiles = role.body[-1].loop.body
        for _, _, op in walk_ops(tiles):
            for ref in _ring_refs(op):
                if isinstance(ref, ir_pb2.BarrierRef) and ref.barrier == full:
                    ref.ClearField("index")
                    ref.round.CopyFrom(sym(COUNTER))
            if op.WhichOneof("kind") == "mbarrier_wait" and op.mbarrier_wait.barrier.barrier == full:
                op.mbarrier_wait.ClearField("phase")
                if role.name not in consumers:
                    consumers.append(role)
        if role.name == producer:
            _before_expect(tiles, full, empty)
    if not consumers:
        raise NotApplicable("nobody waits for resident region %r" % region)
    for role in consumers:
        tiles = role.body[-1].loop.body
        last = max((i for i, op in enumerate(tiles) if _reads(op, region)), default=None)
        if last is None:
            raise NotApplicable("role %r waits for %r but never reads it" % (role.name, region))
        tiles.insert(last + 1, ir_pb2.Op(mbarrier_arrive=ir_pb2.MbarrierArrive(
            barrier=ir_pb2.BarrierRef(barrier=empty, round=sym(COUNTER)))))
    kernel.barriers.add(name=empty, kind=ir_pb2.BARRIER_KIND_MBARRIER, count=1,
                        arrivals=sum(role_threads(r) for r in consumers))
    kernel.pipelines.add(name=region + "_ring", stages=1, full=full, empty=empty, regions=[region], producer=producer,
                         consumers=[r.name for r in consumers])
    _init_beside(kernel, full, empty)


def _signals(ops, barrier, in_loop=False):
    """(op, inside a loop of the tile's work) for each op that arrives on, commits to or loads into `barrier`."""
    for op in ops:
        kind = op.WhichOneof("kind")
        if kind == "loop":
            yield from _signals(op.loop.body, barrier, True)
        elif kind == "branch":
            yield from _signals(op.branch.then_body, barrier, in_loop)
            yield from _signals(op.branch.else_body, barrier, in_loop)
        elif kind in ("mbarrier_arrive", "mbarrier_expect_tx", "mma_commit", "tma_load") and \
                getattr(op, kind).barrier.barrier == barrier:
            yield op, in_loop


def _per_tile_phases(kernel, handled):
    """A barrier completed once per tile and waited at a constant phase p waits at (it + p) % 2 in tile it."""
    for role in kernel.roles:
        tiles = role.body[-1].loop.body
        for _, _, op in walk_ops(tiles):
            if op.WhichOneof("kind") != "mbarrier_wait" or not op.mbarrier_wait.HasField("phase"):
                continue
            bar = op.mbarrier_wait.barrier.barrier
            if bar in handled:
                continue
            phase = op.mbarrier_wait.phase
            if phase.WhichOneof("kind") != "int":
                raise NotApplicable("barrier %r is waited at a phase that a tile's work computes" % bar)
            signals = [s for r in kernel.roles for s in _signals(r.body[-1].loop.body, bar)]
            if not signals or any(in_loop for _, in_loop in signals):
                raise NotApplicable("barrier %r does not complete exactly once per tile" % bar)
            op.mbarrier_wait.phase.CopyFrom(binary(ir_pb2.BINARY_OP_MOD, binary(ir_pb2.BINARY_OP_ADD, sym(COUNTER),
                                                                               const(phase.int)), const(2)))


def _tile_barriers(kernel, rings):
    """A role whose tile work writes shared or tensor memory outside the rings meets at a named barrier after it.

    Its threads share that memory: without the barrier, a thread starting the next tile
    could overwrite what another still reads of this one (a grid launch ends each block
    instead). Rings need none: their slots are released and refilled by round.
    """
    spaces = {r.name: r.space for r in kernel.regions}
    taken = declared_names(kernel)
    for role in kernel.roles:
        if role_threads(role) <= 32:
            continue
        tiles = role.body[-1].loop.body
        if not any(spaces.get(t.region) in (ir_pb2.MEMORY_SPACE_SHARED, ir_pb2.MEMORY_SPACE_TENSOR)
                   and t.region not in rings for _, _, op in walk_ops(tiles) for t in written_tiles(op)):
            continue
        name = fresh_name(taken, role.name + "_tile_done")
        taken.add(name)
        kernel.barriers.add(name=name, kind=ir_pb2.BARRIER_KIND_NAMED, count=1, arrivals=role_threads(role))
        tiles.add(named_barrier_sync=ir_pb2.NamedBarrierSync(barrier=name))


def _before_expect(ops, full, empty):
    """Insert a wait on the empty slot before the producer's expect_tx on `full`."""
    for body, i, op in list(walk_ops(ops)):
        if op.WhichOneof("kind") == "mbarrier_expect_tx" and op.mbarrier_expect_tx.barrier.barrier == full:
            body.insert(i, ir_pb2.Op(mbarrier_wait=ir_pb2.MbarrierWait(
                barrier=ir_pb2.BarrierRef(barrier=empty, round=sym(COUNTER)))))
            return
    raise NotApplicable("no expect_tx on %r to wait before" % full)


def _init_beside(kernel, full, empty):
    """Initialise `empty` where `full` is initialised."""
    for role in kernel.roles:
        for body, i, op in list(walk_ops(role.body)):
            if op.WhichOneof("kind") == "mbarrier_init" and op.mbarrier_init.barrier == full:
                body.insert(i + 1, ir_pb2.Op(mbarrier_init=ir_pb2.MbarrierInit(barrier=empty)))
                return
    raise NotApplicable("barrier %r is never initialised" % full)
