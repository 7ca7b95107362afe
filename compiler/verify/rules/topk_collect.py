"""Wide top-k rules: a TopKCollect appends a score tile's candidates to buffers it may write, with a bound per
list row, and a TopKSelect's shared scratch holds every candidate of its buffer row and the k it keeps
(TopKCollect and TopKSelect in ir.proto; lowering in compiler/lower/ops_collect.py)."""

from cake.ir.v1 import ir_pb2

from compiler.ir import topk as topk_ir
from compiler.verify.context import short
from compiler.verify.registry import Finding, rule

REGISTER = ir_pb2.MEMORY_SPACE_REGISTER
SHARED = ir_pb2.MEMORY_SPACE_SHARED
L = ir_pb2.FragmentLayout
COLLECT_LAYOUTS = (L.FRAGMENT_LAYOUT_WGMMA_ACC, L.FRAGMENT_LAYOUT_MMA_ACC, L.FRAGMENT_LAYOUT_ROW_PER_THREAD)


def _param(ctx, ref):
    hit = ctx.params.get(ref.param)
    return hit[1] if hit else None


def _largest(ctx, expr):
    """The largest value a dim can take: a literal's, a symbol's max, or None when not that simple."""
    kind = expr.WhichOneof("kind")
    if kind == "int":
        return expr.int
    if kind == "sym":
        hit = ctx.symbols.get(expr.sym)
        return hit[1].max if hit else None
    return None


def _tensor(ctx, site, field, dtypes, rank=None):
    """Findings about a GlobalRef operand: its tensor's dtype and rank (that a written one is writable is
    CAKE-CONTRACT-006's); and the param (or None)."""
    ref = getattr(site.msg, field)
    p = _param(ctx, ref)
    if p is None:
        return [], None  # an unknown tensor: CAKE-OPERAND rules report it
    out, path = [], site.path + "." + field
    if p.dtype not in dtypes:
        out.append(Finding(path, "`%s` is %s; %s must be %s" % (p.name, short(ir_pb2.Dtype, p.dtype), field,
                                                               " or ".join(short(ir_pb2.Dtype, d) for d in dtypes))))
    if rank is not None and len(p.shape) != rank:
        out.append(Finding(path, "`%s` has %d dims; %s needs %d" % (p.name, len(p.shape), field, rank)))
    return out, p


@rule(
    "CAKE-STRUCT-025", "structure", "error",
    doc="A TopKCollect reads an f32 register score tile (wgmma_acc, mma_acc or row_per_thread) along axis 1 and a "
    "bound fragment of one f32 value per row of the lists that tile keeps (wgmma_rows [64], mma_rows [rows], "
    "row_per_thread [threads]); it appends to candidate tensors, f32 values and i32 indices of one rank, "
    "and counts in an i32 tensor of one dim less.",
    fix_hint="Collect from the accumulator along its columns with the bound in the rows layout that accumulator "
    "keeps; declare cand_v f32 and cand_i i32 [..., rows, C] and count i32 [..., rows].",
)
def collect_form(ctx):
    for site in ctx.sites("top_k_collect"):
        op = site.msg
        src = ctx.region(op.src.region)
        if src is not None and (src.space != REGISTER or src.layout not in COLLECT_LAYOUTS
                                or src.dtype != ir_pb2.DTYPE_F32 or op.axis != 1):
            yield Finding(site.path + ".src", "collects from `%s` (%s %s %s) along axis %d; it reads an f32 register "
                          "score tile (wgmma_acc, mma_acc or row_per_thread) along axis 1" % (
                              src.name, short(ir_pb2.MemorySpace, src.space), short(L, src.layout),
                              short(ir_pb2.Dtype, src.dtype), op.axis))
            src = None
        bound = ctx.region(op.bound.region)
        if src is not None and bound is not None:
            rows_layout = topk_ir.LIST_LAYOUT.get((src.layout, 1))
            want = list(src.shape[:1])
            if (bound.space, bound.layout, list(bound.shape), bound.dtype) != (REGISTER, rows_layout, want,
                                                                                ir_pb2.DTYPE_F32):
                yield Finding(site.path + ".bound", "`%s` (%s %s) must be an f32 register fragment %s %s: one bound "
                              "per row of `%s`" % (bound.name, short(L, bound.layout), list(bound.shape),
                                                   short(L, rows_layout), want, src.name),
                              (("`%s` is declared here" % bound.name, ctx.region_path(bound.name)),))
        found, values = _tensor(ctx, site, "values", (ir_pb2.DTYPE_F32,))
        yield from found
        rank = len(values.shape) if values is not None else None
        found, _ = _tensor(ctx, site, "indices", (ir_pb2.DTYPE_I32,), rank=rank)
        yield from found
        found, _ = _tensor(ctx, site, "count", (ir_pb2.DTYPE_I32,), rank=None if rank is None else rank - 1)
        yield from found


