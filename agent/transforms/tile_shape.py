"""Reshape the block tile along one problem axis (block M, N or K), keeping barriers and byte counts consistent.

`tile_shape(kernel, symbol, size)`: the tiles along the axis of shape symbol `symbol`
(agent/transforms/axes.py) become `size` long instead of C.

Precondition: the symbol is a runtime symbol of the contract; every tile dimension on
its axis is C long and whole (or split over a role's warps or warpgroups, `u` each,
with C / u units); the axis is walked either by the grid (a grid dimension `X / C`,
block.x/y/z its block index) or by loops (`for v in .. X / C`: a persistent tile loop too, unless it
walks another axis in steps of C as well, so that its products could not be told
apart); size is a multiple of u; no first dimension of a fragment (rows per lane
group or thread) or of tensor memory (lanes) is on the axis.

Rewrite: those tile dimensions (and windows over all of them) become `size`; every
`X / C`, `ceil_div(X, C)` and `X % C` (grid, loop bounds, contract constraints) uses
`size`; every product `E * C` whose E reads the axis's block index or loop variable
(tile origins, index bases) becomes `E * size`; a role splitting the axis over its
units gets size / u of them, and the barrier arrivals and named-barrier arrays sized by
that role follow (every thread, or one thread per unit, arrives); TMA byte counts (barriers' tx_bytes, expect_tx) are recomputed from
the new boxes; the symbol's minimum follows the block (the contract now asks for whole
blocks of `size`, and its constraints' docs say so); a swizzle the new rows cannot hold becomes the widest they can.
Each block (or round) now covers `size` consecutive elements of the axis, and every
element is still computed once, by the same ops.
"""

import re

from cake.ir.v1 import ir_pb2

from agent.ir_edit import (
    NotApplicable,
    copy_kernel,
    exprs_under,
    region_bytes,
    tile_refs,
    walk_ops,
)
from agent.transforms import axes
from agent.transforms.axes import axis as axis_of
from compiler.ir.dtypes import DTYPE_BYTES, SWIZZLE_SPAN, widest_swizzle
from compiler.ir.expr import symbols
from compiler.ir.roles import role_threads

_DIVS = (ir_pb2.BINARY_OP_DIV, ir_pb2.BINARY_OP_CEIL_DIV, ir_pb2.BINARY_OP_MOD)
_BLOCK = ("block.x", "block.y", "block.z")


def _is_div(e, symbol, c):
    return (e.WhichOneof("kind") == "binary" and e.binary.op in _DIVS and e.binary.lhs.WhichOneof("kind") == "sym"
            and e.binary.lhs.sym == symbol and e.binary.rhs.WhichOneof("kind") == "int" and e.binary.rhs.int == c)


def _mentions_div(e, symbol, c):
    return any(_is_div(n, symbol, c) for n in exprs_under(e))


def _other_axes(e, symbol, c):
    """Other symbols `e` divides by c: a tile index over several axes whose steps could not be told apart."""
    return sorted({n.binary.lhs.sym for n in exprs_under(e) if n.WhichOneof("kind") == "binary" and n.binary.op in _DIVS
                   and n.binary.lhs.WhichOneof("kind") == "sym" and n.binary.lhs.sym != symbol
                   and n.binary.rhs.WhichOneof("kind") == "int" and n.binary.rhs.int == c})


def _index_vars(kernel, symbol, c):
    """The axis's block indices (grid) and loop variables: what walks it in steps of C."""
    out = {_BLOCK[j] for j, g in enumerate(kernel.launch.grid) if j < 3 and _mentions_div(g, symbol, c)}
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") == "loop" and _mentions_div(op.loop.end, symbol, c):
                out.add(op.loop.var)
    return out


