"""Printers for math: fill, elementwise, reductions, arg-reductions, scan, triangular
solves and atomics (top-k lists: ops_topk.py).

Register destinations are walked element by element through their Fragment (the
thread's own elements and their coordinates; an accumulator's column pairs together when a
shared tile operand can be read a pair per access); shared destinations cooperatively by
the role's threads. Operands are read at the destination element's coordinates with
the broadcasting rule of ir.proto's Operand.tile (compiler/ir/operands.py).
"""

import math

from cake.ir.v1 import ir_pb2

from compiler.ir import operands
from compiler.lower.access import GlobalAccess, SharedAccess
from compiler.lower.context import LoweringError
from compiler.lower.fragments import Fragment
from compiler.lower.op_printers import printer

EW = ir_pb2.ElementwiseOp
_EW = {
    EW.ELEMENTWISE_OP_COPY: "{0}",
    EW.ELEMENTWISE_OP_ADD: "({0} + {1})",
    EW.ELEMENTWISE_OP_SUB: "({0} - {1})",
    EW.ELEMENTWISE_OP_MUL: "({0} * {1})",
    EW.ELEMENTWISE_OP_DIV: "__fdiv_rn({0}, {1})",
    EW.ELEMENTWISE_OP_FMA: "cake::math::fma({0}, {1}, {2})",
    EW.ELEMENTWISE_OP_MAX: "fmaxf({0}, {1})",
    EW.ELEMENTWISE_OP_MIN: "fminf({0}, {1})",
    EW.ELEMENTWISE_OP_NEG: "(-{0})",
    EW.ELEMENTWISE_OP_EXP: "cake::math::exp({0})",
    EW.ELEMENTWISE_OP_LOG: "cake::math::log({0})",
    EW.ELEMENTWISE_OP_SQRT: "cake::math::sqrt({0})",
    EW.ELEMENTWISE_OP_RSQRT: "cake::math::rsqrt({0})",
    EW.ELEMENTWISE_OP_SIGMOID: "cake::math::sigmoid({0})",
    EW.ELEMENTWISE_OP_SOFTPLUS: "cake::math::softplus({0})",
    EW.ELEMENTWISE_OP_LT: "({0} < {1} ? 1.0f : 0.0f)",
    EW.ELEMENTWISE_OP_LE: "({0} <= {1} ? 1.0f : 0.0f)",
    EW.ELEMENTWISE_OP_SELECT: "cake::math::select({0}, {1}, {2})",
    EW.ELEMENTWISE_OP_ABS: "fabsf({0})",
}

_REDUCE = {
    ir_pb2.REDUCE_OP_SUM: ("cake::warp::Sum", "0.0f"),
    ir_pb2.REDUCE_OP_MAX: ("cake::warp::Max", "-INFINITY"),
    ir_pb2.REDUCE_OP_MIN: ("cake::warp::Min", "INFINITY"),
}

# The longest line a shared scan reads into registers before summing (64 floats per thread).
SCAN_LINE_IN_REGISTERS = 64

# Lanes that share a row of each accumulator layout: a quad (xor 1, 2).
_ROW_LANES = {
    ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC: (1, 4),
    ir_pb2.FRAGMENT_LAYOUT_MMA_ACC: (1, 4),
    ir_pb2.FRAGMENT_LAYOUT_WGMMA_ROWS: (1, 4),
    ir_pb2.FRAGMENT_LAYOUT_MMA_ROWS: (1, 4),
}


def float_literal(v):
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    return "%sf" % repr(float(v))


def _target(em, ref, path):
    """The destination of a math op: a Fragment (registers) or a SharedAccess."""
    if ref.region in em.ctx.registers:
        if len(ref.window):
            raise LoweringError(path, "register tiles are used whole (no windows)")
        return Fragment(em.ctx.registers[ref.region])
    return SharedAccess(em, ref, path)


