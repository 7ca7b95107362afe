"""Which dimensions of a kernel's tiles run along one problem axis (a shape symbol such as N or K).

Data moves between tensors and tiles (TMA, cp.async, copies, atomics: a tile's dims are
the tensor's trailing ones), MMAs (A's rows are the accumulator's rows, B's rows its
columns, A and B share K), elementwise ops (broadcasting as ir.proto's Operand says),
reductions (all but the reduced axis) and fragment loads tie dimensions together; the
dimensions tied to a tensor dimension of extent `symbol` form the axis. A reference
whose window starts at a multiple of `warp` or `warpgroup` hands each warp (warpgroup)
its own slice: the axis is split over the role's units there, and the two sides of that
reference are not tied (the fragment holds one unit's slice, the tile all of them).
"""

import dataclasses

from cake.ir.v1 import ir_pb2

from agent.ir_edit import NotApplicable, op_message, walk_ops
from compiler.ir.expr import symbols
from compiler.ir.shapes import mma_dims

UNITS = ("warp", "warpgroup")
_ROWS = (ir_pb2.FRAGMENT_LAYOUT_WGMMA_ROWS, ir_pb2.FRAGMENT_LAYOUT_MMA_ROWS)


@dataclasses.dataclass
class Slice:
    """A reference handing each unit of `role` a `size`-long slice of a region dimension on the axis."""

    role: str
    region: str
    dim: int
    unit: str  # "warp" or "warpgroup"
    size: int


@dataclasses.dataclass
class Axis:
    symbol: str
    dims: set  # {("r", region, dim)} and {("p", param, dim)} on the axis
    slices: list  # [Slice]
    partial: list  # [(region, dim)] sliced by a window that is not one unit's: the axis is not whole there


class _Union:
    def __init__(self):
        self.up = {}

    def find(self, x):
        self.up.setdefault(x, x)
        while self.up[x] != x:
            self.up[x] = self.up[self.up[x]]
            x = self.up[x]
        return x

    def join(self, a, b):
        self.up[self.find(a)] = self.find(b)


class _Tied:
    """Collects ties between dimensions, window by window."""

    def __init__(self, kernel):
        self.regions = {r.name: r for r in kernel.regions}
        self.params = {p.name: p for p in kernel.params}
        self.u = _Union()
        self.slices, self.partial = [], []

    def tile_dims(self, ref, role):
        """[(node or None, extent)] per dim of a TileRef; a unit-sliced or partial dim gives None."""
        region = self.regions.get(ref.region)
        if region is None:
            return []
        out = []
        for d, extent in enumerate(region.shape):
            w = ref.window[d] if d < len(ref.window) else None
            node = ("r", region.name, d)
            if w is None:
                out.append((node, extent))
                continue
            unit = next((u for u in UNITS if u in symbols(w.start)), None)
            if unit is not None:
                self.slices.append(Slice(role, region.name, d, unit, w.size))
                out.append((None, w.size))
            elif w.size != extent:
                self.partial.append((region.name, d))
                out.append((None, w.size))
            else:
                out.append((node, extent))
        return out

    def tie(self, a, b):
        if a is not None and b is not None:
            self.u.join(a, b)

    def trailing(self, xs, ys):
        for (a, _), (b, _) in zip(reversed(xs), reversed(ys)):
            self.tie(a, b)

    def tensor_dims(self, ref):
        """[(node or None, None)] per tensor dim; a dim whose tile origin moves with the unit gives None (the
        tile there is one unit's slice, not the block's)."""
        p = self.params.get(ref.param)
        if p is None:
            return []
        out = []
        for d in range(len(p.shape)):
            coord = ref.coords[d] if d < len(ref.coords) else None
            per_unit = coord is not None and any(u in symbols(coord) for u in UNITS)
            out.append((None if per_unit else ("p", p.name, d), None))
        return out


