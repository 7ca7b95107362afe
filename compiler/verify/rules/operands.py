"""Structure rules on operands: ranks, dtypes, memory spaces, ownership, windows, fragment and MMA shapes."""

import functools

from cake.ir.v1 import ir_pb2

from compiler.ir import oprefs
from compiler.ir.dtypes import DTYPE_BYTES, SWIZZLE_SPAN
from compiler.ir.shapes import mma_dims, tile_shape
from compiler.verify import exprs, threads
from compiler.verify.context import short
from compiler.verify.registry import Finding, rule

SHARED, REGISTER, TENSOR = ir_pb2.MEMORY_SPACE_SHARED, ir_pb2.MEMORY_SPACE_REGISTER, ir_pb2.MEMORY_SPACE_TENSOR
L = ir_pb2.FragmentLayout
_ANY = frozenset((SHARED, REGISTER))

# (op kind, field) -> memory spaces the operand may live in; unlisted fields take shared or registers.
_SPACES = {
    ("tma_load", "dst"): {SHARED},
    ("tma_store", "src"): {SHARED},
    ("cp_async", "dst"): {SHARED},
    ("ldmatrix", "src"): {SHARED},
    ("ldmatrix", "dst"): {REGISTER},
    ("stmatrix", "src"): {REGISTER},
    ("stmatrix", "dst"): {SHARED},
    ("tmem_load", "src"): {TENSOR},
    ("tmem_load", "dst"): {REGISTER},
}
# MMA kind -> field -> (spaces, register layout required or None).
_MMA = {
    ir_pb2.MMA_KIND_WGMMA: {"a": ({SHARED, REGISTER}, None), "b": ({SHARED}, None), "acc": ({REGISTER}, L.FRAGMENT_LAYOUT_WGMMA_ACC)},
    ir_pb2.MMA_KIND_TCGEN05: {"a": ({SHARED, TENSOR}, None), "b": ({SHARED}, None), "acc": ({TENSOR}, None)},
    ir_pb2.MMA_KIND_MMA_SYNC: {
        "a": ({SHARED, REGISTER}, L.FRAGMENT_LAYOUT_MMA_A),
        "b": ({SHARED, REGISTER}, L.FRAGMENT_LAYOUT_MMA_B),
        "acc": ({REGISTER}, L.FRAGMENT_LAYOUT_MMA_ACC),
    },
}
_MMA_INPUTS = {ir_pb2.DTYPE_BF16, ir_pb2.DTYPE_F16, ir_pb2.DTYPE_FP8_E4M3, ir_pb2.DTYPE_I8}


def _operands(ctx):
    """(site, TileUse, Region) for every resolvable tile operand."""
    for site in ctx.ops:
        if site.msg is None:
            continue
        for u in ctx.operands(site):
            if u.hit is not None:
                yield site, u, u.hit[1]


def _space(space):
    return short(ir_pb2.MemorySpace, space)


@rule(
    "CAKE-STRUCT-007", "structure", "error",
    doc="Ranks agree at uses: tensor coords and windows match their rank; a tile moved to or from a tensor has at most its rank (leading tensor dims then have extent 1).",
    fix_hint="Give one coordinate (or window) per dimension, and tiles of the same rank as the tensor they move.",
)
def ranks(ctx):
    for site in ctx.ops:
        if site.msg is None:
            continue
        for u in ctx.operands(site):
            region = u.region
            if region is not None and u.windows and len(u.windows) != len(region.shape):
                yield Finding(site.path, "window of `%s` has %d dims; the region has %d" % (u.name, len(u.windows), len(region.shape)))
        globals_ = site.globals()
        tiles = [u for u in ctx.operands(site) if u.hit is not None] if globals_ else ()
        for field, g, _ in globals_:
            hit = ctx.params.get(g.param)
            if hit is None:
                continue
            rank = len(hit[1].shape)
            if len(g.coords) != rank:
                yield Finding(site.path, "`%s` has rank %d but %d coordinates are given" % (g.param, rank, len(g.coords)))
            for u in tiles:
                if len(u.shape()) > rank:
                    yield Finding(
                        site.path, "moves a rank-%d tile of `%s` to or from rank-%d tensor `%s`"
                        % (len(u.shape()), u.name, rank, g.param),
                    )


