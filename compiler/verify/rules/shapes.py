"""Structure rule on operand shapes: every op's tiles have the shapes its instruction reads and writes.

Lowering walks each op over one operand's elements and indexes the others at the same coordinates,
so a shape that does not fit makes it read or write past a region. The broadcasting rule of math
operands is compiler/ir/operands.py's; MMA shapes are CAKE-STRUCT-017's, fragment shapes CAKE-STRUCT-016's.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import operands, oprefs, scalars
from compiler.verify.context import short
from compiler.verify.registry import Finding, rule

REGISTER = ir_pb2.MEMORY_SPACE_REGISTER
L = ir_pb2.FragmentLayout


class _Tile:
    """A resolved tile operand: its region and the shape it covers."""

    def __init__(self, use):
        self.region = region = use.region
        self.name = use.name
        self.shape = use.shape()
        self.register = region.space == REGISTER
        self.layout = region.layout if self.register else None

    def __str__(self):
        return "`%s` %s" % (self.name, self.shape)


def _tile(ctx, site, field):
    """The op's tile operand `field` (as oprefs.tiles names it; its first), None when its region is not declared."""
    for use in ctx.operands(site):
        if use.field == field:
            return _Tile(use) if use.hit is not None else None
    return None


def _without(shape, axis):
    return shape[:axis] + shape[axis + 1:]


def _reduced(out, src, axis):
    """Whether `out` is `src` without `axis` (or with it kept as 1)."""
    return out == _without(src, axis) or out == src[:axis] + [1] + src[axis + 1:]


def _rows_of(t):
    return t.shape[0] if t.shape else 0


def _same_shape(site, what, a, b):
    if a.shape != b.shape:
        yield Finding(site.path, "%s %s and %s differ in shape" % (what, a, b))


def _elementwise(ctx, site):
    m = site.msg
    dst = _tile(ctx, site, "dst")
    arity = operands.ELEMENTWISE_ARITY.get(m.op)
    if arity is not None and len(m.srcs) != arity:
        yield Finding(site.path, "%s takes %d operands, not %d" % (short(ir_pb2.ElementwiseOp, m.op), arity, len(m.srcs)))
    if dst is None:
        return
    if dst.layout in operands.OPERAND_FRAGMENTS:
        yield Finding(site.path, "%s is an mma.sync operand fragment (packed registers), not elementwise data" % dst)
        return
    for i, s in enumerate(m.srcs[:]):  # (a slice: iterating a protobuf container ends in a raised IndexError)
        kind = s.WhichOneof("kind")
        if kind == "coord" and not 0 <= s.coord < len(dst.shape):
            yield Finding(site.path, "coord(%d) of the rank-%d destination %s" % (s.coord, len(dst.shape), dst))
        if kind != "tile":
            continue
        src = _tile(ctx, site, "srcs[%d].tile" % i)
        if src is None:
            continue
        if src.register and dst.register:
            why = operands.fragment_mismatch(src.layout, src.shape, dst.layout, dst.shape)
        elif src.register and src.layout != L.FRAGMENT_LAYOUT_PER_THREAD:
            why = "only per_thread fragments are read at a shared destination's elements"
        else:
            why = operands.trailing_mismatch(src.shape, dst.shape)
        if why:
            yield Finding(site.path, "operand %d, %s, does not broadcast onto the destination %s: %s" % (i, src, dst, why),
                          (("`%s` is declared here" % src.name, ctx.region_path(src.name)),))


def _copy(ctx, site):
    m = site.msg
    if m.WhichOneof("src") != "src_tile" or m.WhichOneof("dst") != "dst_tile":
        for field in ("src_tile", "dst_tile"):
            t = _tile(ctx, site, field) if m.HasField(field) else None
            if t is not None and t.layout in operands.OPERAND_FRAGMENTS:
                yield Finding(site.path, "%s is an mma.sync operand fragment: ldmatrix loads it" % t)
        return
    src, dst = _tile(ctx, site, "src_tile"), _tile(ctx, site, "dst_tile")
    if src is None or dst is None:
        return
    if src.register and dst.register and scalars.is_scalar(src.region) and scalars.is_scalar(dst.region):
        return  # one value per thread to one value per thread
    if src.shape != dst.shape:
        yield Finding(site.path, "copies %s into %s: a copy moves equal shapes" % (src, dst))
    elif src.register and dst.register and src.layout != dst.layout:
        yield Finding(site.path, "copies %s fragment %s into %s fragment %s: register copies keep the layout" % (
            short(L, src.layout), src, short(L, dst.layout), dst))


def _reduce(ctx, site):
    m = site.msg
    src, dst = _tile(ctx, site, "src"), _tile(ctx, site, "dst")
    if src is None or dst is None:
        return
    if not 0 <= m.axis < len(src.shape):
        yield Finding(site.path, "axis %d of the rank-%d tile %s" % (m.axis, len(src.shape), src))
    elif src.layout in operands.ACCUMULATORS and dst.layout in operands.ROWS:
        if m.axis != len(src.shape) - 1 or not operands.one_per_row(dst.layout, dst.shape) or _rows_of(dst) != _rows_of(src):
            yield Finding(site.path, "a row reduction of %s writes one value per row along axis 1, not %s" % (src, dst))
    elif not _reduced(dst.shape, src.shape, m.axis):
        yield Finding(site.path, "reducing axis %d of %s leaves %s, not %s" % (m.axis, src, _without(src.shape, m.axis), dst))


