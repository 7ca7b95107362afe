"""THE shared-memory layout of a kernel: where lowering puts everything, which the verifier and the
cost analysis measure.

In order, from offset 0 of the (1024-byte aligned) dynamic shared memory:
- shared regions in declaration order, each starting 1024-byte aligned (the 128B
  swizzle repeats every 8 rows of 128 bytes, and TMA and wgmma address the pattern
  from the tile base), with `stages` stages of `stage_bytes`: the tile's bytes
  rounded up to 1024 when swizzled (so every stage stays aligned), else to 128 when
  a TMA copy reads or writes the region (cp.async.bulk.tensor takes a 128-byte
  aligned shared address: a 64-byte stage faults with "misaligned address" on the
  H200), else to 16;
- per tensor-memory region, a 16-byte slot where tcgen05.alloc writes its address;
- per role that solves into registers (a tri_solve whose x is a register region),
  an f32 scratch tile, 16-byte aligned, as large as its largest such x [rows, cols]:
  lowering hands the solution between the role's threads through it;
- the mbarriers, 8-byte aligned, 8 bytes each;
- the total, rounded up to 16.

A launch requests the total plus TILE_ALIGN bytes (`requested`): the generated code aligns
the carve-up's base to TILE_ALIGN at run time (compiler/lower/emit.py), so a block needs
that slack on top of the layout. Whether a block fits compares what it requests with the
target's maximum (a layout within the maximum but its request past it fails at launch).

Garbage measures as zero (an unknown dtype has 0 bytes, a non-positive dim 0
elements), so the verifier and the analysis always get an answer; lowering
refuses such regions before it lays them out.
"""

import dataclasses
import math

from cake.ir.v1 import ir_pb2

from compiler.ir.dtypes import DTYPE_BYTES, SWIZZLE_SPAN

TILE_ALIGN = 1024
TMA_ALIGN = 128
UNSWIZZLED_ALIGN = 16
MBARRIER_BYTES = 8
TMEM_SLOT_BYTES = 16
SCRATCH_ALIGN = 16
SCRATCH_ELEMENT_BYTES = 4  # f32


def align(x, a):
    """x rounded up to a multiple of a."""
    return (x + a - 1) // a * a


@dataclasses.dataclass(frozen=True)
class RegionSlot:
    """Where one shared region lives: stage 0 at `offset`, then `stages` stages of `stage_bytes`."""

    index: int  # into kernel.regions
    name: str
    offset: int
    stage_bytes: int
    stages: int

    @property
    def bytes(self):
        return self.stage_bytes * self.stages


@dataclasses.dataclass(frozen=True)
class Layout:
    """A kernel's shared memory: regions, TMEM address slots, scratch tiles, mbarriers, total bytes."""

    regions: tuple  # RegionSlot per shared region, in declaration order
    tmem_slots: tuple  # (region index, offset) per tensor-memory region
    scratch: tuple  # (role name, offset, cols) per role with a register tri_solve
    mbarriers: tuple  # (barrier index, offset) per mbarrier array
    total: int

    @property
    def requested(self):
        """Dynamic shared memory a launch of the kernel requests: the total and the base's alignment slack."""
        return requested(self.total)


def requested(total):
    """Dynamic shared memory a launch requests for a layout of `total` bytes (see the module docstring)."""
    return total + TILE_ALIGN


def tma_box(tile_shape, region):
    """The box one TMA copy of a tile moves: the tile, or one panel of it when swizzled.

    A swizzled [.., R, C] tile is C * esize / span panels of [.., R, span / esize] (see
    Swizzle in ir.proto); lowering issues one copy per panel, all through the tensor map
    of that box.
    """
    box = list(tile_shape)
    span = SWIZZLE_SPAN.get(region.swizzle)
    esize = DTYPE_BYTES.get(region.dtype, 0)
    if box and span and esize:
        box[-1] = min(box[-1], span // esize)
    return box


def tile_bytes(region):
    """Bytes of one stage's tile, unpadded: what a TMA copy of the whole tile moves."""
    return math.prod(max(0, d) for d in region.shape) * DTYPE_BYTES.get(region.dtype, 0)


def stage_bytes(region, tma=False):
    """Bytes one stage of a shared region occupies (its tile's bytes, padded as the module doc says); `tma`: a
    TMA copy reads or writes the region."""
    return align(tile_bytes(region), TILE_ALIGN if region.swizzle else TMA_ALIGN if tma else UNSWIZZLED_ALIGN)


def tma_regions(kernel):
    """Names of the shared regions a TMA copy writes (tma_load) or reads (tma_store)."""
    out = set()
    for role in kernel.roles:
        for op in _ops(role.body):
            kind = op.WhichOneof("kind")
            if kind == "tma_load":
                out.add(op.tma_load.dst.region)
            elif kind == "tma_store":
                out.add(op.tma_store.src.region)
    return out


def _ops(body):
    """Every op of a body, nested ones included (iteratively: mutated IR may nest deeply)."""
    stack = list(reversed(body))
    while stack:
        op = stack.pop()
        yield op
        kind = op.WhichOneof("kind")
        if kind == "loop":
            stack.extend(reversed(op.loop.body))
        elif kind == "branch":
            stack.extend(reversed(list(op.branch.then_body) + list(op.branch.else_body)))


def scratch_need(kernel, role):
    """(rows, cols) of the f32 scratch tile `role` needs for tri_solves into registers; (0, 0) for none."""
    registers = {r.name: r for r in kernel.regions if r.space == ir_pb2.MEMORY_SPACE_REGISTER}
    rows = cols = 0
    for op in _ops(role.body):
        if op.WhichOneof("kind") != "tri_solve" or op.tri_solve.x.region not in registers:
            continue
        shape = list(registers[op.tri_solve.x.region].shape)
        if len(shape) == 2:
            rows, cols = max(rows, shape[0]), max(cols, shape[1])
    return rows, cols


def layout(kernel):
    """The Layout of `kernel`'s shared memory (see the module doc)."""
    offset, regions = 0, []
    tma = tma_regions(kernel)
    for i, r in enumerate(kernel.regions):
        if r.space != ir_pb2.MEMORY_SPACE_SHARED:
            continue
        offset = align(offset, TILE_ALIGN)
        slot = RegionSlot(i, r.name, offset, stage_bytes(r, r.name in tma), max(1, r.stages))
        regions.append(slot)
        offset += slot.bytes
    tmem = []
    for i, r in enumerate(kernel.regions):
        if r.space == ir_pb2.MEMORY_SPACE_TENSOR:
            offset = align(offset, TMEM_SLOT_BYTES)
            tmem.append((i, offset))
            offset += TMEM_SLOT_BYTES
    scratch = []
    for role in kernel.roles:
        rows, cols = scratch_need(kernel, role)
        if rows:
            offset = align(offset, SCRATCH_ALIGN)
            scratch.append((role.name, offset, cols))
            offset += SCRATCH_ELEMENT_BYTES * rows * cols
    offset = align(offset, MBARRIER_BYTES)
    mbarriers = []
    for i, b in enumerate(kernel.barriers):
        if b.kind == ir_pb2.BARRIER_KIND_MBARRIER:
            mbarriers.append((i, offset))
            offset += MBARRIER_BYTES * max(1, b.count)
    return Layout(tuple(regions), tuple(tmem), tuple(scratch), tuple(mbarriers), align(offset, 16))