@rule(
    "CAKE-STRUCT-008", "structure", "error",
    doc="Dtypes agree: TMA and cp.async tiles have their tensor's dtype; MMA inputs match and accumulate in f32 (i32 for i8); indices are i32.",
    fix_hint="Declare the region with the dtype the instruction moves or computes in.",
)
def dtypes(ctx):
    for site in ctx.ops:
        if site.msg is None:
            continue
        if site.kind in ("tma_load", "tma_store", "cp_async"):
            for (_, ref, _), (_, g, _) in zip(site.tiles(), site.globals()):
                region, hit = ctx.region(ref.region), ctx.params.get(g.param)
                if region is not None and hit is not None and region.dtype != hit[1].dtype:
                    yield Finding(
                        site.path, "moves %s tensor `%s` into %s region `%s` (this copy does not convert)"
                        % (short(ir_pb2.Dtype, hit[1].dtype), g.param, short(ir_pb2.Dtype, region.dtype), ref.region),
                    )
        elif site.kind == "mma":
            yield from _mma_dtypes(ctx, site)
        elif site.kind in ("arg_reduce", "top_k"):
            region = ctx.region(site.msg.indices.region)
            if region is not None and region.dtype != ir_pb2.DTYPE_I32:
                yield Finding(site.path, "indices region `%s` must be i32" % region.name)


def _mma_dtypes(ctx, site):
    m = site.msg
    a, b, acc = ctx.region(m.a.region), ctx.region(m.b.region), ctx.region(m.acc.region)
    if a is None or b is None or acc is None:
        return
    if a.dtype != b.dtype or a.dtype not in _MMA_INPUTS:
        yield Finding(
            site.path, "MMA inputs are %s and %s; they must be one of bf16, f16, fp8_e4m3, i8, the same for both"
            % (short(ir_pb2.Dtype, a.dtype), short(ir_pb2.Dtype, b.dtype)),
        )
        return
    want = {ir_pb2.DTYPE_I8: {ir_pb2.DTYPE_I32}, ir_pb2.DTYPE_F16: {ir_pb2.DTYPE_F32, ir_pb2.DTYPE_F16}}.get(a.dtype, {ir_pb2.DTYPE_F32})
    if acc.dtype not in want:
        yield Finding(
            site.path, "%s inputs accumulate in %s, not %s" % (
                short(ir_pb2.Dtype, a.dtype), " or ".join(short(ir_pb2.Dtype, w) for w in sorted(want)), short(ir_pb2.Dtype, acc.dtype)),
        )


@rule(
    "CAKE-STRUCT-009", "structure", "error",
    doc="Operands live where their instruction reads or writes them (TMA/cp.async/ldmatrix in shared memory, MMA accumulators in their fragments, tensor memory only for tcgen05).",
    fix_hint="Use a region of the memory space (and fragment layout) the instruction requires.",
)
def spaces(ctx):
    for site, u, region in _operands(ctx):
        field = u.field
        if site.kind == "mma":
            spec = _MMA.get(site.msg.kind, {}).get(field)
            if spec is None:
                continue
            allowed, layout = spec
        else:
            allowed, layout = _SPACES.get((site.kind, field), _ANY), None
        if region.space not in allowed:
            yield Finding(
                site.path, "%s.%s is %s region `%s`; it must be in %s" % (
                    site.kind, field, _space(region.space), u.name, " or ".join(sorted(_space(s) for s in allowed))),
                (("`%s` is declared here" % u.name, ctx.region_path(u.name)),),
            )
        elif layout is not None and region.space == REGISTER and region.layout != layout:
            yield Finding(
                site.path, "%s.%s needs a %s fragment; `%s` is %s" % (
                    site.kind, field, short(L, layout), u.name, short(L, region.layout)),
                (("`%s` is declared here" % u.name, ctx.region_path(u.name)),),
            )