def _arg_reduce(ctx, site):
    m = site.msg
    src, values, indices = _tile(ctx, site, "src"), _tile(ctx, site, "values"), _tile(ctx, site, "indices")
    if src is None or values is None or indices is None:
        return
    if values.shape != indices.shape:
        yield from _same_shape(site, "values and indices", values, indices)
        return
    if m.src.region == m.values.region:  # a merge of running (value, index) pairs in place
        return
    if not 0 <= m.axis < len(src.shape):
        yield Finding(site.path, "axis %d of the rank-%d tile %s" % (m.axis, len(src.shape), src))
    elif src.layout in operands.ACCUMULATORS or src.layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
        if m.axis != 1 or not operands.one_per_row(values.layout, values.shape) or _rows_of(values) != _rows_of(src):
            yield Finding(site.path, "the arg-reduction of %s along its columns keeps one value per row of its %d, "
                          "not %s" % (src, _rows_of(src), values))
    elif not _reduced(values.shape, src.shape, m.axis):
        yield Finding(site.path, "reducing axis %d of %s leaves %s, not %s" % (m.axis, src, _without(src.shape, m.axis), values))


def _scan(ctx, site):
    m = site.msg
    src, dst = _tile(ctx, site, "src"), _tile(ctx, site, "dst")
    if src is None or dst is None:
        return
    if not 0 <= m.axis < len(src.shape):
        yield Finding(site.path, "axis %d of the rank-%d tile %s" % (m.axis, len(src.shape), src))
    yield from _same_shape(site, "a scan's input and output", src, dst)


def _tri_solve(ctx, site):
    m = site.msg
    a, x = _tile(ctx, site, "a"), _tile(ctx, site, "x")
    if a is None or x is None:
        return
    if len(a.shape) != 2 or a.shape[0] != a.shape[1]:
        yield Finding(site.path, "the triangular matrix %s is not square" % a)
    elif len(x.shape) != 2 or x.shape[0] != a.shape[0]:
        yield Finding(site.path, "the solution %s needs %d rows, one per row of %s" % (x, a.shape[0], a))
    elif m.HasField("b"):
        b = _tile(ctx, site, "b")
        if b is not None:
            yield from _same_shape(site, "right-hand sides and solution", b, x)
    elif x.shape[1] != a.shape[0]:
        yield Finding(site.path, "without right-hand sides the solution is A's inverse, %s, not %s" % (a.shape, x))


def _atomic(ctx, site):
    m = site.msg
    src = _tile(ctx, site, "src")
    hit = ctx.params.get(m.dst.param)
    if m.HasField("index") and src is not None:
        index = _tile(ctx, site, "index")
        if index is not None and (not operands.one_per_row(L.FRAGMENT_LAYOUT_ROW_PER_THREAD, index.shape)
                                  or _rows_of(index) != _rows_of(src)):
            yield Finding(site.path, "the scatter index %s must give one row index for each of the %d rows of %s" % (
                index, _rows_of(src), src))
        if hit is not None and not 0 <= m.index_axis < len(hit[1].shape):
            yield Finding(site.path, "index_axis %d of the rank-%d tensor `%s`" % (m.index_axis, len(hit[1].shape), m.dst.param))


def _matrix_move(ctx, site, fragment_field, shared_field):
    m = site.msg
    frag, tile = _tile(ctx, site, fragment_field), _tile(ctx, site, shared_field)
    if frag is None or tile is None:
        return
    want = [frag.shape, frag.shape[::-1]] if getattr(m, "transpose", False) else [frag.shape]
    if tile.shape not in want:
        yield Finding(site.path, "%s moves the fragment %s to or from %s: the shared tile needs its shape%s" % (
            site.kind, frag, tile, " (or its transpose)" if len(want) > 1 else ""))


_CHECKS = {
    "elementwise": _elementwise,
    "copy": _copy,
    "reduce": _reduce,
    "arg_reduce": _arg_reduce,
    "scan": _scan,
    "tri_solve": _tri_solve,
    "atomic": _atomic,
    "ldmatrix": lambda ctx, site: _matrix_move(ctx, site, "dst", "src"),
    "stmatrix": lambda ctx, site: _matrix_move(ctx, site, "src", "dst"),
    "tmem_load": lambda ctx, site: _matrix_move(ctx, site, "dst", "src"),
}


@rule(
    "CAKE-STRUCT-019", "structure", "error",
    doc="Operand shapes fit every op: copies move equal shapes; elementwise ops get their number of operands, each "
    "broadcasting onto the destination (its own layout and shape, one value per row of a fragment of its family, or "
    "aligned with the trailing dims with size-1 dims broadcast); reductions drop their axis; arg-reductions "
    "keep per-row results (top-k lists: CAKE-STRUCT-020); scans keep the shape; triangular solves are square; "
    "scatter indices give one row each; ldmatrix, stmatrix and tmem_load move their fragment's shape.",
    fix_hint="Give the operand the shape the op reads or writes there (a window of that shape, or one that "
    "broadcasts to the destination).",
)
def operand_shapes(ctx):
    # Ops and regions another structure rule already rejected (sizes, ranks, spaces, fragment shapes, windows):
    # their shapes are that rule's finding, not a second one.
    rejected = {d.path for d in ctx.diagnostics if d.id in _EARLIER}
    for site in ctx.ops:
        check = _CHECKS.get(site.kind)
        if check is None or site.path in rejected:
            continue
        if rejected and any(ctx.region_path(u.name) in rejected for u in ctx.operands(site)):
            continue
        yield from check(ctx, site)


_EARLIER = frozenset(("CAKE-STRUCT-006", "CAKE-STRUCT-007", "CAKE-STRUCT-009", "CAKE-STRUCT-011", "CAKE-STRUCT-016"))