def precondition(kernel, symbol, size):
    """(axis, C, index variables, unit slice or None) of the reshape; NotApplicable with the reason otherwise."""
    size = int(size)
    sym = next((s for s in kernel.contract.symbols if s.name == symbol), None)
    if sym is None:
        raise NotApplicable("no shape symbol %r" % symbol)
    if sym.HasField("value"):
        raise NotApplicable("%s is specialized to %d" % (symbol, sym.value))
    ax = axis_of(kernel, symbol)
    if not any(n[0] == "r" for n in ax.dims):
        raise NotApplicable("no tile runs along %s" % symbol)
    if ax.partial:
        raise NotApplicable("a window cuts the tiles along %s (%s)" % (symbol, ax.partial[0][0]))
    regions = {r.name: r for r in kernel.regions}
    fixed = sorted((n[1], n[2]) for n in ax.dims if n[0] == "r" and n[2] == 0 and _rows_fixed(regions[n[1]]))
    if fixed:
        raise NotApplicable("dim %d of %r is fixed by its layout (one row per lane group or thread)" % fixed[0][::-1])
    c = axes.block_extent(kernel, ax)
    if size == c or size < 1:
        raise NotApplicable("the block along %s is %d already" % (symbol, c) if size == c else "a size below 1")
    index = _index_vars(kernel, symbol, c)
    if not index:
        raise NotApplicable("nothing walks %s in steps of %d" % (symbol, c))
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") == "loop" and op.loop.var in index and _other_axes(op.loop.end, symbol, c):
                raise NotApplicable("loop %r walks %s and %s in steps of %d alike" % (
                    op.loop.var, symbol, _other_axes(op.loop.end, symbol, c)[0], c))
    units = {(s.role, s.unit, s.size) for s in ax.slices}
    if len(units) > 1:
        raise NotApplicable("the axis %s is split over units in several ways" % symbol)
    unit = units.pop() if units else None
    if unit is not None:
        role = next(r for r in kernel.roles if r.name == unit[0])
        have = _units(role, unit[1])
        if have * unit[2] != c:
            raise NotApplicable("role %r has %d %ss of %d for a block of %d" % (role.name, have, unit[1], unit[2], c))
        if size % unit[2] or (unit[1] == "warp" and role.WhichOneof("size") == "warpgroups" and size % (4 * unit[2])):
            raise NotApplicable("%d is not a whole number of %ss of %d" % (size, unit[1], unit[2]))
    return ax, c, index, unit


def _rows_fixed(region):
    """Whether a region's first dim is set by who holds it: fragment rows per thread or lane group, TMEM lanes."""
    if region.space == ir_pb2.MEMORY_SPACE_TENSOR:
        return True
    return region.space == ir_pb2.MEMORY_SPACE_REGISTER and region.layout != ir_pb2.FRAGMENT_LAYOUT_PER_THREAD


def _units(role, unit):
    warps = 4 * role.warpgroups if role.WhichOneof("size") == "warpgroups" else role.warps
    return warps if unit == "warp" else warps // 4


def _rewrite_exprs(message, symbol, c, size, index):
    for e in exprs_under(message):
        if e.WhichOneof("kind") != "binary":
            continue
        b = e.binary
        if _is_div(e, symbol, c):
            b.rhs.int = size
        elif b.op == ir_pb2.BINARY_OP_MUL:
            for const_side, other in ((b.rhs, b.lhs), (b.lhs, b.rhs)):
                if const_side.WhichOneof("kind") == "int" and const_side.int == c and symbols(other) & index:
                    const_side.int = size
                    break