def operand_value(em, opnd, dst, i, coords, path):
    """C++ float value of an Operand at destination element i (coords: its coordinates)."""
    kind = opnd.WhichOneof("kind")
    if kind == "imm":
        return float_literal(opnd.imm)
    if kind == "scalar":
        return "float(%s)" % em.expr(opnd.scalar)
    if kind == "coord":
        if not 0 <= opnd.coord < len(coords):
            raise LoweringError(path, "coord(%d) of a rank-%d destination" % (opnd.coord, len(coords)))
        return "float(%s)" % coords[opnd.coord]
    if kind != "tile":
        raise LoweringError(path, "operand not set")
    ref = opnd.tile
    if ref.region in em.ctx.registers:
        src = Fragment(em.ctx.registers[ref.region])
        if isinstance(dst, Fragment) and src.layout == dst.layout and src.shape == dst.shape:
            return "cake::to_float(%s)" % src.elem(i)
        if src.one_per_row and isinstance(dst, Fragment):
            return "cake::to_float(%s)" % src.elem(src.row_value_index(dst, i))
        if src.layout == ir_pb2.FRAGMENT_LAYOUT_PER_THREAD:
            sc = operands.trailing_coords(src.shape, coords)
            flat = "0"
            for size, c in zip(src.shape, sc):
                flat = "(%s) * %d + (%s)" % (flat, size, c)
            return "cake::to_float(%s)" % src.elem(flat)
        raise LoweringError(path, "register operand %r cannot be read at the destination's elements" % ref.region)
    acc = SharedAccess(em, ref, path)
    return "cake::to_float(%s)" % acc.lvalue(operands.trailing_coords(acc.shape, coords))


def _for_each(em, dst, body):
    """Run body(i, coords, lvalue) over the destination's elements held by this thread."""
    w = em.w
    if isinstance(dst, Fragment):
        if dst.count is None:
            raise LoweringError("region %s" % dst.region.name, "mma operand fragments are not elementwise data")
        w.line("#pragma unroll")
        with w.block("for (int i = 0; i < %d; ++i)" % dst.count):
            body("i", dst.coords("i"), dst.elem("i"), dst.ctype)
        return
    cols = dst.shape[-1]
    with w.block("for (int e = cake_thread; e < %d; e += %d)" % (dst.elements, em.role.threads)):
        coords = ["e / %d" % cols, "e %% %d" % cols] if len(dst.shape) > 1 else ["e"]
        body("e", coords, dst.lvalue(coords), dst.ctype)


@printer("fill")
def fill(em, op, path):
    dst = _target(em, op.dst, path + ".dst")
    _for_each(em, dst, lambda i, c, lv, ct: em.w.line("%s = cake::convert<%s>(%s);" % (lv, ct, float_literal(op.value))))


@printer("elementwise")
def elementwise(em, op, path):
    if op.op not in _EW:
        raise LoweringError(path, "elementwise op not set")
    arity, template = operands.ELEMENTWISE_ARITY[op.op], _EW[op.op]
    if len(op.srcs) != arity:
        raise LoweringError(path, "this elementwise op takes %d operands, got %d" % (arity, len(op.srcs)))
    dst = _target(em, op.dst, path + ".dst")
    if _elementwise_pairs(em, op, dst, template, path):
        return

    def body(i, coords, lvalue, ctype):
        vals = [operand_value(em, s, dst, i, coords, "%s.srcs[%d]" % (path, k)) for k, s in enumerate(op.srcs)]
        em.w.line("%s = cake::convert<%s>(%s);" % (lvalue, ctype, template.format(*vals)))

    _for_each(em, dst, body)


def paired_operand(em, opnd, dst, path):
    """The SharedAccess of a shared tile operand read one column pair per access onto an accumulator
    fragment `dst` (its columns are the destination's: not broadcast along them), else None."""
    if opnd.WhichOneof("kind") != "tile" or opnd.tile.region in em.ctx.registers:
        return None
    acc = SharedAccess(em, opnd.tile, path)
    return acc if acc.pairs and acc.shape[-1] == dst.shape[-1] > 1 else None


