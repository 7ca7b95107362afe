"""Hypothesis strategies for targeted mutations: edits that break exactly one thing a verifier rule checks,
and edits that keep a kernel's meaning.

    BREAKING["CAKE-PIPE-004"](bases)  # a strategy of mutated copies of `bases` that rule must reject
    renamed(bases), reordered(bases), restaged(bases)  # copies that must verify as the originals do (cleanly)

Each breaking strategy draws a base that has a site of its kind, one such site, and an edit of it:
- CAKE-PIPE-004: a producer's ring loop runs 1 to 3 rounds more;
- CAKE-DATA-007: an output's or a staged tile's coordinate shares rows between writers (a warpgroup, warp,
  block or loop stride halved, or a warpgroup or warp term dropped);
- CAKE-CONTRACT-010: an output's block or loop stride doubled (writers skip rows);
- CAKE-DATA-008: what a TMA store or MMA reads is written in part (staging by warpgroup 0 only, or half
  the rows of the only write);
- CAKE-STRUCT-019: an operand that no longer fits its op (a shared operand's window halved);
- CAKE-STRUCT-020: top-k lists of the wrong length (k halved);
- CAKE-PIPE-005: a consumer releases the next round's slot;
- CAKE-SYNC-008: a round inside a persistent loop restarts on every tile, or overlaps the next tile's;
- CAKE-SYNC-006: an expect_tx short of one load's bytes, the loads in either order;
- CAKE-SYNC-005: a producer also syncs on a consumer's named barrier;
- CAKE-DATA-011: the fence.proxy.async before a ring release (or before the named barrier ahead of an
  elected release) is dropped, so generic reads of the stage are not ordered before its TMA refill.
"""

import math

import hypothesis.strategies as st
from cake.ir.v1 import ir_pb2

from google.protobuf.descriptor import FieldDescriptor

from compiler.ir import names, paths
from compiler.ir.dtypes import DTYPE_BYTES

OP = ir_pb2.BinaryOp
UNIT_BUILTINS = frozenset(("warp", "warpgroup", "thread", "lane"))
_FRAGMENTS = (ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC, ir_pb2.FRAGMENT_LAYOUT_WGMMA_ROWS, ir_pb2.FRAGMENT_LAYOUT_MMA_ACC,
              ir_pb2.FRAGMENT_LAYOUT_MMA_ROWS)


# -- IR helpers --------------------------------------------------------------------------------------------


def _copy(kernel):
    out = ir_pb2.Kernel()
    out.CopyFrom(kernel)
    return out


def _int(v):
    return ir_pb2.Expr(int=v)


def _sym(name):
    return ir_pb2.Expr(sym=name)


def _binary(op, lhs, rhs):
    return ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=op, lhs=lhs, rhs=rhs))


def _names(expr):
    kind = expr.WhichOneof("kind")
    if kind == "sym":
        return {expr.sym}
    if kind == "binary":
        return _names(expr.binary.lhs) | _names(expr.binary.rhs)
    return set()


def _nodes(expr):
    """Every Expr node of `expr`, outermost first."""
    yield expr
    if expr.WhichOneof("kind") == "binary":
        yield from _nodes(expr.binary.lhs)
        yield from _nodes(expr.binary.rhs)


def _ops(body, path, loops=()):
    """(op, path, enclosing Loop messages) of a body, nested ops included."""
    for j, op in enumerate(body):
        kind = op.WhichOneof("kind")
        here = "%s[%d].%s" % (path, j, kind)
        yield op, here, loops
        if kind == "loop":
            yield from _ops(op.loop.body, here + ".body", loops + (op.loop,))
        elif kind == "branch":
            yield from _ops(op.branch.then_body, here + ".then_body", loops)
            yield from _ops(op.branch.else_body, here + ".else_body", loops)


def _role_ops(kernel):
    for i, role in enumerate(kernel.roles):
        for op, path, loops in _ops(role.body, "kernel.roles[%d].body" % i):
            yield i, op, path, loops


def _region(kernel, name):
    return next((r for r in kernel.regions if r.name == name), None)


def _role_index(kernel, name):
    return next((i for i, r in enumerate(kernel.roles) if r.name == name), None)