def tile_shape(kernel, symbol, size):
    """The kernel with its block tile `size` long along shape symbol `symbol` (see the module docstring)."""
    size = int(size)
    ax, c, index, unit = precondition(kernel, symbol, size)
    out = copy_kernel(kernel)
    old_bytes = {r.name: region_bytes(r) for r in out.regions}
    on_axis = {(n[1], n[2]) for n in ax.dims if n[0] == "r"}
    for region in out.regions:
        for d in range(len(region.shape)):
            if (region.name, d) in on_axis:
                region.shape[d] = size
        _fit_swizzle(region)
    for role in out.roles:
        for _, _, op in walk_ops(role.body):
            for ref in tile_refs(op):
                for d, w in enumerate(ref.window):
                    if (ref.region, d) in on_axis and w.size == c and w.start.WhichOneof("kind") == "int" \
                            and w.start.int == 0:
                        w.size = size
    _rewrite_exprs(out.launch, symbol, c, size, index)
    _rewrite_exprs(out.contract, symbol, c, size, index)
    for role in out.roles:
        for op in role.body:
            _rewrite_exprs(op, symbol, c, size, index)
    sym = next(s for s in out.contract.symbols if s.name == symbol)
    if sym.min == c:
        sym.min = size
    for constraint in out.contract.constraints:
        if symbol in symbols(constraint.expr):
            constraint.doc = re.sub(r"\b%d\b" % c, str(size), constraint.doc)
    _rebyte(out, old_bytes)
    if unit is not None:
        _resize_role(out, unit, size)
    return out


def _fit_swizzle(region):
    """The widest swizzle a shared region's new rows are a whole number of spans of (as schedules choose)."""
    if region.space != ir_pb2.MEMORY_SPACE_SHARED or region.swizzle == ir_pb2.SWIZZLE_NONE_UNSPECIFIED:
        return
    row = region.shape[-1] * DTYPE_BYTES.get(region.dtype, 0)
    if row % SWIZZLE_SPAN[region.swizzle] == 0:
        return
    region.swizzle = widest_swizzle(row)


def _rebyte(kernel, old_bytes):
    """Barriers' tx_bytes and expect_tx bytes follow the TMA boxes that complete them (whole-tile loads)."""
    regions = {r.name: r for r in kernel.regions}
    delta = {}
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") == "tma_load":
                ref = op.tma_load.dst
                if ref.window:
                    raise NotApplicable("a TMA load of a window of %r" % ref.region)
                key = (op.tma_load.barrier.barrier, ref.region)
                delta[key] = region_bytes(regions[ref.region]) - old_bytes[ref.region]
    per_barrier = {}
    for (bar, _), d in delta.items():
        per_barrier[bar] = per_barrier.get(bar, 0) + d
    for b in kernel.barriers:
        if b.tx_bytes and per_barrier.get(b.name):
            b.tx_bytes += per_barrier[b.name]
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") == "mbarrier_expect_tx":
                op.mbarrier_expect_tx.bytes += per_barrier.get(op.mbarrier_expect_tx.barrier.barrier, 0)


def _resize_role(kernel, unit, size):
    """The role splitting the axis gets size / u units; what counts its threads or units follows."""
    name, kind, per = unit
    role = next(r for r in kernel.roles if r.name == name)
    old_units, old_threads = _units(role, kind), role_threads(role)
    new_units = size // per
    if role.WhichOneof("size") == "warpgroups":
        role.warpgroups = new_units if kind == "warpgroup" else new_units // 4
    else:
        role.warps = new_units if kind == "warp" else 4 * new_units
    new_threads = role_threads(role)
    arrives, per_unit = set(), set()
    for _, _, op in walk_ops(role.body):
        k = op.WhichOneof("kind")
        if k == "mbarrier_arrive":
            arrives.add(op.mbarrier_arrive.barrier.barrier)
        elif k in ("named_barrier_sync", "named_barrier_arrive"):
            m = getattr(op, k)
            arrives.add(m.barrier)
            if m.HasField("index") and kind in symbols(m.index):
                per_unit.add(m.barrier)
    for b in kernel.barriers:
        if b.name not in arrives:
            continue
        if b.kind == ir_pb2.BARRIER_KIND_NAMED and b.name in per_unit:
            if max(1, b.count) != old_units:
                raise NotApplicable("named barrier %r is indexed by %s but has %d of them" % (b.name, kind, b.count))
            b.count = new_units
        elif (b.arrivals * new_threads) % old_threads:
            raise NotApplicable("barrier %r counts %d arrivals of role %r (%d threads)" % (b.name, b.arrivals, name,
                                                                                          old_threads))
        else:
            b.arrivals = b.arrivals * new_threads // old_threads  # every thread, or one per unit, arrives
