"""Layout passes: where roles, shared regions and barriers live.

- Roles take consecutive warps in declaration order; a role sized in warpgroups starts
  at a warpgroup boundary (wgmma and setmaxnreg need aligned warpgroups).
- Shared regions get 1024-byte-aligned offsets (the 128B swizzle repeats every 8 rows of
  128 bytes, and TMA/wgmma address the pattern from the tile base); mbarriers follow,
  8-byte aligned.
- Named barriers get hardware ids 1..15 in declaration order (0 is bar.sync 0).
"""

from cake.ir.v1 import ir_pb2

from compiler.lower.context import DTYPE_BYTES, SWIZZLE_SPAN, LoweringError, RoleInfo, SharedRegion

TILE_ALIGN = 1024


def _align(x, a):
    return (x + a - 1) // a * a


def layout_roles(ctx):
    warp = 0
    for i, role in enumerate(ctx.kernel.roles):
        path = "kernel.roles[%d]" % i
        size = role.WhichOneof("size")
        if size == "warpgroups":
            warp = _align(warp, 4)
            warps = 4 * role.warpgroups
        elif size == "warps":
            warps = role.warps
        else:
            raise LoweringError(path, "role %r has no size (warps or warpgroups)" % role.name)
        if warps <= 0:
            raise LoweringError(path, "role %r has %d warps" % (role.name, warps))
        ctx.roles.append(RoleInfo(role=role, index=i, first_warp=warp, warps=warps))
        warp += warps
    ctx.threads = 32 * warp
    if not ctx.roles:
        raise LoweringError("kernel.roles", "the kernel has no roles")


def layout_shared(ctx):
    offset = 0
    for i, region in enumerate(ctx.kernel.regions):
        if region.space == ir_pb2.MEMORY_SPACE_REGISTER:
            ctx.registers[region.name] = region
            continue
        if region.space != ir_pb2.MEMORY_SPACE_SHARED:
            continue
        esize = DTYPE_BYTES.get(region.dtype)
        if esize is None or not region.shape:
            raise LoweringError("kernel.regions[%d]" % i, "shared region %r needs a dtype and a shape" % region.name)
        elems = 1
        for d in region.shape:
            elems *= d
        stage_bytes = _align(elems * esize, TILE_ALIGN if region.swizzle else 16)
        offset = _align(offset, TILE_ALIGN)
        ctx.shared[region.name] = SharedRegion(region, offset, stage_bytes, esize, SWIZZLE_SPAN[region.swizzle])
        offset += stage_bytes * max(1, region.stages)
    # Tensor-memory regions need a shared slot where tcgen05.alloc writes the TMEM address.
    for region in ctx.kernel.regions:
        if region.space == ir_pb2.MEMORY_SPACE_TENSOR:
            offset = _align(offset, 16)
            ctx.shared["__tmem_" + region.name] = SharedRegion(region, offset, 16, 4, 0)
            offset += 16
    offset = reserve_scratch(ctx, offset)
    offset = _align(offset, 8)
    for b in ctx.kernel.barriers:
        if b.kind == ir_pb2.BARRIER_KIND_MBARRIER:
            ctx.mbarriers[b.name] = (offset, b)
            offset += 8 * max(1, b.count)
    ctx.shared_bytes = _align(offset, 16)
    for p in ctx.kernel.pipelines:
        ctx.pipelines_by_empty[p.empty] = p


def _ops(ops):
    for op in ops:
        yield op
        kind = op.WhichOneof("kind")
        if kind == "loop":
            yield from _ops(op.loop.body)
        elif kind == "branch":
            yield from _ops(op.branch.then_body)
            yield from _ops(op.branch.else_body)


def reserve_scratch(ctx, offset):
    """Shared scratch for ops that lower through shared memory (a tri_solve into registers).

    One f32 tile per role, as large as the role's largest such op needs; the role also
    gets a hidden named barrier (see assign_named) to hand the tile between its threads.
    """
    for role in ctx.kernel.roles:
        need_rows = need_cols = 0
        for op in _ops(role.body):
            if op.WhichOneof("kind") == "tri_solve" and op.tri_solve.x.region in ctx.registers:
                shape = list(ctx.registers[op.tri_solve.x.region].shape)
                if len(shape) == 2:
                    need_rows, need_cols = max(need_rows, shape[0]), max(need_cols, shape[1])
        if need_rows:
            offset = _align(offset, 16)
            ctx.scratch[role.name] = (offset, need_cols)
            offset += 4 * need_rows * need_cols
    return offset


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