@rule(
    "CAKE-STRUCT-010", "structure", "error",
    doc="Register and tensor-memory regions have an owner role (registers also a layout); registers are used only by their owner (as operands, and register scalars in expressions); ring depth and swizzle are for shared regions.",
    fix_hint="Set `owner` (and `layout`) on register/tensor regions and use registers only in the owner's body.",
)
def ownership(ctx):
    for i, r in enumerate(ctx.kernel.regions):
        path = "kernel.regions[%d]" % i
        private = r.space in (REGISTER, TENSOR)
        if private and not r.owner:
            yield Finding(path, "%s region `%s` has no owner role" % (_space(r.space), r.name))
        if r.space == REGISTER and r.layout == L.FRAGMENT_LAYOUT_UNSPECIFIED:
            yield Finding(path, "register region `%s` has no fragment layout" % r.name)
        if r.space == SHARED and (r.owner or r.layout):
            yield Finding(path, "shared region `%s` sets owner or layout, which only register regions have" % r.name)
        if private and (r.stages > 1 or r.swizzle):
            yield Finding(path, "%s region `%s` sets stages or swizzle, which only shared regions have" % (_space(r.space), r.name))
    for site, u, region in _operands(ctx):
        if region.space == REGISTER and region.owner in ctx.roles:
            owner = ctx.roles[region.owner][0]
            if owner != site.role_index:
                yield Finding(
                    site.path, "role `%s` uses %s region `%s`, which role `%s` owns"
                    % (ctx.kernel.roles[site.role_index].name, _space(region.space), u.name, region.owner),
                    (("`%s` is declared here" % u.name, ctx.region_path(u.name)),),
                )
    if not any(ctx.scalars):  # nothing else can be read across roles
        return
    for site in ctx.ops:
        unknown = ctx.names_read(site.path, site.msg) - ctx.static_names - set(site.loop_vars)
        unknown -= ctx.scalars[site.role_index].keys()
        for name in sorted(unknown):
            owner = next((ctx.kernel.roles[i].name for i, owned in enumerate(ctx.scalars) if name in owned), None)
            if owner is not None:
                yield Finding(
                    site.path, "role `%s` reads register `%s` in an expression, but role `%s` owns it: its value lives "
                    "in that role's threads" % (ctx.kernel.roles[site.role_index].name, name, owner),
                    (("`%s` is declared here" % name, ctx.region_path(name)),),
                    "Compute with `%s` in role `%s`, or hand its value over through shared memory." % (name, owner),
                )


def _range(ctx, expr, role_threads):
    """(min, max) of a start expression over a role's threads, when it depends only on builtins; else None."""
    if expr.WhichOneof("kind") == "int":  # the common constant start: the same for every thread
        return None if role_threads > ctx.threads_per_block_max else (expr.int, expr.int)
    names = exprs.names(expr)
    if not names <= threads.THREAD or role_threads > ctx.threads_per_block_max:  # a resource error already
        return None
    fn = exprs.compile_expr(expr)
    step = 1 if names & {"thread", "lane"} else 32
    values = []
    for env in _thread_envs(max(role_threads, 1), step):
        try:
            values.append(fn(env))
        except exprs.ExprError:
            return None
    return min(values), max(values)


@functools.lru_cache(maxsize=64)
def _thread_envs(threads_, step):
    """The builtins of threads 0, step, 2 step, ... below threads_ (shared: read them, never write)."""
    return tuple(threads.builtins_of(t) for t in range(0, threads_, step))


@rule(
    "CAKE-STRUCT-011", "structure", "error",
    doc="Windows lie within their tile and constant stages within the region's ring, for every thread of the role.",
    fix_hint="Shrink or move the window, or index a stage that exists.",
)
def windows(ctx):
    for site, u, region in _operands(ctx):
        if u.stage is not None:
            stage = exprs.constant(u.stage)
            if stage is not None and not 0 <= stage < max(1, region.stages):
                yield Finding(site.path, "stage %d of `%s`, which has %d stages" % (stage, u.name, max(1, region.stages)))
        if len(u.windows) != len(region.shape):
            continue
        role_threads = ctx.spans[site.role_index].threads
        for dim, (w, extent) in enumerate(zip(u.windows, region.shape)):
            span = _range(ctx, u.starts[dim], role_threads) if w.HasField("start") else (0, 0)
            if span is None:
                continue
            lo, hi = span
            size = u.sizes[dim]
            if lo < 0 or hi + size > extent:
                yield Finding(
                    site.path, "window [%d, %d) along dim %d of `%s` leaves its extent %d"
                    % (lo if lo < 0 else hi, (lo if lo < 0 else hi) + size, dim, u.name, extent),
                )


