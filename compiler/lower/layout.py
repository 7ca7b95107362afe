"""Layout passes: where roles, shared regions and barriers live.

- Roles take consecutive warps in declaration order; a role sized in warpgroups starts
  at a warpgroup boundary (compiler/ir/roles.py, which the verifier and the cost model read).
- Shared memory is laid out by compiler/ir/smem_layout.py (the one layout, which the
  verifier and the cost analysis measure): 1024-byte-aligned regions, TMEM address
  slots, scratch tiles for tri_solves into registers, then mbarriers.
- Named barriers get hardware ids from 1 in declaration order (0 is bar.sync 0), then the roles'
  scratch hand-offs (compiler/ir/named_barriers.py, which the verifier checks).
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import named_barriers, roles, smem_layout
from compiler.ir.dtypes import DTYPE_BYTES, SWIZZLE_SPAN
from compiler.lower.context import LoweringError, RoleInfo, SharedRegion
from compiler.targets import registers


def layout_roles(ctx):
    """Warp ranges of the roles and threads per block (compiler/ir/roles.py)."""
    spans = roles.role_spans(ctx.kernel)
    for i, (role, span) in enumerate(zip(ctx.kernel.roles, spans)):
        path = "kernel.roles[%d]" % i
        size = role.WhichOneof("size")
        if size is None:
            raise LoweringError(path, "role %r has no size (warps or warpgroups)" % role.name)
        if span.warps <= 0:
            raise LoweringError(path, "role %r has no warps (%s: %d)" % (role.name, size, getattr(role, size)))
        ctx.roles.append(RoleInfo(role=role, index=i, first_warp=span.first_warp, warps=span.warps))
    ctx.spans = spans
    ctx.threads = roles.block_threads(ctx.kernel, spans)
    ctx.entry_registers = registers.kernel_launch_budget(ctx.kernel, ctx.limits, spans)
    if not ctx.roles:
        raise LoweringError("kernel.roles", "the kernel has no roles")


def layout_shared(ctx):
    """Offsets of shared regions, TMEM address slots, scratch tiles and mbarriers (compiler/ir/smem_layout.py)."""
    for i, region in enumerate(ctx.kernel.regions):
        if region.space == ir_pb2.MEMORY_SPACE_REGISTER:
            ctx.registers[region.name] = region
        elif region.space == ir_pb2.MEMORY_SPACE_SHARED and (DTYPE_BYTES.get(region.dtype) is None or not region.shape):
            raise LoweringError("kernel.regions[%d]" % i, "shared region %r needs a dtype and a shape" % region.name)
    lay = smem_layout.layout(ctx.kernel)
    regions = ctx.kernel.regions
    for slot in lay.regions:
        region = regions[slot.index]
        ctx.shared[slot.name] = SharedRegion(
            region, slot.offset, slot.stage_bytes, DTYPE_BYTES[region.dtype], SWIZZLE_SPAN[region.swizzle]
        )
    for index, offset in lay.tmem_slots:
        region = regions[index]
        ctx.shared["__tmem_" + region.name] = SharedRegion(region, offset, smem_layout.TMEM_SLOT_BYTES, 4, 0)
    for role_name, offset, cols in lay.scratch:
        ctx.scratch[role_name] = (offset, cols)
    for index, offset in lay.mbarriers:
        b = ctx.kernel.barriers[index]
        ctx.mbarriers[b.name] = (offset, b)
    ctx.shared_bytes = lay.total


def assign_named(ctx):
    """Hardware ids of named barriers and scratch hand-offs (compiler/ir/named_barriers.py)."""
    ids = named_barriers.assign(ctx.kernel, smem_layout.layout(ctx.kernel))
    over = named_barriers.first_past(ids, ctx.limits.named_barriers_max)
    if over is not None:
        path = "kernel.barriers[%d]" % over.index if over.kind == named_barriers.BARRIER else "kernel.roles[%d]" % over.index
        raise LoweringError(path, "%s needs named barrier id %d; %s has ids 1..%d" % (
            over.name, over.first + over.count - 1, ctx.target.name, ctx.limits.named_barriers_max - 1))
    for h in ids:
        if h.kind == named_barriers.BARRIER:
            ctx.named_barriers[h.name] = (h.first, ctx.kernel.barriers[h.index])
        else:
            ctx.role_barriers[h.name] = h.first


def collect_params(ctx):
    for p in ctx.kernel.params:
        ctx.params[p.name] = p
    for s in ctx.kernel.contract.symbols:
        ctx.symbols[s.name] = s