def _elementwise_pairs(em, op, dst, template, path):
    """An accumulator destination with a shared tile operand: two values per step, each such operand
    read with one access per column pair (half the shared accesses and their address arithmetic)."""
    if not (isinstance(dst, Fragment) and dst.column_pairs):
        return False
    paired = [paired_operand(em, s, dst, "%s.srcs[%d]" % (path, k)) for k, s in enumerate(op.srcs)]
    if not any(paired):
        return False
    w = em.w
    w.line("#pragma unroll")
    with w.block("for (int i = 0; i < %d; i += 2)" % dst.count):
        coords = [dst.coords("i"), dst.coords("(i + 1)")]
        for k, acc in enumerate(paired):
            if acc:
                w.line("const float2 p%d = %s;" % (k, acc.load_pair(operands.trailing_coords(acc.shape, coords[0]))))
        for half, i in enumerate(("i", "(i + 1)")):
            vals = ["p%d.%s" % (k, "xy"[half]) if acc else
                    operand_value(em, s, dst, i, coords[half], "%s.srcs[%d]" % (path, k))
                    for k, (s, acc) in enumerate(zip(op.srcs, paired))]
            w.line("%s = cake::convert<%s>(%s);" % (dst.elem(i), dst.ctype, template.format(*vals)))
    return True


def _rows_reduction(em, src, dst, path):
    """Check a [rows, N] accumulator -> rows fragment reduction along axis 1."""
    if not isinstance(src, Fragment) or src.layout not in _ROW_LANES or src.is_rows:
        raise LoweringError(path + ".src", "row reductions read an accumulator fragment (wgmma_acc or mma_acc)")
    if not isinstance(dst, Fragment) or not dst.is_rows:
        raise LoweringError(path, "row reductions write a rows fragment (wgmma_rows or mma_rows)")


@printer("reduce")
def reduce(em, op, path):
    if op.op not in _REDUCE:
        raise LoweringError(path, "reduce op not set")
    fn, identity = _REDUCE[op.op]
    src = _target(em, op.src, path + ".src")
    dst = _target(em, op.dst, path + ".dst")
    w = em.w
    if isinstance(src, Fragment) and src.layout in _ROW_LANES and not src.is_rows:
        _rows_reduction(em, src, dst, path)
        with w.block(""):
            w.line("float t[%d];" % dst.count)
            w.line("for (int s = 0; s < %d; ++s) t[s] = %s;" % (dst.count, identity))
            w.line("#pragma unroll")
            slot = "%s::row_slot(i)" % src.cls
            w.line("for (int i = 0; i < %d; ++i) t[%s] = %s::apply(t[%s], %s);" % (src.count, slot, fn, slot, src.elem("i")))
            if op.scope != ir_pb2.SCOPE_THREAD:
                lo, hi = _ROW_LANES[src.layout]
                w.line("for (int s = 0; s < %d; ++s) t[s] = cake::warp::allreduce<%s, %d, %d>(t[s]);" % (dst.count, fn, lo, hi))
            if op.accumulate:  # after the lanes combine: every lane holds dst's value, which counts once
                w.line("for (int s = 0; s < %d; ++s) t[s] = %s::apply(cake::to_float(%s), t[s]);" % (dst.count, fn, dst.elem("s")))
            w.line("for (int s = 0; s < %d; ++s) %s = t[s];" % (dst.count, dst.elem("s")))
        return
    if not (isinstance(src, Fragment) and isinstance(dst, Fragment)):
        raise LoweringError(path, "reduce works on register fragments")
    # Per-thread data: reduce the axis in registers, then across lanes for warp scope.
    shape = src.shape
    if not 0 <= op.axis < len(shape):
        raise LoweringError(path, "axis %d of a rank-%d tile" % (op.axis, len(shape)))
    n = shape[op.axis]
    inner = math.prod(shape[op.axis + 1:])
    outer = math.prod(shape[:op.axis])
    with w.block(""):
        with w.block("for (int o = 0; o < %d; ++o) for (int q = 0; q < %d; ++q)" % (outer, inner)):
            w.line("float t = %s;" % identity)
            w.line("for (int k = 0; k < %d; ++k) t = %s::apply(t, cake::to_float(%s));" % (n, fn, src.elem("(o * %d + k) * %d + q" % (n, inner))))
            if op.scope == ir_pb2.SCOPE_WARP:
                w.line("t = cake::warp::allreduce<%s, 1, 32>(t);" % fn)
            elif op.scope not in (ir_pb2.SCOPE_THREAD, ir_pb2.SCOPE_LANES):
                raise LoweringError(path, "per-thread reductions combine across a thread or a warp")
            if op.accumulate:  # after the warp combines, so dst's value counts once
                w.line("t = %s::apply(cake::to_float(%s), t);" % (fn, dst.elem("o * %d + q" % inner)))
            w.line("%s = t;" % dst.elem("o * %d + q" % inner))


