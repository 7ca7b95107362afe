"""Memory-movement rules: TMA boxes, alignment, strides and swizzle; multicast; cp.async widths.

TMA (cp.async.bulk.tensor) needs a box of at most 256 elements per dimension
and 5 dimensions, an inner box of a multiple of 16 bytes, a 16-byte aligned
base and 16-byte multiple strides. A swizzled tile is stored in panels one
swizzle span wide (see Swizzle in ir.proto), so its inner box must be a
multiple of the span. Strides are proved from the contract: the innermost
dimension times the element size must be a multiple of 16 for every valid
input (e.g. K % 8 == 0 for bf16).
"""

from compiler.ir.dtypes import DTYPE_BYTES, SWIZZLE_SPAN
from compiler.ir.shapes import tile_shape
from compiler.ir.smem_layout import tma_box
from compiler.verify import exprs
from compiler.verify.registry import Finding, rule


def _tma_boxes(ctx):
    """(site, box shape, region, param) of every TMA load and store with resolvable operands."""
    for site in ctx.sites("tma_load", "tma_store"):
        m = site.msg
        ref, g = (m.dst, m.src) if site.kind == "tma_load" else (m.src, m.dst)
        region, hit = ctx.region(ref.region), ctx.params.get(g.param)
        if region is not None and hit is not None and region.shape:
            yield site, tile_shape(ref, region), region, hit[1]


def _tma_params(ctx):
    seen = {}
    for site, box, region, param in _tma_boxes(ctx):
        seen.setdefault(param.name, (param, site))
    return seen.values()


@rule(
    "CAKE-MEM-001", "memory movement", "error",
    doc="A TMA box (a swizzled tile's panel: lowering issues one copy per panel) has at most 5 dimensions of at most 256 elements each.",
    fix_hint="Split the tile into boxes of at most 256 elements per dimension (several loads).",
)
def box_dims(ctx):
    for site, tile, region, param in _tma_boxes(ctx):
        box = tma_box(tile, region)
        if len(box) > 5 or any(d > 256 for d in box):
            yield Finding(site.path, "TMA box %s of `%s`: at most 5 dims of at most 256 elements" % (box, region.name))


@rule(
    "CAKE-MEM-002", "memory movement", "error",
    doc="A TMA box's inner dimension spans a multiple of 16 bytes.",
    fix_hint="Widen the tile's innermost dimension to a multiple of 16 bytes.",
)
def box_inner_bytes(ctx):
    for site, box, region, param in _tma_boxes(ctx):
        inner = box[-1] * DTYPE_BYTES.get(region.dtype, 0)
        if inner % 16:
            yield Finding(site.path, "TMA box inner dimension of `%s` is %d bytes, not a multiple of 16" % (region.name, inner))


@rule(
    "CAKE-MEM-003", "memory movement", "error",
    doc="A swizzled TMA box's inner dimension is a multiple of the swizzle span (lowering splits it into span-wide panels).",
    fix_hint="Make the tile's inner dimension a multiple of the swizzle span, or choose a smaller swizzle.",
)
def box_swizzle(ctx):
    for site, box, region, param in _tma_boxes(ctx):
        span = SWIZZLE_SPAN.get(region.swizzle)
        inner = box[-1] * DTYPE_BYTES.get(region.dtype, 0)
        if span and inner % span:
            yield Finding(site.path, "`%s` is swizzled %dB but the box's inner dimension is %d bytes" % (region.name, span, inner),
                          (("`%s` is declared here" % region.name, ctx.region_path(region.name)),))


@rule(
    "CAKE-MEM-004", "memory movement", "error",
    doc="Tensors that TMA reads or writes promise a 16-byte aligned base pointer (align_bytes >= 16).",
    fix_hint="Set the param's align_bytes to 16 (and have callers pass 16-byte aligned tensors).",
)
def tma_alignment(ctx):
    for param, site in _tma_params(ctx):
        if param.align_bytes < 16:
            yield Finding(ctx.param_path(param.name), "TMA needs `%s` 16-byte aligned; it promises %d" % (param.name, param.align_bytes),
                          (("the TMA op", site.path),))


@rule(
    "CAKE-MEM-005", "memory movement", "error",
    doc="Row strides of tensors TMA moves are multiples of 16 bytes for every valid input (proved from the contract).",
    fix_hint="Add a contract constraint making the innermost dimension times the element size a multiple of 16 (e.g. K % 8 == 0 for bf16).",
)
def tma_strides(ctx):
    for param, site in _tma_params(ctx):
        if len(param.shape) < 2:
            continue
        esize = DTYPE_BYTES.get(param.dtype, 0)
        d = exprs.divisor(param.shape[-1], ctx.facts)
        if d and (d * esize) % 16:
            yield Finding(
                ctx.param_path(param.name),
                "rows of `%s` are not provably a multiple of 16 bytes: the contract only guarantees its innermost "
                "dimension is a multiple of %d (%d-byte elements)" % (param.name, d, esize),
                (("the TMA op", site.path),),
            )


@rule(
    "CAKE-MEM-006", "memory movement", "error",
    doc="Multicast loads only with a cluster launch, to CTAs inside the cluster.",
    fix_hint="Launch with a cluster covering the mask, or clear multicast_mask.",
)
def multicast(ctx):
    size = 1
    for c in ctx.kernel.launch.cluster:
        size *= max(1, c)
    for site in ctx.sites("tma_load"):
        mask = site.msg.multicast_mask
        if mask and (size <= 1 or mask < 0 or mask >= 1 << min(size, 32)):
            yield Finding(site.path, "multicast mask %#x but the cluster has %d CTA%s" % (mask, size, "" if size == 1 else "s"))


@rule(
    "CAKE-MEM-007", "memory movement", "error",
    doc="cp.async copies 4, 8 or 16 bytes per instruction, dividing the tile's rows and the tensor's (aligned) rows.",
    fix_hint="Use vector_bytes 16 (or 8/4) dividing the row bytes of tile and tensor, with align_bytes at least that.",
)
def cp_async_width(ctx):
    for site in ctx.sites("cp_async"):
        m = site.msg
        v = m.vector_bytes
        if v not in (4, 8, 16):
            yield Finding(site.path, "cp.async copies 4, 8 or 16 bytes, not %d" % v)
            continue
        region, hit = ctx.region(m.dst.region), ctx.params.get(m.src.param)
        if region is None or hit is None or not region.shape:
            continue
        param = hit[1]
        esize = DTYPE_BYTES.get(region.dtype, 0)
        if (tile_shape(m.dst, region)[-1] * esize) % v:
            yield Finding(site.path, "tile rows of `%s` are not a multiple of %d bytes" % (region.name, v))
        elif param.shape and (exprs.divisor(param.shape[-1], ctx.facts) * esize) % v or param.align_bytes < v:
            yield Finding(site.path, "rows of `%s` are not provably %d-byte aligned (align_bytes %d and the contract)"
                          % (param.name, v, param.align_bytes))
