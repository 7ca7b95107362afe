"""Printers for data movement: TMA loads/stores, cp.async, plain copies, ldmatrix/stmatrix.

TMA: a [R, C] shared tile with swizzle span S is C * esize / S panels of [R, S / esize]
(see cake/shared/swizzle.cuh), so a load issues one box per panel through one tensor
map whose box is [1.., R, S / esize]; without swizzle the box is the whole tile.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir.smem_layout import tma_box
from compiler.lower.access import GlobalAccess, SharedAccess
from compiler.lower.context import LoweringError
from compiler.lower.fragments import Fragment
from compiler.lower.op_printers import printer
from compiler.lower.ops_matrix import load_operand_fragment, store_accumulator_fragment
from compiler.lower.ops_sync import barrier_pointer


def _tma_geometry(em, tile, gref, path):
    """(tensor map, [(smem pointer, coords innermost-first)] per panel) for a TMA copy."""
    ctx = em.ctx
    if tile.region not in ctx.shared:
        raise LoweringError(path, "TMA needs a shared tile, %r is not one" % tile.region)
    if len(tile.window):
        raise LoweringError(path, "TMA copies whole tiles; drop the window or declare a tile of that shape")
    sr = ctx.shared[tile.region]
    param = ctx.params.get(gref.param)
    if param is None:
        raise LoweringError(path, "unknown tensor %r" % gref.param)
    rank = len(param.shape)
    shape = list(sr.region.shape)
    if len(shape) > rank or len(gref.coords) != rank:
        raise LoweringError(path, "tile rank %d, tensor rank %d, %d coordinates" % (len(shape), rank, len(gref.coords)))
    box = [1] * (rank - len(shape)) + tma_box(shape, sr.region)
    panel_cols = box[-1]
    if shape[-1] % panel_cols:
        raise LoweringError(path, "tile width %d is not a multiple of the swizzle panel (%d)" % (shape[-1], panel_cols))
    tmap = ctx.tensor_map_for(gref.param, box, sr.region.swizzle)
    stage = em.expr(tile.stage) if tile.HasField("stage") else "0"
    rows = 1
    for d in shape[:-1]:
        rows *= d
    coords = [em.expr(c) for c in gref.coords]
    panels = []
    for p in range(shape[-1] // panel_cols):
        ptr = sr.address(stage, p * rows * panel_cols * sr.esize)
        inner = coords[-1] if p == 0 else "(%s) + %d" % (coords[-1], p * panel_cols)
        panels.append((ptr, [inner] + list(reversed(coords[:-1]))))
    return tmap, panels


@printer("tma_load")
def tma_load(em, op, path):
    tmap, panels = _tma_geometry(em, op.dst, op.src, path)
    bar = barrier_pointer(em, op.barrier, path + ".barrier")
    for ptr, coords in panels:
        em.w.line("cake::tma::load<%d>(%s, &%s, %s, {%s});" % (len(coords), ptr, tmap.arg, bar, ", ".join("int(%s)" % c for c in coords)))


@printer("tma_store")
def tma_store(em, op, path):
    tmap, panels = _tma_geometry(em, op.src, op.dst, path)
    for ptr, coords in panels:
        em.w.line("cake::tma::store<%d>(&%s, %s, {%s});" % (len(coords), tmap.arg, ptr, ", ".join("int(%s)" % c for c in coords)))
    em.w.line("cake::tma::store_commit();")


@printer("bulk_wait")
def bulk_wait(em, op, path):
    em.w.line("cake::tma::store_wait<%d>();" % op.pending)


@printer("cp_async")
def cp_async(em, op, path):
    dst = SharedAccess(em, op.dst, path + ".dst")
    src = GlobalAccess(em, op.src, path + ".src")
    vb = op.vector_bytes or 16
    esize = dst.sr.esize
    if vb not in (4, 8, 16) or vb % esize:
        raise LoweringError(path, "cp.async copies 4, 8 or 16 bytes, a multiple of the element size")
    vec = vb // esize
    cols = dst.shape[-1]
    if cols % vec:
        raise LoweringError(path, "tile width %d is not a multiple of the %d-element vector" % (cols, vec))
    rows = dst.elements // cols
    threads = em.role.threads
    total = rows * cols // vec
    with em.w.block("for (int e = cake_thread; e < %d; e += %d)" % (total, threads)):
        em.w.line("const int r = e / %d, c = (e %% %d) * %d;" % (cols // vec, cols // vec, vec))
        coords = ["r", "c"] if len(dst.shape) > 1 else ["c"]
        em.w.line(
            "cake::cp_async::copy<%d>(&%s, &%s, %s);"
            % (vb, dst.lvalue(coords), src.lvalue(coords), src.in_bounds(coords))
        )
    em.w.line("cake::cp_async::commit();")


@printer("cp_async_wait")
def cp_async_wait(em, op, path):
    em.w.line("cake::cp_async::wait<%d>();" % op.pending)


def _access(em, which, ref, path):
    if which.endswith("global"):
        return GlobalAccess(em, ref, path)
    if ref.region in em.ctx.registers:
        return Fragment(em.ctx.registers[ref.region])
    return SharedAccess(em, ref, path)


@printer("copy")
def copy(em, op, path):
    src_kind, dst_kind = op.WhichOneof("src"), op.WhichOneof("dst")
    if not src_kind or not dst_kind:
        raise LoweringError(path, "copy needs a source and a destination")
    src = _access(em, src_kind, getattr(op, src_kind), path + "." + src_kind)
    dst = _access(em, dst_kind, getattr(op, dst_kind), path + "." + dst_kind)
    frag = src if isinstance(src, Fragment) else dst if isinstance(dst, Fragment) else None
    w = em.w
    if frag is not None:
        other = dst if frag is src else src
        if frag is src and isinstance(other, GlobalAccess) and _store_pairs(em, frag, other):
            return
        if isinstance(other, SharedAccess) and _shared_pairs(em, frag, other, frag is src):
            return
        guard = "%s::writer() && " % frag.cls if (frag.is_rows or frag.is_cols) and frag is src else ""
        w.line("#pragma unroll")
        with w.block("for (int i = 0; i < %d; ++i)" % frag.count):
            coords = frag.coords("i")
            if isinstance(other, Fragment):
                o = other.elem("i")
                cond = "true"
            else:
                o = other.lvalue(coords)
                cond = other.in_bounds(coords) if isinstance(other, GlobalAccess) else "true"
            if frag is src:
                w.line("if (%s%s) %s = cake::cast<%s>(%s);" % (guard, cond, o, other.ctype, frag.elem("i")))
            else:
                w.line("%s = %s ? cake::cast<%s>(%s) : %s(0);" % (frag.elem("i"), cond, frag.ctype, o, frag.ctype))
        return
    # shared <-> global, cooperatively over the role's threads.
    tile = src if isinstance(src, SharedAccess) else dst
    cols = tile.shape[-1]
    total = tile.elements
    with w.block("for (int e = cake_thread; e < %d; e += %d)" % (total, em.role.threads)):
        w.line("const int r = e / %d, c = e %% %d;" % (cols, cols))
        coords = ["r", "c"] if len(tile.shape) > 1 else ["c"]
        if isinstance(src, GlobalAccess):
            w.line("%s = %s ? %s : %s(0);" % (dst.lvalue(coords), src.in_bounds(coords), src.lvalue(coords), dst.ctype))
        else:
            w.line("if (%s) %s = %s;" % (dst.in_bounds(coords), dst.lvalue(coords), src.lvalue(coords)))


_PAIR = {"cake::bf16": "__nv_bfloat162", "cake::f16": "__half2", "float": "float2"}
_PACK = {"cake::bf16": "__floats2bfloat162_rn({0}, {1})", "cake::f16": "__floats2half2_rn({0}, {1})",
         "float": "make_float2({0}, {1})"}


def _store_pairs(em, frag, dst):
    """Accumulator -> global with one 2-element store per adjacent column pair, when possible.

    Values 2j and 2j+1 of an accumulator fragment are neighbours in a row (col, col + 1)
    with col even, so with an even row length both land in one aligned 4/8-byte word.
    """
    if frag.layout not in (ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC, ir_pb2.FRAGMENT_LAYOUT_MMA_ACC) or dst.ctype not in _PAIR:
        return False
    w = em.w
    row_len = dst.dims[-1]
    w.line("#pragma unroll")
    with w.block("for (int i = 0; i < %d; i += 2)" % frag.count):
        coords = frag.coords("i")
        w.line("const int r = %s, c = %s;" % tuple(coords))
        cond = dst.in_bounds(["r", "c"])
        lv = dst.lvalue(["r", "c"])
        with w.block("if ((%s) && ((%s) %% 2 == 0) && (%s) + 1 < (%s))" % (cond, row_len, dst._full(["r", "c"])[-1], row_len)):
            w.line("*reinterpret_cast<%s*>(&%s) = %s;" % (_PAIR[dst.ctype], lv, _PACK[dst.ctype].format(frag.elem("i"), frag.elem("i + 1"))))
        with w.block("else"):
            w.line("if (%s) %s = cake::convert<%s>(%s);" % (cond, lv, dst.ctype, frag.elem("i")))
            c2 = dst.in_bounds(["r", "c + 1"])
            w.line("if (%s) %s = cake::convert<%s>(%s);" % (c2, dst.lvalue(["r", "c + 1"]), dst.ctype, frag.elem("i + 1")))
    return True


def _shared_pairs(em, frag, tile, store):
    """Accumulator <-> shared with one access per adjacent column pair (cake::smem::load_pair /
    store_pair), when the tile's pairs are aligned words (SharedAccess.pairs)."""
    if not (frag.column_pairs and tile.pairs and tile.shape[-1] == frag.shape[-1]):
        return False
    w = em.w
    w.line("#pragma unroll")
    with w.block("for (int i = 0; i < %d; i += 2)" % frag.count):
        coords = frag.coords("i")
        if store:
            w.line(tile.store_pair(coords, frag.elem("i"), frag.elem("i + 1")))
        else:
            w.line("const float2 p = %s;" % tile.load_pair(coords))
            w.line("%s = p.x;" % frag.elem("i"))
            w.line("%s = p.y;" % frag.elem("i + 1"))
    return True


@printer("ldmatrix")
def ldmatrix(em, op, path):
    load_operand_fragment(em, op.src, op.dst, op.transpose, path)


@printer("stmatrix")
def stmatrix(em, op, path):
    store_accumulator_fragment(em, op.src, op.dst, op.transpose, path)