@printer("arg_reduce")
def arg_reduce(em, op, path):
    if op.op not in (ir_pb2.ARG_REDUCE_OP_ARGMIN, ir_pb2.ARG_REDUCE_OP_ARGMAX):
        raise LoweringError(path, "arg_reduce op not set")
    is_min = "true" if op.op == ir_pb2.ARG_REDUCE_OP_ARGMIN else "false"
    values = _target(em, op.values, path + ".values")
    indices = _target(em, op.indices, path + ".indices")
    w = em.w
    if op.src.region == op.values.region:
        # Merge running (value, index) pairs across the lanes sharing each row.
        if not isinstance(values, Fragment) or not values.is_rows:
            raise LoweringError(path, "a lanes merge works on rows fragments")
        lo, hi = _ROW_LANES[values.layout]
        with w.block("for (int s = 0; s < %d; ++s)" % values.count):
            w.line("float v = %s; int j = %s;" % (values.elem("s"), indices.elem("s")))
            w.line("cake::warp::arg_allreduce<%s, %d, %d>(v, j);" % (is_min, lo, hi))
            w.line("%s = v; %s = j;" % (values.elem("s"), indices.elem("s")))
        return
    src = _target(em, op.src, path + ".src")
    if isinstance(src, Fragment) and src.layout == ir_pb2.FRAGMENT_LAYOUT_ROW_PER_THREAD:
        _arg_reduce_own_row(em, op, src, values, indices, is_min, path)
        return
    _rows_reduction(em, src, values, path)
    if op.axis != 1:
        raise LoweringError(path, "row arg-reductions reduce axis 1 (columns)")
    better = "<" if is_min == "true" else ">"
    base = em.expr(op.index_base) if op.HasField("index_base") else "0"
    with w.block(""):
        if not op.accumulate:
            w.line("for (int s = 0; s < %d; ++s) { %s = %s; %s = 0x7fffffff; }" % (
                values.count, values.elem("s"), "INFINITY" if is_min == "true" else "-INFINITY", indices.elem("s")))
        w.line("const int cake_base = %s;" % base)
        # Columns arrive in increasing order within a thread, so a strict comparison keeps the
        # smallest index among equal values.
        w.line("#pragma unroll")
        with w.block("for (int i = 0; i < %d; ++i)" % src.count):
            w.line("const int s = %s::row_slot(i);" % src.cls)
            w.line("const float v = %s;" % src.elem("i"))
            with w.block("if (v %s %s)" % (better, values.elem("s"))):
                w.line("%s = v; %s = cake_base + %s::col(i);" % (values.elem("s"), indices.elem("s"), src.cls))
        if op.scope not in (ir_pb2.SCOPE_THREAD,):
            lo, hi = _ROW_LANES[src.layout]
            with w.block("for (int s = 0; s < %d; ++s)" % values.count):
                w.line("float v = %s; int j = %s;" % (values.elem("s"), indices.elem("s")))
                w.line("cake::warp::arg_allreduce<%s, %d, %d>(v, j);" % (is_min, lo, hi))
                w.line("%s = v; %s = j;" % (values.elem("s"), indices.elem("s")))