def _loop_vars(loops):
    out = set()
    for loop in loops:
        out |= {loop.var, loop.counter} - {""}
    return out


def _threads(role):
    return 32 * (role.warps if role.WhichOneof("size") == "warps" else 4 * role.warpgroups)


def _strides(expr, reads):
    """The `X * c` nodes of `expr` (c an even constant of at least 2) whose X reads a name in `reads`."""
    out = []
    for node in _nodes(expr):
        if node.WhichOneof("kind") != "binary" or node.binary.op != OP.BINARY_OP_MUL:
            continue
        for x, c in ((node.binary.lhs, node.binary.rhs), (node.binary.rhs, node.binary.lhs)):
            if c.WhichOneof("kind") == "int" and c.int >= 2 and c.int % 2 == 0 and _names(x) & reads:
                out.append(c)
                break
    return out


def _unit_terms(expr):
    """The `A + B` nodes of `expr` where exactly one side reads a warp, warpgroup, thread or lane builtin."""
    out = []
    for node in _nodes(expr):
        if node.WhichOneof("kind") == "binary" and node.binary.op == OP.BINARY_OP_ADD:
            lhs, rhs = bool(_names(node.binary.lhs) & UNIT_BUILTINS), bool(_names(node.binary.rhs) & UNIT_BUILTINS)
            if lhs != rhs:
                out.append(node)
    return out


def _drop_unit_term(node):
    keep = node.binary.lhs if not _names(node.binary.lhs) & UNIT_BUILTINS else node.binary.rhs
    held = ir_pb2.Expr()
    held.CopyFrom(keep)
    node.CopyFrom(held)


# -- site finders: f(kernel) -> [edit], an edit being a function (draw) -> None that changes `kernel` ---------


def _write_only(kernel, param):
    return any(p.name == param and p.access == ir_pb2.ACCESS_WRITE for p in kernel.params)


def _output_writes(kernel):
    """(op, role, path, coordinate Exprs, loops, is global) of ops that store a fragment or a staged tile: into
    shared memory, or into a write-only output (the outputs check proves only those)."""
    for role, op, path, loops in _role_ops(kernel):
        kind = op.WhichOneof("kind")
        if kind == "copy" and op.copy.HasField("src_tile"):
            src = _region(kernel, op.copy.src_tile.region)
            if src is None or src.space != ir_pb2.MEMORY_SPACE_REGISTER or src.layout not in _FRAGMENTS:
                continue
            if op.copy.HasField("dst_global"):
                if _write_only(kernel, op.copy.dst_global.param):
                    yield op, role, path, list(op.copy.dst_global.coords), loops, True
            elif op.copy.HasField("dst_tile") and op.copy.dst_tile.window:
                yield op, role, path, [w.start for w in op.copy.dst_tile.window], loops, False
        elif kind == "tma_store" and _write_only(kernel, op.tma_store.dst.param):
            yield op, role, path, list(op.tma_store.dst.coords), loops, True


def _constant(expr):
    return expr.int if expr.WhichOneof("kind") == "int" else None


def _blockwise(kernel, loops):
    """The block indices and loop variables that take several values: a stride of theirs spreads writers."""
    out = set()
    for axis, g in zip("xyz", kernel.launch.grid):
        if _constant(g) is None or _constant(g) > 1:
            out.add("block." + axis)
    for loop in loops:
        start, end = _constant(loop.start), _constant(loop.end)
        if start is None or end is None or end - start > 1 or loop.kind == ir_pb2.LOOP_KIND_PERSISTENT:
            out |= {loop.var, loop.counter} - {""}
    return out


def _units(role):
    """The unit builtins that take several values in a role."""
    warps = _threads(role) // 32
    return {"thread", "lane"} | ({"warp"} if warps > 1 else set()) | ({"warpgroup"} if warps > 4 else set())


