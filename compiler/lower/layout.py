"""Layout passes: where roles, shared regions and barriers live.

- Roles take consecutive warps in declaration order; a role sized in warpgroups starts
  at a warpgroup boundary (compiler/ir/roles.py, which the verifier and the cost model read).
- Shared memory is laid out by compiler/ir/smem_layout.py (the one layout, which the
  verifier and the cost analysis measure): 1024-byte-aligned regions, TMEM address
  slots, scratch tiles for tri_solves into registers, then mbarriers.
- Named barriers get hardware ids 1..15 in declaration order (0 is bar.sync 0).
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import roles, smem_layout
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
    next_id = 1
    for i, b in enumerate(ctx.kernel.barriers):
        if b.kind != ir_pb2.BARRIER_KIND_NAMED:
            continue
        if next_id + max(1, b.count) - 1 > 15:
            raise LoweringError("kernel.barriers[%d]" % i, "more than 15 named barriers")
        ctx.named_barriers[b.name] = (next_id, b)
        next_id += max(1, b.count)
    for role in ctx.kernel.roles:
        if role.name in ctx.scratch:
            if next_id > 15:
                raise LoweringError("kernel.roles", "no named barrier left for role %r's scratch hand-off" % role.name)
            ctx.role_barriers[role.name] = next_id
            next_id += 1


def collect_params(ctx):
    for p in ctx.kernel.params:
        ctx.params[p.name] = p
    for s in ctx.kernel.contract.symbols:
        ctx.symbols[s.name] = s