def _arg_reduce_own_row(em, op, src, values, indices, is_min, path):
    """Each thread holds a whole row: a sequential search of it, no lanes involved."""
    for frag, name in ((values, "values"), (indices, "indices")):
        if not isinstance(frag, Fragment) or not frag.one_per_row:
            raise LoweringError(path + "." + name, "a row_per_thread search writes one value per row (row_per_thread [rows])")
    if op.axis != 1 or len(src.shape) != 2:
        raise LoweringError(path, "row arg-reductions reduce axis 1 (columns) of a [rows, N] tile")
    w = em.w
    better = "<" if is_min == "true" else ">"
    with w.block(""):
        if not op.accumulate:
            w.line("%s = %s; %s = 0x7fffffff;" % (values.elem("0"), "INFINITY" if is_min == "true" else "-INFINITY", indices.elem("0")))
        w.line("const int cake_base = %s;" % (em.expr(op.index_base) if op.HasField("index_base") else "0"))
        w.line("#pragma unroll")
        with w.block("for (int i = 0; i < %d; ++i)" % src.count):
            with w.block("if (%s %s %s)" % (src.elem("i"), better, values.elem("0"))):
                w.line("%s = %s; %s = cake_base + i;" % (values.elem("0"), src.elem("i"), indices.elem("0")))


@printer("scan")
def scan(em, op, path):
    src = _target(em, op.src, path + ".src")
    dst = _target(em, op.dst, path + ".dst")
    w = em.w
    if isinstance(src, Fragment) and isinstance(dst, Fragment) and op.scope == ir_pb2.SCOPE_THREAD:
        shape = src.shape
        n = shape[op.axis]
        inner = math.prod(shape[op.axis + 1:])
        outer = math.prod(shape[:op.axis])
        with w.block("for (int o = 0; o < %d; ++o) for (int q = 0; q < %d; ++q)" % (outer, inner)):
            w.line("float run = 0.0f;")
            with w.block("for (int k = 0; k < %d; ++k)" % n):
                w.line("const int at = (o * %d + k) * %d + q;" % (n, inner))
                w.line("const float x = cake::to_float(%s);" % src.elem("at"))
                w.line("%s = %s;" % (dst.elem("at"), "run; run += x" if op.exclusive else "(run += x)"))
        return
    if isinstance(src, SharedAccess) and isinstance(dst, SharedAccess) and len(src.shape) == 2:
        if src.shape != dst.shape or op.axis not in (0, 1):
            raise LoweringError(path, "a shared scan writes a tile of its source's shape along axis 0 or 1")
        # One running sum per line across the axis, a line per thread: each element is read
        # once, so the scan may also run in place. A short line is read whole into registers
        # first: the reads then issue back to back instead of one shared-memory latency per
        # element (in place, the compiler cannot move a read above the previous element's write).
        n, lines = src.shape[op.axis], src.shape[1 - op.axis]
        rc = ["k", "l"] if op.axis == 0 else ["l", "k"]
        with w.block("for (int l = cake_thread; l < %d; l += %d)" % (lines, em.role.threads)):
            if n <= SCAN_LINE_IN_REGISTERS:
                w.line("float x[%d];" % n)
                w.line("#pragma unroll")
                w.line("for (int k = 0; k < %d; ++k) x[k] = cake::to_float(%s);" % (n, src.lvalue(rc)))
                w.line("float run = 0.0f;")
                w.line("#pragma unroll")
                with w.block("for (int k = 0; k < %d; ++k)" % n):
                    step = "run; run += x[k]" if op.exclusive else "(run += x[k])"
                    w.line("%s = cake::convert<%s>(%s);" % (dst.lvalue(rc), dst.ctype, step))
                return
            w.line("float run = 0.0f;")
            with w.block("for (int k = 0; k < %d; ++k)" % n):
                w.line("const float x = cake::to_float(%s);" % src.lvalue(rc))
                if not op.exclusive:
                    w.line("run += x;")
                w.line("%s = cake::convert<%s>(run);" % (dst.lvalue(rc), dst.ctype))
                if op.exclusive:
                    w.line("run += x;")
        return
    if isinstance(src, SharedAccess) and len(src.shape) == 2:
        # Each destination element of a fragment sums its prefix of the shared tile along the axis.
        def body(i, coords, lvalue, ctype):
            at = coords[op.axis]
            bound = "k < (%s)" % at if op.exclusive else "k <= (%s)" % at
            rc = ["k", coords[1]] if op.axis == 0 else [coords[0], "k"]
            w.line("float run = 0.0f;")
            w.line("for (int k = 0; %s; ++k) run += cake::to_float(%s);" % (bound, src.lvalue(rc)))
            w.line("%s = cake::convert<%s>(run);" % (lvalue, ctype))

        _for_each(em, dst, lambda i, c, lv, ct: _scoped(w, body, i, c, lv, ct))
        return
    raise LoweringError(path, "scan works within per-thread fragments (scope thread) or reads a 2-D shared tile")