def overlap_sites(kernel):
    edits = []
    for op, role, path, coords, loops, _ in _output_writes(kernel):
        units = _units(kernel.roles[role])
        for e in coords:
            for c in _strides(e, units | _blockwise(kernel, loops)):
                edits.append(lambda draw, c=c: setattr(c, "int", c.int // 2))
            for node in _unit_terms(e):
                side = node.binary.lhs if _names(node.binary.lhs) & UNIT_BUILTINS else node.binary.rhs
                if _names(side) & units:
                    edits.append(lambda draw, node=node: _drop_unit_term(node))
    return edits


def hole_sites(kernel):
    edits = []
    for op, role, path, coords, loops, is_global in _output_writes(kernel):
        if not is_global:
            continue
        for e in coords:
            for c in _strides(e, _blockwise(kernel, loops)):
                edits.append(lambda draw, c=c: setattr(c, "int", c.int * 2))
    return edits


def overfill_sites(kernel):
    edits = []
    for p in kernel.pipelines:
        producer = _role_index(kernel, p.producer)
        for role, op, path, loops in _role_ops(kernel):
            if role != producer or op.WhichOneof("kind") != "loop" or loops:
                continue
            if any(o.WhichOneof("kind") == "tma_load" and o.tma_load.barrier.barrier == p.full for o in op.loop.body):
                loop = op.loop
                edits.append(lambda draw, loop=loop: loop.end.CopyFrom(
                    _binary(OP.BINARY_OP_ADD, _clone(loop.end), _int(draw(st.integers(1, 3))))))
    return edits


def _mma_or_store_reads(kernel):
    out = set()
    for _, op, _, _ in _role_ops(kernel):
        kind = op.WhichOneof("kind")
        if kind == "mma":
            out |= {op.mma.a.region, op.mma.b.region}
        elif kind == "tma_store":
            out.add(op.tma_store.src.region)
    return out


def _writes_of(kernel, region):
    found = []
    for _, op, _, _ in _role_ops(kernel):
        kind = op.WhichOneof("kind")
        msg = getattr(op, kind) if kind else None
        for field in ("dst_tile", "dst"):
            if msg is not None and field in msg.DESCRIPTOR.fields_by_name and msg.HasField(field):
                ref = getattr(msg, field)
                if isinstance(ref, ir_pb2.TileRef) and ref.region == region:
                    found.append(op)
    return found


def uncovered_sites(kernel):
    edits, read = [], _mma_or_store_reads(kernel)
    for role, op, path, loops in _role_ops(kernel):
        if op.WhichOneof("kind") != "copy" or not op.copy.HasField("dst_tile") or op.copy.dst_tile.region not in read:
            continue
        src = _region(kernel, op.copy.src_tile.region) if op.copy.HasField("src_tile") else None
        if src is not None and src.layout in _FRAGMENTS and op.copy.dst_tile.window and \
                kernel.roles[role].WhichOneof("size") == "warpgroups" and kernel.roles[role].warpgroups > 1:
            def guard(draw, op=op):
                inner = ir_pb2.Op()
                inner.CopyFrom(op)
                op.Clear()
                op.branch.cond.CopyFrom(_binary(OP.BINARY_OP_EQ, _sym("warpgroup"), _int(0)))
                op.branch.then_body.add().CopyFrom(inner)
            edits.append(guard)
        dst = _region(kernel, op.copy.dst_tile.region)
        # Staging (from registers or shared): half of a load from global reads as nothing loaded (CAKE-DATA-002).
        if not op.copy.HasField("src_global") and not op.copy.dst_tile.window and dst is not None and \
                dst.shape[0] >= 2 and len(_writes_of(kernel, dst.name)) == 1:
            def half(draw, op=op, dst=dst):
                op.Clear()
                op.fill.dst.region = dst.name
                for d, size in enumerate(dst.shape):
                    op.fill.dst.window.add(start=_int(0), size=size // 2 if d == 0 else size)
            edits.append(half)
    return edits


def shape_sites(kernel):
    edits = []
    for role, op, path, loops in _role_ops(kernel):
        kind = op.WhichOneof("kind")
        if kind == "elementwise":
            dst = _region(kernel, op.elementwise.dst.region)
            for s in op.elementwise.srcs:
                src = _region(kernel, s.tile.region) if s.WhichOneof("kind") == "tile" else None
                if src is None or dst is None or src.space != ir_pb2.MEMORY_SPACE_SHARED:
                    continue
                shape = [w.size for w in s.tile.window] if s.tile.window else list(src.shape)
                if shape[-1] >= 4 and shape[-1] == dst.shape[-1]:
                    def narrow(draw, tile=s.tile, shape=shape):
                        if not tile.window:
                            for d in shape:
                                tile.window.add(start=_int(0), size=d)
                        tile.window[-1].size = shape[-1] // 2
                    edits.append(narrow)
    return edits


def topk_length_sites(kernel):
    return [lambda draw, m=op.top_k: setattr(m, "k", m.k // 2)
            for role, op, path, loops in _role_ops(kernel) if op.WhichOneof("kind") == "top_k" and op.top_k.k >= 2]


def _ring_of(kernel, barrier, end):
    return next((p for p in kernel.pipelines if (p.empty if end == "empty" else p.full) == barrier), None)


def release_sites(kernel):
    edits = []
    for role, op, path, loops in _role_ops(kernel):
        kind = op.WhichOneof("kind")
        if kind not in ("mbarrier_arrive", "mma_commit"):
            continue
        ref = getattr(op, kind).barrier
        ring = _ring_of(kernel, ref.barrier, "empty")
        # With one stage the next round's slot is this one's: the release skips a completion (CAKE-SYNC-008).
        if ring is None or ring.stages < 2 or kernel.roles[role].name not in ring.consumers or \
                ref.WhichOneof("slot") != "round":
            continue
        edits.append(lambda draw, ref=ref: ref.round.CopyFrom(_binary(OP.BINARY_OP_ADD, _clone(ref.round), _int(1))))
    return edits


def _clone(expr):
    out = ir_pb2.Expr()
    out.CopyFrom(expr)
    return out


def restart_sites(kernel):
    """By-round refs inside a loop nested in a persistent loop, whose round reads the persistent loop: its
    variable read as 0 (the rounds start over on every tile), or its multiple `it * n` read as `it` (one tile's
    rounds overlap the next one's). Both name the same rounds as before on the first tile."""
    edits = []
    for role, op, path, loops in _role_ops(kernel):
        kind = op.WhichOneof("kind")
        ref = getattr(getattr(op, kind), "barrier", None) if kind else None
        if not isinstance(ref, ir_pb2.BarrierRef) or ref.WhichOneof("slot") != "round" or len(loops) < 2:
            continue
        outer = [loop for loop in loops if loop.kind == ir_pb2.LOOP_KIND_PERSISTENT]
        tile = _loop_vars(outer[:1]) & _names(ref.round)
        if not tile or loops[-1] is outer[0]:
            continue
        edits.append(lambda draw, ref=ref, tile=tile: _substitute(ref.round, tile))
        for node in _nodes(ref.round):
            if node.WhichOneof("kind") == "binary" and node.binary.op == OP.BINARY_OP_MUL:
                for side in (node.binary.lhs, node.binary.rhs):
                    if side.WhichOneof("kind") == "sym" and side.sym in tile:
                        edits.append(lambda draw, node=node, name=side.sym: node.CopyFrom(_sym(name)))
    return edits


def _substitute(expr, names_):
    """Read the names `names_` as 0 in `expr`."""
    for node in _nodes(expr):
        if node.WhichOneof("kind") == "sym" and node.sym in names_:
            node.CopyFrom(_int(0))


def short_expect_sites(kernel):
    edits = []
    for role, op, path, loops in _role_ops(kernel):
        if op.WhichOneof("kind") != "loop":
            continue
        body = op.loop.body
        for j, e in enumerate(body):
            if e.WhichOneof("kind") != "mbarrier_expect_tx":
                continue
            loads = [k for k, o in enumerate(body) if o.WhichOneof("kind") == "tma_load" and
                     o.tma_load.barrier == e.mbarrier_expect_tx.barrier]
            if len(loads) < 2:
                continue

            def short(draw, body=body, e=e, loads=loads):
                k = draw(st.sampled_from(loads))
                region = _region(kernel, body[k].tma_load.dst.region)
                e.mbarrier_expect_tx.bytes -= math.prod(region.shape) * DTYPE_BYTES[region.dtype]
                if draw(st.booleans()):  # the short load first or last: the finding must not change
                    first, last = body[loads[0]], body[loads[-1]]
                    held = ir_pb2.Op()
                    held.CopyFrom(first)
                    first.CopyFrom(last)
                    last.CopyFrom(held)
            edits.append(short)
    return edits


def shared_named_sites(kernel):
    """Named barriers of one barrier that a single role syncs on with all its threads, and a producer's ring
    loop to add a sync on it to."""
    edits, users = [], {}
    for role, op, path, loops in _role_ops(kernel):
        if op.WhichOneof("kind") in ("named_barrier_sync", "named_barrier_arrive"):
            users.setdefault(getattr(op, op.WhichOneof("kind")).barrier, set()).add(role)
    for b in kernel.barriers:
        roles = users.get(b.name, set())
        if b.kind != ir_pb2.BARRIER_KIND_NAMED or max(1, b.count) != 1 or len(roles) != 1:
            continue
        (owner,) = roles
        if _threads(kernel.roles[owner]) != b.arrivals:
            continue
        for p in kernel.pipelines:
            producer = _role_index(kernel, p.producer)
            for role, op, path, loops in _role_ops(kernel):
                if role == producer != owner and op.WhichOneof("kind") == "loop" and any(
                        o.WhichOneof("kind") == "tma_load" for o in op.loop.body):
                    def add(draw, loop=op.loop, name=b.name):
                        loop.body.add().named_barrier_sync.barrier = name
                    edits.append(add)
    return edits


def _releases_ring(kernel, op):
    """Whether `op` arrives on a ring's `empty` barrier, or is a branch whose then_body starts with such an arrive."""
    kind = op.WhichOneof("kind")
    if kind == "branch" and op.branch.then_body:
        return _releases_ring(kernel, op.branch.then_body[0])
    return kind == "mbarrier_arrive" and _ring_of(kernel, op.mbarrier_arrive.barrier.barrier, "empty") is not None


def _bodies(kernel):
    """Every op list of the kernel's roles: each role's body and every loop's and branch's body in it."""
    for role in kernel.roles:
        yield role.body
    for _, op, _, _ in _role_ops(kernel):
        kind = op.WhichOneof("kind")
        if kind == "loop":
            yield op.loop.body
        elif kind == "branch":
            yield op.branch.then_body
            yield op.branch.else_body


def unfenced_release_sites(kernel):
    edits = []
    for body in _bodies(kernel):
        for j in range(len(body) - 1):
            op, after = body[j], body[j + 1]
            if op.WhichOneof("kind") != "fence" or op.fence.kind != ir_pb2.FENCE_KIND_PROXY_ASYNC:
                continue
            if after.WhichOneof("kind") == "named_barrier_sync" and j + 2 < len(body):
                after = body[j + 2]
            if _releases_ring(kernel, after):
                edits.append(lambda draw, body=body, j=j: body.__delitem__(j))
    return edits


BREAKING = {
    "CAKE-PIPE-004": overfill_sites,
    "CAKE-DATA-007": overlap_sites,
    "CAKE-CONTRACT-010": hole_sites,
    "CAKE-DATA-008": uncovered_sites,
    "CAKE-STRUCT-019": shape_sites,
    "CAKE-STRUCT-020": topk_length_sites,
    "CAKE-PIPE-005": release_sites,
    "CAKE-SYNC-008": restart_sites,
    "CAKE-SYNC-006": short_expect_sites,
    "CAKE-SYNC-005": shared_named_sites,
    "CAKE-DATA-011": unfenced_release_sites,
}


def applicable(bases, rule_id):
    """The bases that have at least one site `rule_id`'s mutations can edit."""
    return [b for b in bases if BREAKING[rule_id](_copy(b))]


@st.composite
def broken(draw, bases, rule_id):
    """A copy of one of `bases` with one edit of the class `rule_id` checks."""
    kernel = _copy(draw(st.sampled_from(bases)))
    edits = BREAKING[rule_id](kernel)
    draw(st.sampled_from(edits))(draw)
    return kernel


# -- meaning-preserving edits ----------------------------------------------------------------------------------


def _all_names(kernel):
    """name -> how many kinds of things it names (declarations of each kind, loop variables)."""
    kinds = {}
    for what, items in (("param", kernel.params), ("region", kernel.regions), ("barrier", kernel.barriers),
                        ("pipeline", kernel.pipelines), ("role", kernel.roles), ("symbol", kernel.contract.symbols)):
        for item in items:
            kinds.setdefault(item.name, set()).add(what)
    for _, op, _, _ in _role_ops(kernel):
        if op.WhichOneof("kind") == "loop":
            for name in (op.loop.var, op.loop.counter):
                if name:
                    kinds.setdefault(name, set()).add("loop")
    return kinds


def _name_fields(descriptor):
    """(field, repeated) of a message's string fields that hold names (compiler.ir.names: all but free text)."""
    return [(f.name, f.is_repeated) for f in descriptor.fields
            if f.type == FieldDescriptor.TYPE_STRING and f.full_name not in names.FREE_TEXT]


def _rename(kernel, old, new):
    for _, node in paths.walk(kernel):
        for field, repeated in _name_fields(node.DESCRIPTOR):
            if repeated:
                items = getattr(node, field)
                for i, value in enumerate(items):
                    if value == old:
                        items[i] = new
            elif getattr(node, field) == old:
                setattr(node, field, new)


@st.composite
def renamed(draw, bases):
    """A copy of one of `bases` with one name (a declaration or a loop variable) renamed everywhere."""
    kernel = _copy(draw(st.sampled_from(bases)))
    names = sorted(n for n, kinds in _all_names(kernel).items() if len(kinds) == 1)
    old = draw(st.sampled_from(names))
    _rename(kernel, old, "renamed_" + old)
    return kernel


@st.composite
def reordered(draw, bases):
    """A copy of one of `bases` with two declarations of a kind swapped (regions, barriers, pipelines, params,
    constraints), or two initialisations or two loads of one round swapped."""
    kernel = _copy(draw(st.sampled_from(bases)))
    lists = [items for items in (kernel.regions, kernel.barriers, kernel.pipelines, kernel.params,
                                 kernel.contract.constraints) if len(items) > 1]
    for _, op, _, _ in _role_ops(kernel):
        for body in (op.loop.body,) if op.WhichOneof("kind") == "loop" else \
                (op.branch.then_body,) if op.WhichOneof("kind") == "branch" else ():
            for kind in ("tma_load", "mbarrier_init"):
                run = [o for o in body if o.WhichOneof("kind") == kind]
                if len(run) > 1:
                    lists.append(run)
    items = draw(st.sampled_from(lists))
    i, j = draw(st.lists(st.integers(0, len(items) - 1), min_size=2, max_size=2, unique=True))
    held = type(items[i])()
    held.CopyFrom(items[i])
    items[i].CopyFrom(items[j])
    items[j].CopyFrom(held)
    return kernel


def _stage_exprs(kernel, regions):
    for _, node in paths.walk(kernel):
        if isinstance(node, ir_pb2.TileRef) and node.region in regions and node.HasField("stage"):
            yield node.stage


@st.composite
def restaged(draw, bases):
    """A copy of one of `bases` with one pipeline's depth changed to 2 .. its depth consistently: its stages,
    its regions' stages, its barriers' counts, and the `% depth` of the stages its regions are indexed by. (One
    stage is not the same schedule: a consumer that releases the previous round's slot needs two.)"""
    kernel = _copy(draw(st.sampled_from([b for b in bases if b.pipelines])))
    p = draw(st.sampled_from(list(kernel.pipelines)))
    old = p.stages
    new = draw(st.integers(min(2, old), old))
    p.stages = new
    for r in kernel.regions:
        if r.name in p.regions:
            r.stages = new
    for b in kernel.barriers:
        if b.name in (p.full, p.empty):
            b.count = new
    for stage in _stage_exprs(kernel, set(p.regions)):
        for node in _nodes(stage):
            if node.WhichOneof("kind") == "binary" and node.binary.op == OP.BINARY_OP_MOD and \
                    node.binary.rhs.WhichOneof("kind") == "int" and node.binary.rhs.int == old:
                node.binary.rhs.int = new
    return kernel
