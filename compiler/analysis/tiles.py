"""Sizes of the things a schedule names: dtypes, roles, regions and tiles.

Shared by the resource estimate and the work counts. Garbage is measured as
zero (an unknown dtype has 0 bytes, a negative dimension 0 elements): judging
it is the verifier's job, and the analysis must still answer.
"""

import math

from cake.ir.v1 import ir_pb2

from compiler.ir.dtypes import DTYPE_BYTES

# Threads sharing one copy of a register region's shape, by fragment layout: the
# region's shape is per warpgroup (WGMMA_*), per warp (MMA_*) or per thread
# (PER_THREAD); ROW_PER_THREAD spreads one tile over the whole owner role (None).
_UNIT_THREADS = {
    ir_pb2.FRAGMENT_LAYOUT_PER_THREAD: 1,
    ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC: 128,
    ir_pb2.FRAGMENT_LAYOUT_WGMMA_ROWS: 128,
    ir_pb2.FRAGMENT_LAYOUT_WGMMA_COLS: 128,
    ir_pb2.FRAGMENT_LAYOUT_MMA_ACC: 32,
    ir_pb2.FRAGMENT_LAYOUT_MMA_ROWS: 32,
    ir_pb2.FRAGMENT_LAYOUT_MMA_A: 32,
    ir_pb2.FRAGMENT_LAYOUT_MMA_B: 32,
}

# Threads holding each element of a register region, by layout: WGMMA_ACC/MMA_*
# elements live in one thread; a row value (WGMMA_ROWS, MMA_ROWS) is held by the 4
# lanes of the row's quad; a column value (WGMMA_COLS) by the 32 threads sharing the column.
_HOLDERS = {ir_pb2.FRAGMENT_LAYOUT_WGMMA_ROWS: 4, ir_pb2.FRAGMENT_LAYOUT_MMA_ROWS: 4, ir_pb2.FRAGMENT_LAYOUT_WGMMA_COLS: 32}


def dtype_bytes(dtype):
    return DTYPE_BYTES.get(dtype, 0)


def role_threads(role):
    """Threads of a role (0 when its size is unset or negative)."""
    size = role.WhichOneof("size")
    if size == "warps":
        return max(0, role.warps) * 32
    if size == "warpgroups":
        return max(0, role.warpgroups) * 128
    return 0


def elements(shape):
    """Elements of a shape (a float: garbage shapes may exceed any integer type)."""
    return math.prod(float(max(0, d)) for d in shape)


def region_bytes(region):
    """Bytes of one stage of a region (exact: a Python int of any size)."""
    return math.prod(max(0, d) for d in region.shape) * dtype_bytes(region.dtype)


def tile_shape(region, ref):
    """The shape a TileRef covers: the region's, with windowed dimensions cut to their sizes."""
    shape = list(region.shape)
    for dim, window in enumerate(ref.window[: len(shape)]):
        shape[dim] = window.size
    return shape


def units(region, role):
    """Copies of a region's shape that `role` holds: register fragments are per warpgroup,
    warp or thread; shared, tensor-memory and whole-role tiles are one copy."""
    if region.space != ir_pb2.MEMORY_SPACE_REGISTER:
        return 1
    per = _UNIT_THREADS.get(region.layout)
    return 1 if per is None else role_threads(role) // per


def registers_per_thread(region):
    """32-bit registers one owner thread spends on a register region (exact integer arithmetic)."""
    shape = [max(0, d) for d in region.shape]
    per = _UNIT_THREADS.get(region.layout)
    if region.layout == ir_pb2.FRAGMENT_LAYOUT_ROW_PER_THREAD:
        held, share = math.prod(shape[1:]), 1  # thread t holds row t
    elif per is None:
        held, share = math.prod(shape), 1  # unset layout: assume every thread holds it all
    else:
        held, share = math.prod(shape) * _HOLDERS.get(region.layout, 1), per
    return -(-held * dtype_bytes(region.dtype) // (share * 4))