@printer("tri_solve")
def tri_solve(em, op, path):
    a = SharedAccess(em, op.a, path + ".a")
    b = SharedAccess(em, op.b, path + ".b") if op.HasField("b") else None
    into_registers = op.x.region in em.ctx.registers
    if into_registers:
        # Substitution needs whole columns: solve into the lowering's scratch tile, then
        # each thread picks its fragment's elements out of it.
        frag = Fragment(em.ctx.registers[op.x.region])
        x = ScratchTile(em.ctx.scratch[em.role.role.name], frag.shape)
    else:
        x = SharedAccess(em, op.x, path + ".x")
    c = a.shape[0]
    if a.shape != [c, c] or x.shape[0] != c:
        raise LoweringError(path, "tri_solve needs a square A [C, C] and x [C, N]")
    n = x.shape[1]
    w = em.w
    if into_registers and b is None and op.lower and c % INVERSE_BLOCK == 0 and n == c:
        _blocked_lower_inverse(em, op, a, x, c)
    else:
        _substitution(em, op, a, b, x, c, n)
    if into_registers:
        hw_id = em.ctx.role_barriers[em.role.role.name]
        w.line("cake::block::named_sync(%d, %d);  // scratch columns complete" % (hw_id, em.role.threads))
        _for_each(em, frag, lambda i, cc, lv, ct: w.line("%s = %s;" % (lv, x.lvalue(cc))))
        w.line("cake::block::named_sync(%d, %d);  // scratch free for reuse" % (hw_id, em.role.threads))


INVERSE_BLOCK = 16  # rows of a diagonal block of the blocked inverse


def _role_sync(em, why):
    em.w.line("cake::block::named_sync(%d, %d);  // %s" % (em.ctx.role_barriers[em.role.role.name], em.role.threads, why))