def _shape_problem(region, owner_threads, owner_role):
    s, lay = list(region.shape), region.layout
    if lay == L.FRAGMENT_LAYOUT_WGMMA_ACC:
        if len(s) != 2 or s[0] != 64 or s[1] % 8 or not 8 <= s[1] <= 256:
            return "a WGMMA_ACC fragment is [64, N] with N a multiple of 8 up to 256"
        if owner_role is not None and owner_role.WhichOneof("size") != "warpgroups":
            return "a WGMMA_ACC fragment needs an owner sized in warpgroups"
    elif lay == L.FRAGMENT_LAYOUT_WGMMA_ROWS and (not 1 <= len(s) <= 2 or s[0] != 64):
        return "a WGMMA_ROWS fragment is [64] (or [64, k]: k values per row)"
    elif lay == L.FRAGMENT_LAYOUT_WGMMA_COLS:
        if not 1 <= len(s) <= 2 or s[0] % 16 or not 16 <= s[0] <= 256:
            return "a WGMMA_COLS fragment is [N] (or [N, k]: k values per column) with N a multiple of 16 up to 256"
        if owner_role is not None and owner_role.WhichOneof("size") != "warpgroups":
            return "a WGMMA_COLS fragment needs an owner sized in warpgroups"
    elif lay == L.FRAGMENT_LAYOUT_MMA_ACC and (len(s) != 2 or s[0] % 16 or s[1] % 8):
        return "an MMA_ACC fragment is [16 i, 8 j]"
    elif lay == L.FRAGMENT_LAYOUT_MMA_ROWS and (not 1 <= len(s) <= 2 or s[0] % 16):
        return "an MMA_ROWS fragment is [16 i] (or [16 i, k])"
    elif lay == L.FRAGMENT_LAYOUT_MMA_A and (len(s) != 2 or s[0] % 16 or s[1] % 16):
        return "an MMA_A fragment is [16 i, 16 k]"
    elif lay == L.FRAGMENT_LAYOUT_MMA_B and (len(s) != 2 or s[0] % 8 or s[1] % 16):
        return "an MMA_B fragment is [8 j, 16 k]"
    elif lay == L.FRAGMENT_LAYOUT_ROW_PER_THREAD and (not 1 <= len(s) <= 2 or (owner_threads and s[0] != owner_threads)):
        return "a ROW_PER_THREAD fragment is [threads of the owner (%d)] or [threads, N]" % owner_threads
    elif lay not in L.values():
        return "layout %d is not a FragmentLayout" % lay
    return None


@rule(
    "CAKE-STRUCT-016", "structure", "error",
    doc="A register region's shape fits its fragment layout (WGMMA_ACC [64, N], MMA_ACC [16i, 8j], ROW_PER_THREAD [owner threads, N], ...).",
    fix_hint="Declare the fragment with the shape its layout describes in ir.proto.",
)
def fragments(ctx):
    for i, r in enumerate(ctx.kernel.regions):
        if r.space != REGISTER or not r.layout or not r.shape:
            continue
        hit = ctx.roles.get(r.owner)
        owner_threads = ctx.spans[hit[0]].threads if hit else 0
        problem = _shape_problem(r, owner_threads, hit[1] if hit else None)
        if problem:
            yield Finding("kernel.regions[%d]" % i, "register region `%s` has shape %s: %s" % (r.name, list(r.shape), problem))


def _mnk(m, a, b, acc):
    """(M, N, K) from the operand shapes given the majorness, plus the accumulator shape; None if not 2-D."""
    if len(a) != 2 or len(b) != 2 or len(acc) != 2:
        return None
    (am, ak), (bn, bk) = mma_dims(a, m.a_major), mma_dims(b, m.b_major)
    return am, bn, ak, bk


