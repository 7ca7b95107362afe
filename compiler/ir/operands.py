"""How math operands meet their destination: THE derivation of elementwise arities, of broadcasting
(ir.proto's Operand.tile) and of who holds which part of a fragment, shared by the verifier (CAKE-STRUCT-019,
the outputs and write-overlap checks) and lowering.

An elementwise op is evaluated at each element of its destination; a tile operand is read there:
- a register fragment of the destination's own layout and shape: the same element;
- a fragment holding one value per row (WGMMA_ROWS / MMA_ROWS [R] or [R, 1] onto a fragment of the
  same family with R rows; ROW_PER_THREAD [T] or [T, 1] onto ROW_PER_THREAD [T, N]): the row's value;
- a PER_THREAD fragment or a shared tile: aligned with the destination's trailing dims, size-1 dims
  broadcast (a shared [N] vector is read at the destination element's column).
Any other operand cannot be read at the destination's elements: lowering would index past it.
"""

from cake.ir.v1 import ir_pb2

EW = ir_pb2.ElementwiseOp
L = ir_pb2.FragmentLayout

# Operands each elementwise op takes.
ELEMENTWISE_ARITY = {
    EW.ELEMENTWISE_OP_COPY: 1,
    EW.ELEMENTWISE_OP_ADD: 2,
    EW.ELEMENTWISE_OP_SUB: 2,
    EW.ELEMENTWISE_OP_MUL: 2,
    EW.ELEMENTWISE_OP_DIV: 2,
    EW.ELEMENTWISE_OP_FMA: 3,
    EW.ELEMENTWISE_OP_MAX: 2,
    EW.ELEMENTWISE_OP_MIN: 2,
    EW.ELEMENTWISE_OP_NEG: 1,
    EW.ELEMENTWISE_OP_EXP: 1,
    EW.ELEMENTWISE_OP_LOG: 1,
    EW.ELEMENTWISE_OP_SQRT: 1,
    EW.ELEMENTWISE_OP_RSQRT: 1,
    EW.ELEMENTWISE_OP_SIGMOID: 1,
    EW.ELEMENTWISE_OP_SOFTPLUS: 1,
    EW.ELEMENTWISE_OP_LT: 2,
    EW.ELEMENTWISE_OP_LE: 2,
    EW.ELEMENTWISE_OP_SELECT: 3,
    EW.ELEMENTWISE_OP_ABS: 1,
}

# Fragment families: a rows fragment broadcasts onto the accumulators (and rows fragments) of its family.
FAMILY = {
    L.FRAGMENT_LAYOUT_WGMMA_ACC: "wgmma",
    L.FRAGMENT_LAYOUT_WGMMA_ROWS: "wgmma",
    L.FRAGMENT_LAYOUT_MMA_ACC: "mma",
    L.FRAGMENT_LAYOUT_MMA_ROWS: "mma",
    L.FRAGMENT_LAYOUT_ROW_PER_THREAD: "row_per_thread",
}
ROWS = frozenset((L.FRAGMENT_LAYOUT_WGMMA_ROWS, L.FRAGMENT_LAYOUT_MMA_ROWS))
ACCUMULATORS = frozenset((L.FRAGMENT_LAYOUT_WGMMA_ACC, L.FRAGMENT_LAYOUT_MMA_ACC))
# Packed mma.sync operand registers: loaded by ldmatrix, read by mma.sync, not elementwise data.
OPERAND_FRAGMENTS = frozenset((L.FRAGMENT_LAYOUT_MMA_A, L.FRAGMENT_LAYOUT_MMA_B))


# Who holds which part of a register fragment (ir.proto's FragmentLayout): each warpgroup its own WGMMA tile (warp w
# of it rows WGMMA_WARP_ROWS * (w % 4) onward), each warp its own MMA tile and all of a WGMMA_COLS fragment (the
# lists of its 16 rows; its lanes 0..3 write the columns out), thread t row t of a ROW_PER_THREAD tile, every thread
# all of a PER_THREAD one. A fragment stored to memory is written by these holders, part by part.
HOLDER = {
    L.FRAGMENT_LAYOUT_WGMMA_ACC: "warpgroup",
    L.FRAGMENT_LAYOUT_WGMMA_ROWS: "warpgroup",
    L.FRAGMENT_LAYOUT_MMA_ACC: "warp",
    L.FRAGMENT_LAYOUT_MMA_ROWS: "warp",
    L.FRAGMENT_LAYOUT_WGMMA_COLS: "warp",
    L.FRAGMENT_LAYOUT_ROW_PER_THREAD: "row",
    L.FRAGMENT_LAYOUT_PER_THREAD: "thread",
}
WGMMA_WARP_ROWS = 16


def trailing_coords(src_shape, dst_coords):
    """The coordinates at which a trailing-aligned operand is read: the destination's trailing ones,
    0 along the operand's size-1 dims."""
    picked = list(dst_coords)[len(dst_coords) - len(src_shape):]
    return ["0" if size == 1 else c for size, c in zip(src_shape, picked)]


def trailing_mismatch(src_shape, dst_shape):
    """Why `src_shape` does not broadcast onto `dst_shape` aligned with its trailing dims, or None."""
    src, dst = list(src_shape), list(dst_shape)
    if len(src) > len(dst):
        return "it has %d dims, the destination %d" % (len(src), len(dst))
    for i, size in enumerate(src):
        want = dst[len(dst) - len(src) + i]
        if size not in (1, want):
            return "its dim %d has %d elements where the destination's dim %d has %d" % (
                i, size, len(dst) - len(src) + i, want)
    return None


def one_per_row(layout, shape):
    """Whether a fragment holds one value per row: rows layouts [R] / [R, 1], ROW_PER_THREAD [T] / [T, 1]."""
    if layout not in ROWS and layout != L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
        return False
    return len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)


def fragment_mismatch(src_layout, src_shape, dst_layout, dst_shape):
    """Why a register fragment operand cannot be read at a register destination's elements, or None."""
    src, dst = list(src_shape), list(dst_shape)
    if src_layout == dst_layout and src == dst:
        return None
    if one_per_row(src_layout, src):
        if FAMILY.get(src_layout) != FAMILY.get(dst_layout) or dst_layout in OPERAND_FRAGMENTS:
            return "a one-per-row fragment only broadcasts onto fragments of its family"
        if not dst or src[0] != dst[0]:
            return "it holds %d rows, the destination %s" % (src[0], dst[0] if dst else 0)
        return None
    if src_layout == L.FRAGMENT_LAYOUT_WGMMA_COLS and dst_layout == src_layout and len(dst) == 2 and (
            len(src) == 1 or src[1:] == [1]):
        # One value per column onto the columns' lists (a search's seeded lists start at their query's bound).
        return None if src[0] == dst[0] else "it holds %d columns, the destination %d" % (src[0], dst[0])
    if src_layout == L.FRAGMENT_LAYOUT_PER_THREAD:
        return trailing_mismatch(src, dst)
    return "a %s fragment is read only at a destination of its own layout and shape" % (
        ir_pb2.FragmentLayout.Name(src_layout) if src_layout in L.values() else src_layout)