def _blocked_lower_inverse(em, op, a, x, c):
    """x = A^-1 (into the scratch tile) for a lower-triangular A [C, C], in blocks of 16 rows, every stage
    over all the role's threads.

    The inverse X of a block lower-triangular A has diagonal blocks X_II = A_II^-1 and, for
    I > J, X_IJ = -X_II sum_{K=J}^{I-1} A_IK X_KJ, which needs only blocks nearer the
    diagonal. So: each diagonal block by substitution (a column per thread, 16 rows in
    registers, upper blocks zeroed), then for each distance d = I - J the blocks at that
    distance in two element-parallel products (M = sum_K A_IK X_KJ into X_IJ's place,
    then X_IJ = -X_II M). The critical path is 16 + 16 * (C / 16) dependent steps instead
    of C * C / 2 for a column-by-column substitution.
    """
    w, t, nb, blk = em.w, em.role.threads, c // INVERSE_BLOCK, INVERSE_BLOCK
    A = lambda i, k: "cake::to_float(%s)" % a.lvalue([i, k])  # noqa: E731
    X = x.lvalue
    with w.block("for (int j = cake_thread; j < %d; j += %d)" % (c, t)):
        w.line("const int i0 = (j / %d) * %d;" % (blk, blk))
        w.line("float col[%d];" % blk)
        w.line("#pragma unroll")
        with w.block("for (int r = 0; r < %d; ++r)" % blk):
            w.line("float acc = (i0 + r == j) ? 1.0f : 0.0f;")
            w.line("#pragma unroll")
            w.line("for (int k = 0; k < r; ++k) acc -= %s * col[k];" % A("i0 + r", "i0 + k"))
            w.line("col[r] = %s;" % ("acc" if op.unit_diagonal else "__fdiv_rn(acc, %s)" % A("i0 + r", "i0 + r")))
        w.line("for (int i = 0; i < i0; ++i) %s = 0.0f;" % X(["i", "j"]))
        w.line("#pragma unroll")
        w.line("for (int r = 0; r < %d; ++r) %s = col[r];" % (blk, X(["i0 + r", "j"])))
    _role_sync(em, "diagonal blocks inverted")
    for d in range(1, nb):
        elems = (nb - d) * blk * blk  # the blocks at distance d, element by element (column fastest)
        per = -(-elems // t)
        loop = "for (int s = 0; s < %d; ++s)" % per

        def element(body):
            w.line("#pragma unroll")
            with w.block(loop):
                w.line("const int e = cake_thread + s * %d;" % t)
                with w.block("if (e < %d)" % elems):
                    w.line("const int I = %d + e / %d, J = I - %d;" % (d, blk * blk, d))
                    w.line("const int r = I * %d + (e / %d) %% %d, q = J * %d + e %% %d;" % (blk, blk, blk, blk, blk))
                    body()

        with w.block(""):
            w.line("float m[%d];" % per)

            def block_sum():
                w.line("float acc = 0.0f;")
                w.line("for (int k = J * %d; k < I * %d; ++k) acc += %s * cake::to_float(%s);" % (blk, blk, A("r", "k"), X(["k", "q"])))
                w.line("m[s] = acc;")

            element(block_sum)
            element(lambda: w.line("%s = m[s];" % X(["r", "q"])))
            _role_sync(em, "block sums of distance %d stored" % d)

            def times_diagonal():
                w.line("float acc = 0.0f;")
                w.line("#pragma unroll")
                w.line("for (int k = 0; k < %d; ++k) acc -= cake::to_float(%s) * cake::to_float(%s);"
                       % (blk, X(["r", "I * %d + k" % blk]), X(["I * %d + k" % blk, "q"])))
                w.line("m[s] = acc;")

            element(times_diagonal)
            _role_sync(em, "block products of distance %d read" % d)
            element(lambda: w.line("%s = m[s];" % X(["r", "q"])))
            _role_sync(em, "blocks of distance %d stored" % d)


def _substitution(em, op, a, b, x, c, n):
    """Column-by-column substitution: one right-hand side per thread, rows in order (lower) or reverse."""
    w = em.w
    with w.block("for (int j = cake_thread; j < %d; j += %d)" % (n, em.role.threads)):
        order = "int i = 0; i < %d; ++i" % c if op.lower else "int i = %d; i >= 0; --i" % (c - 1)
        with w.block("for (%s)" % order):
            rhs = "cake::to_float(%s)" % b.lvalue(["i", "j"]) if b else "(i == j ? 1.0f : 0.0f)"
            w.line("float acc = %s;" % rhs)
            krange = "int k = 0; k < i; ++k" if op.lower else "int k = i + 1; k < %d; ++k" % c
            w.line("for (%s) acc -= cake::to_float(%s) * cake::to_float(%s);" % (krange, a.lvalue(["i", "k"]), x.lvalue(["k", "j"])))
            val = "acc" if op.unit_diagonal else "__fdiv_rn(acc, cake::to_float(%s))" % a.lvalue(["i", "i"])
            w.line("%s = cake::convert<%s>(%s);" % (x.lvalue(["i", "j"]), x.ctype, val))


class ScratchTile:
    """A lowering-owned f32 shared tile (compiler/ir/smem_layout.py reserves it)."""

    ctype = "float"

    def __init__(self, offset_and_cols, shape):
        self.offset, self.cols = offset_and_cols
        self.shape = list(shape)

    def lvalue(self, coords):
        return "reinterpret_cast<float*>(cake_smem + %d)[(%s) * %d + (%s)]" % (self.offset, coords[0], self.cols, coords[1])


def _scoped(w, body, *args):
    with w.block(""):
        body(*args)


_ATOMIC = {ir_pb2.ATOMIC_OP_ADD: "atomic_add", ir_pb2.ATOMIC_OP_MIN: "atomic_min", ir_pb2.ATOMIC_OP_MAX: "atomic_max"}


@printer("atomic")
def atomic(em, op, path):
    if op.op not in _ATOMIC:
        raise LoweringError(path, "atomic op not set")
    src = _target(em, op.src, path + ".src")
    dst = GlobalAccess(em, op.dst, path + ".dst")
    index = _target(em, op.index, path + ".index") if op.HasField("index") else None
    aggregated = op.aggregation == ir_pb2.AGGREGATION_WARP
    if aggregated and op.op != ir_pb2.ATOMIC_OP_ADD:
        raise LoweringError(path, "warp aggregation combines additions only")
    w = em.w
    rank = len(dst.origin)

    def body(i, coords, lvalue, ctype):
        full = list(coords)
        if index is not None:
            idx = index.elem(i) if isinstance(index, Fragment) else index.lvalue([coords[0]])
            # Row p of src goes to destination row index[p] along index_axis.
            axis = op.index_axis
            lead = rank - len(coords)
            tgt = dst.origin[:]
            for k, cexp in enumerate(coords):
                tgt[lead + k] = "(%s) + (%s)" % (tgt[lead + k], cexp)
            tgt[axis] = "(%s)" % idx
            ptr = "&%s[%s]" % (dst.ptr, _linear(dst, tgt))
        else:
            ptr = "&%s" % dst.lvalue(full)
        value = "cake::to_float(%s)" % lvalue
        if dst.ctype == "int32_t":
            value = "int32_t(%s)" % value
        if aggregated:
            # A fragment loop is uniform across the warp, so every lane reaches the match.
            w.line("cake::global::atomic_add_aggregated(%s, %s(%s), (unsigned long long)(%s - %s), true);"
                   % (ptr, dst.ctype, value, ptr, dst.ptr))
        else:
            w.line("cake::global::%s(%s, %s);" % (_ATOMIC[op.op], ptr, value))

    if aggregated and not isinstance(src, Fragment):
        # Every lane must reach the warp-collective match: pad the loop to whole warps.
        cols = src.shape[-1]
        total = src.elements
        padded = (total + 31) // 32 * 32 if em.role.threads >= 32 else total
        with w.block("for (int e0 = cake_thread - cake_lane; e0 < %d; e0 += %d)" % (padded, em.role.threads)):
            w.line("const int e = e0 + cake_lane;")
            w.line("const bool active = e < %d;" % total)
            coords = ["(e / %d)" % cols, "(e %% %d)" % cols] if len(src.shape) > 1 else ["e"]
            lv = src.lvalue(["(active ? %s : 0)" % c for c in coords])
            tgt = dst.origin[:]
            lead = rank - len(coords)
            for k, cexp in enumerate(coords):
                tgt[lead + k] = "(%s) + (active ? %s : 0)" % (tgt[lead + k], cexp)
            if index is not None:
                idx = index.lvalue(["(active ? %s : 0)" % coords[0]]) if not isinstance(index, Fragment) else index.elem("0")
                tgt[op.index_axis] = "(%s)" % idx
            w.line("const long long cake_at = %s;" % _linear(dst, tgt))
            w.line("cake::global::atomic_add_aggregated(&%s[cake_at], active ? %s(cake::to_float(%s)) : %s(0), "
                   "(unsigned long long)cake_at, active);" % (dst.ptr, dst.ctype, lv, dst.ctype))
        return
    _for_each(em, src, body)


def _linear(dst, full):
    idx = "(long long)(%s)" % full[0]
    for d, c in zip(dst.dims[1:], full[1:]):
        idx = "(%s * (%s) + (%s))" % (idx, d, c)
    return idx