@rule(
    "CAKE-STRUCT-017", "structure", "error",
    doc="MMA operand shapes agree (A [M, K], B [N, K], acc [M, N]) and fit the instruction: wgmma M = 64 per warpgroup, N a multiple of 8 up to 256, K a multiple of 16.",
    fix_hint="Slice A to the rows one instruction group computes (wgmma: 64 per warpgroup) and keep N and K on the instruction's grid.",
)
def mma_shapes(ctx):
    for site in ctx.sites("mma"):
        m = site.msg
        regions = [ctx.region(ref.region) for ref in (m.a, m.b, m.acc)]
        if None in regions:
            continue
        a, b, acc = (tile_shape(ref, r) for ref, r in zip((m.a, m.b, m.acc), regions))
        dims = _mnk(m, a, b, acc)
        if dims is None:
            yield Finding(site.path, "MMA operands must be 2-D tiles (A %s, B %s, acc %s)" % (a, b, acc))
            continue
        am, bn, ak, bk = dims
        if ak != bk or acc != [am, bn]:
            yield Finding(site.path, "A is %dx%d (MxK), B %dx%d (NxK), acc %s: they do not compose" % (am, ak, bn, bk, acc))
            continue
        k_step = 32 if regions[0].dtype in (ir_pb2.DTYPE_FP8_E4M3, ir_pb2.DTYPE_I8) else 16
        if m.kind == ir_pb2.MMA_KIND_WGMMA and (am != 64 or bn % 8 or not 8 <= bn <= 256 or ak % k_step):
            yield Finding(site.path, "wgmma computes M = 64 per warpgroup, N in 8..256 by 8, K by %d; here M=%d N=%d K=%d" % (k_step, am, bn, ak))
        elif m.kind == ir_pb2.MMA_KIND_TCGEN05 and (am not in (64, 128) or bn % 16 or not 16 <= bn <= 256 or ak % k_step):
            yield Finding(site.path, "tcgen05 computes M = 64 or 128, N in 16..256 by 16, K by %d; here M=%d N=%d K=%d" % (k_step, am, bn, ak))
        elif m.kind == ir_pb2.MMA_KIND_MMA_SYNC and (am % 16 or bn % 8 or ak % k_step):
            yield Finding(site.path, "mma.sync tiles M by 16, N by 8, K by %d; here M=%d N=%d K=%d" % (k_step, am, bn, ak))


def _instr_shape_problem(m, dims, b_region):
    """Why an Mma's instr_shape is not an instruction lowering emits for it, or None."""
    am, bn, ak, _ = dims
    shape = list(m.instr_shape)
    if len(shape) != 3:
        return "instr_shape %s is not (m, n, k)" % shape
    if m.kind == ir_pb2.MMA_KIND_WGMMA:
        im, i_n, ik = shape
        if im != 64 or ik != 16 or i_n % 16 or not 16 <= i_n <= bn or bn % i_n:
            return "wgmma instructions are m64 nN k16 with N in 16..256 by 16 dividing the tile's N=%d; got %s" % (bn, shape)
        span = SWIZZLE_SPAN.get(b_region.swizzle, 0) // DTYPE_BYTES.get(b_region.dtype, 1)
        if m.b_major == ir_pb2.MAJOR_MN and span and i_n % span:
            return ("an MN-major B tile swizzled by %d columns starts an instruction only at a whole swizzle span: "
                    "N=%d is not a multiple of %d" % (span, i_n, span))
        return None
    if m.kind == ir_pb2.MMA_KIND_MMA_SYNC:
        return None if shape == [16, 8, 16] else "mma.sync lowers to m16n8k16 instructions; got %s" % shape
    if m.kind == ir_pb2.MMA_KIND_TCGEN05:
        return None if shape == [am, bn, 16] else "tcgen05 lowers the whole tile, m%d n%d k16; got %s" % (am, bn, shape)
    return None


@rule(
    "CAKE-STRUCT-027", "structure", "error",
    doc="An MMA's instr_shape, when given, is an instruction lowering emits for it that tiles the op: wgmma (64, N, 16) "
    "with N in 16..256 by 16 dividing the tile's N (for an MN-major B, a whole number of swizzle spans); mma.sync "
    "(16, 8, 16); tcgen05 the whole tile (M, N, 16).",
    fix_hint="Leave instr_shape empty (lowering takes the largest instruction that fits), or give one that divides the tile.",
)
def mma_instr_shapes(ctx):
    for site in ctx.sites("mma"):
        m = site.msg
        if not m.instr_shape:
            continue
        regions = [ctx.region(ref.region) for ref in (m.a, m.b, m.acc)]
        if None in regions:
            continue
        dims = _mnk(m, *(tile_shape(ref, r) for ref, r in zip((m.a, m.b, m.acc), regions)))
        problem = dims and _instr_shape_problem(m, dims, regions[1])
        if problem:
            yield Finding(site.path + ".instr_shape", problem)