@rule(
    "CAKE-STRUCT-026", "structure", "error",
    doc="A TopKSelect runs in a kernel of one role (its sort steps synchronize the whole block) with a metric; its "
    "shared scratch is f32 values and i32 indices, one dim of one power-of-two length, at least the candidate "
    "buffer's last dim and the largest k; it reads f32 candidates, i32 indices and count, and writes f32 dist and "
    "i32 or i64 idx.",
    fix_hint="Give the select kernel a single role and scratch regions sV f32 [S], sI i32 [S] with S a power of "
    "two no smaller than the buffer's C (its symbol's max) and k's max.",
)
def select_form(ctx):
    for site in ctx.sites("top_k_select"):
        op = site.msg
        if len(ctx.kernel.roles) != 1:
            yield Finding(site.path, "the select's sort synchronizes the whole block (bar.sync 0); the kernel has %d "
                          "roles" % len(ctx.kernel.roles))
        if op.metric == ir_pb2.RESCORE_METRIC_UNSPECIFIED:
            yield Finding(site.path, "top_k_select needs a metric (l2, inner_product or cosine)")
        found, values = _tensor(ctx, site, "values", (ir_pb2.DTYPE_F32,))
        yield from found
        for field, dtypes in (("indices", (ir_pb2.DTYPE_I32,)), ("count", (ir_pb2.DTYPE_I32,)),
                              ("dist", (ir_pb2.DTYPE_F32,)), ("idx", (ir_pb2.DTYPE_I32, ir_pb2.DTYPE_I64))):
            yield from _tensor(ctx, site, field, dtypes)[0]
        scratch = []
        for field, dtype in (("scratch_values", ir_pb2.DTYPE_F32), ("scratch_indices", ir_pb2.DTYPE_I32)):
            region = ctx.region(getattr(op, field).region)
            if region is None:
                continue
            n = region.shape[0] if len(region.shape) == 1 else 0
            if region.space != SHARED or region.dtype != dtype or n < 1 or n & (n - 1):
                yield Finding(site.path + "." + field, "`%s` (%s %s %s) must be a shared %s region of one "
                              "power-of-two dim" % (region.name, short(ir_pb2.MemorySpace, region.space),
                                                    short(ir_pb2.Dtype, region.dtype), list(region.shape),
                                                    short(ir_pb2.Dtype, dtype)))
                continue
            scratch.append(n)
        if len(scratch) != 2:
            continue
        if scratch[0] != scratch[1]:
            yield Finding(site.path + ".scratch_indices", "the scratch regions differ in length: %d and %d" % tuple(scratch))
            continue
        c = _largest(ctx, values.shape[-1]) if values is not None and values.shape else None
        k = _largest(ctx, op.k)
        for what, n in (("the candidate buffer's last dim", c), ("k", k)):
            if n is None or n > scratch[0]:
                yield Finding(site.path + ".scratch_values", "%s can reach %s; the scratch holds %d entries"
                              % (what, "an unbounded value" if n is None else n, scratch[0]))