def _move(t, op, kind, role):
    m = op_message(op)
    pairs = {"tma_load": ("dst", "src"), "tma_store": ("src", "dst"), "cp_async": ("dst", "src"),
             "atomic": ("src", "dst")}
    if kind in pairs:
        tile, glob = pairs[kind]
        dims = t.tensor_dims(getattr(m, glob))
        tiles = t.tile_dims(getattr(m, tile), role)
        if kind == "atomic" and m.HasField("index"):
            dims = [d if i != m.index_axis else (None, None) for i, d in enumerate(dims)]
        t.trailing(tiles, dims)
    elif kind == "copy":
        sides = []
        for field in ("src_tile", "src_global", "dst_tile", "dst_global"):
            if m.HasField(field):
                ref = getattr(m, field)
                sides.append(t.tensor_dims(ref) if field.endswith("global") else t.tile_dims(ref, role))
        if len(sides) == 2:
            t.trailing(sides[0], sides[1])


def _math(t, op, kind, role):
    m = op_message(op)
    if kind == "mma":
        a, b, acc = (t.tile_dims(r, role) for r in (m.a, m.b, m.acc))
        if len(a) == 2 and len(b) == 2 and len(acc) == 2:
            (am, ak), (bn, bk) = mma_dims(a, m.a_major), mma_dims(b, m.b_major)
            t.tie(acc[0][0], am[0])
            t.tie(acc[1][0], bn[0])
            t.tie(ak[0], bk[0])
    elif kind == "elementwise":
        dst = t.tile_dims(m.dst, role)
        for s in m.srcs:
            if s.WhichOneof("kind") != "tile":
                continue
            src = t.tile_dims(s.tile, role)
            region = t.regions.get(s.tile.region)
            ones = [(n if e != 1 else None, e) for n, e in src]
            if region is not None and region.layout in _ROWS:
                for (a, _), (b, _) in zip(dst, ones):
                    t.tie(a, b)
            else:
                t.trailing(dst, ones)
    elif kind in ("reduce", "arg_reduce"):
        src = t.tile_dims(m.src, role)
        kept = [d for i, d in enumerate(src) if i != m.axis]
        for out in ((m.dst,) if kind == "reduce" else (m.values, m.indices)):
            for (a, _), (b, _) in zip(kept, t.tile_dims(out, role)):
                t.tie(a, b)
    elif kind == "top_k":
        src = t.tile_dims(m.src, role)
        for out in (m.values, m.indices):
            dst = t.tile_dims(out, role)
            if src and dst:
                t.tie(src[0][0], dst[0][0])
    elif kind in ("ldmatrix", "stmatrix", "tmem_load", "scan"):
        for (a, _), (b, _) in zip(t.tile_dims(m.src, role), t.tile_dims(m.dst, role)):
            t.tie(a, b)


def axis(kernel, symbol):
    """The Axis of shape symbol `symbol`: every tile and tensor dimension tied to a tensor dim of that extent."""
    t = _Tied(kernel)
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            kind = op.WhichOneof("kind")
            if kind in ("loop", "branch", None):
                continue
            _move(t, op, kind, role.name)
            _math(t, op, kind, role.name)
    seeds = [("p", p.name, d) for p in kernel.params for d, e in enumerate(p.shape)
             if e.WhichOneof("kind") == "sym" and e.sym == symbol]
    for s in seeds[1:]:
        t.u.join(s, seeds[0])
    if not seeds:
        return Axis(symbol, set(), [], [])
    root = t.u.find(seeds[0])
    dims = {n for n in list(t.u.up) if t.u.find(n) == root}
    on_axis = {(n[1], n[2]) for n in dims if n[0] == "r"}
    slices = [s for s in t.slices if (s.region, s.dim) in on_axis or _slice_on_axis(t, s, root)]
    partial = [p for p in t.partial if p in on_axis or t.u.find(("r",) + p) == root]
    return Axis(symbol, dims, slices, partial)


def _slice_on_axis(t, s, root):
    node = ("r", s.region, s.dim)
    return node in t.u.up and t.u.find(node) == root


def block_extent(kernel, ax):
    """The one extent of an Axis's tile dimensions (the block's, unit slices counted whole); NotApplicable if
    they have several or there are none."""
    regions = {r.name: r for r in kernel.regions}
    extents = {regions[n[1]].shape[n[2]] for n in ax.dims if n[0] == "r"}
    if len(extents) != 1:
        raise NotApplicable("the tiles along %s are %s long: no one block extent" % (ax.symbol, sorted(extents) or "never"))
    return extents.pop()


def extent(kernel, symbol):
    """The block extent along shape symbol `symbol` (see block_extent)."""
    return block_extent(kernel, axis(kernel, symbol))
