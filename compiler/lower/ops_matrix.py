"""Printers for matrix ops: wgmma (sm_90a), mma.sync (sm_80+), tcgen05 (sm_100a).

An Mma covers a whole tile product; lowering splits it into k16 instructions (and, for
wgmma, into instructions of the Mma's `instr_shape` N when it gives one) and derives each instruction's operand addresses from the shared tiles' panel layout:
element (r, k) of a K-major [R, C] tile with swizzle span S lives in panel k*es / S at
byte r*S + (k*es % S) of that panel. wgmma and tcgen05 read operands through matrix
descriptors (start address, leading/stride byte offsets, swizzle mode); mma.sync reads
registers loaded by ldmatrix.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import shapes
from compiler.ir.expr import constant
from compiler.lower.context import LoweringError
from compiler.lower.fragments import Fragment
from compiler.lower.op_printers import printer
from compiler.lower.ops_sync import barrier_pointer

_DESC_SWIZZLE = {0: "None", 32: "B32", 64: "B64", 128: "B128"}
_OPERAND_DTYPES = {ir_pb2.DTYPE_BF16: "bf16", ir_pb2.DTYPE_F16: "f16"}


def _scale_d(em, op):
    """C++ of an MMA's accumulate flag as 0 or 1 (a constant when the IR's is)."""
    if not op.HasField("accumulate"):
        return "1"
    value = constant(op.accumulate)
    return "(%s) ? 1 : 0" % em.expr(op.accumulate) if value is None else str(int(value != 0))


class SharedOperand:
    """A shared tile read by a matrix instruction: base pointer and per-k16 byte offsets."""

    def __init__(self, em, ref, path, major=ir_pb2.MAJOR_K_UNSPECIFIED):
        ctx = em.ctx
        if ref.region not in ctx.shared:
            raise LoweringError(path, "matrix operand %r is not in shared memory" % ref.region)
        sr = ctx.shared[ref.region]
        self.sr = sr
        shape = list(sr.region.shape)
        if len(shape) != 2:
            raise LoweringError(path, "matrix operand %r must be a 2-D tile" % ref.region)
        self.tile_rows, self.tile_cols = shape
        stage = em.expr(ref.stage) if ref.HasField("stage") else "0"
        starts = [em.expr(w.start) for w in ref.window]
        self.rows, self.cols = shapes.tile_shape(ref, sr.region)
        self.mn_major = major == ir_pb2.MAJOR_MN
        span = sr.span or 0
        self.span = span
        self.mn, self.k = shapes.mma_dims((self.rows, self.cols), major)
        r0 = starts[0] if starts else "0"
        c0 = starts[1] if starts else "0"
        for s, w in zip(("row", "column"), ref.window):
            v = constant(w.start)
            if v is not None and v % (8 if s == "row" else 16):
                raise LoweringError(path, "operand window %s start %d is not a multiple of %d" % (s, v, 8 if s == "row" else 16))
        self.stage = stage
        self.base = sr.address(stage)
        self.r0, self.c0 = r0, c0

    def byte_offset(self, r, c):
        """Python-side byte offset of static element (r, c) relative to the window origin, unswizzled."""
        es, span = self.sr.esize, self.span
        if not span:
            return (r * self.tile_cols + c) * es
        panel_cols = span // es
        return (c // panel_cols) * self.tile_rows * span + r * span + (c % panel_cols) * es

    def origin(self):
        """C++ byte offset of the window origin (its rows/cols starts are multiples of 8/16)."""
        es, span = self.sr.esize, self.span
        if not span:
            return "((%s) * %d + (%s)) * %d" % (self.r0, self.tile_cols, self.c0, es)
        panel_cols = span // es
        return "((%s) / %d) * %d + (%s) * %d + ((%s) %% %d) * %d" % (
            self.c0, panel_cols, self.tile_rows * span, self.r0, span, self.c0, panel_cols, es)

    def k_step_offset(self, j):
        """Byte offset of the j-th k16 slab from the window origin."""
        return self.byte_offset(16 * j, 0) if self.mn_major else self.byte_offset(0, 16 * j)


def _wgmma(em, op, path):
    ctx = em.ctx
    a = SharedOperand(em, op.a, path + ".a", op.a_major)
    b = SharedOperand(em, op.b, path + ".b", op.b_major)
    if op.acc.region not in ctx.registers:
        raise LoweringError(path + ".acc", "wgmma accumulates into a register region")
    acc = Fragment(ctx.registers[op.acc.region])
    if acc.layout != ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC:
        raise LoweringError(path + ".acc", "wgmma accumulators need the wgmma_acc layout")
    n = acc.shape[1]
    if a.mn != 64 or b.mn != n or a.k != b.k or a.k % 16:
        raise LoweringError(
            path, "wgmma shapes disagree: A is %dx%d, B is %dx%d, acc is 64x%d" % (a.mn, a.k, b.mn, b.k, n))
    if n % 16 or n > 256:
        raise LoweringError(path, "wgmma N=%d: lowering provides N in 16..256 step 16" % n)
    step = op.instr_shape[1] if op.instr_shape else n  # each instruction's N (CAKE-STRUCT-027 checks the shape)
    if n % step or step % 16 or (b.mn_major and step % (b.span // b.sr.esize)):
        raise LoweringError(path, "wgmma instr_shape N=%d does not tile the accumulator's N=%d" % (step, n))
    for opnd, name in ((a, "a"), (b, "b")):
        if not opnd.span:
            raise LoweringError(path + "." + name, "wgmma operands need a swizzled shared tile (32b, 64b or 128b)")
    dtype = _OPERAND_DTYPES.get(a.sr.region.dtype)
    if dtype is None or b.sr.region.dtype != a.sr.region.dtype:
        raise LoweringError(path, "wgmma operands must both be bf16 or both f16")
    w = em.w
    with w.block(""):
        w.line("const int cake_scale_d = %s;" % _scale_d(em, op))
        for name, opnd in (("a", a), ("b", b)):
            lbo = opnd.tile_rows * opnd.span if opnd.mn_major else 16
            w.line(
                "const uint64_t cake_desc_%s = cake::wgmma::make_desc(%s + %s, %d, %d, cake::wgmma::Swizzle::%s);"
                % (name, opnd.base, opnd.origin(), lbo, 8 * opnd.span, _DESC_SWIZZLE[opnd.span])
            )
        if em.inflight is not None and acc.region.name not in em.inflight:
            # Pin earlier reads of the accumulator before the wgmma that overwrites it.
            w.line("cake::wgmma::fence_operands(%s.d);" % acc.name)
        w.line("cake::wgmma::fence();")
        for j in range(a.k // 16):
            for n0 in range(0, n, step):  # columns n0 .. n0 + step: accumulator registers n0 / 2 .., rows n0 of B
                d = "%s.d" % acc.name if step == n else "*reinterpret_cast<float(*)[%d]>(&%s.d[%d])" % (
                    step // 2, acc.name, n0 // 2)
                b_off = b.k_step_offset(j) + (b.byte_offset(0, n0) if b.mn_major else b.byte_offset(n0, 0))
                w.line(
                    "cake::wgmma::mma_%s_m64n%dk16<%d, %d>(%s, cake_desc_a + %d, cake_desc_b + %d, %s);"
                    % (dtype, step, int(a.mn_major), int(b.mn_major), d,
                       a.k_step_offset(j) >> 4, b_off >> 4, "cake_scale_d" if j == 0 else "1")
                )
        w.line("cake::wgmma::commit();")
    if em.inflight is not None:
        em.inflight.append(acc.region.name)


def _ldmatrix_address(opnd, row, col):
    """C++ shared address of element (row, col) of a matrix operand tile (window-relative)."""
    sr = opnd.sr
    return "%s + cake::smem::offset<%d, %d, %d, %d>((%s) + (%s), (%s) + (%s))" % (
        sr.address(opnd.stage),
        opnd.tile_rows, opnd.tile_cols, sr.esize, opnd.span, opnd.r0, row, opnd.c0, col)


def _mma_sync(em, op, path):
    ctx = em.ctx
    if op.acc.region not in ctx.registers:
        raise LoweringError(path + ".acc", "mma.sync accumulates into a register region")
    acc = Fragment(ctx.registers[op.acc.region])
    if acc.layout != ir_pb2.FRAGMENT_LAYOUT_MMA_ACC:
        raise LoweringError(path + ".acc", "mma.sync accumulators need the mma_acc layout")
    mi, ni = acc.shape[0] // 16, acc.shape[1] // 8
    w = em.w
    dt = "cake::bf16" if ctx.shared.get(op.a.region) and ctx.shared[op.a.region].region.dtype == ir_pb2.DTYPE_BF16 else "cake::f16"
    a_reg, b_reg = op.a.region in ctx.registers, op.b.region in ctx.registers
    with w.block(""):
        if op.HasField("accumulate"):
            with w.block("if (!(%s))" % em.expr(op.accumulate)):
                w.line("for (int i = 0; i < %d; ++i) %s.d[i] = 0.0f;" % (acc.count, acc.name))
        if a_reg and b_reg:
            fa, fb = Fragment(ctx.registers[op.a.region]), Fragment(ctx.registers[op.b.region])
            ki = fa.shape[1] // 16
            with w.block("for (int kk = 0; kk < %d; ++kk)" % ki):
                with w.block("for (int m = 0; m < %d; ++m)" % mi):
                    with w.block("for (int n = 0; n < %d; ++n)" % ni):
                        w.line("cake::warp::mma_m16n8k16<%s>(*reinterpret_cast<float(*)[4]>(&%s.d[(m * %d + n) * 4]), "
                               "*reinterpret_cast<const uint32_t(*)[4]>(&%s.r[(m * %d + kk) * 4]), "
                               "*reinterpret_cast<const uint32_t(*)[2]>(&%s.r[(n * %d + kk) * 2]));"
                               % (dt, acc.name, ni, fa.name, ki, fb.name, ki))
            return
        if a_reg or b_reg:
            raise LoweringError(path, "mma.sync operands are both shared tiles or both register fragments")
        a = SharedOperand(em, op.a, path + ".a")
        b = SharedOperand(em, op.b, path + ".b")
        if a.k != b.k or a.k % 16 or a.mn != acc.shape[0] or b.mn != acc.shape[1] or ni % 2:
            raise LoweringError(path, "mma.sync shapes disagree: A %dx%d, B %dx%d, acc %s" % (a.mn, a.k, b.mn, b.k, acc.shape))
        with w.block("for (int kk = 0; kk < %d; ++kk)" % (a.k // 16)):
            w.line("uint32_t fa[%d][4], fb[%d][4];" % (mi, ni // 2))
            with w.block("for (int m = 0; m < %d; ++m)" % mi):
                w.line("cake::warp::ldmatrix_x4(fa[m], %s);" % _ldmatrix_address(a, "m * 16 + (cake_lane & 15)", "kk * 16 + (cake_lane >> 4) * 8"))
            with w.block("for (int n = 0; n < %d; ++n)" % (ni // 2)):
                w.line("cake::warp::ldmatrix_x4(fb[n], %s);" % _ldmatrix_address(
                    b, "n * 16 + (cake_lane >> 4) * 8 + (cake_lane & 7)", "kk * 16 + ((cake_lane >> 3) & 1) * 8"))
            with w.block("for (int m = 0; m < %d; ++m)" % mi):
                with w.block("for (int n = 0; n < %d; ++n)" % ni):
                    w.line("const uint32_t bn[2] = {fb[n >> 1][(n & 1) * 2], fb[n >> 1][(n & 1) * 2 + 1]};")
                    w.line("cake::warp::mma_m16n8k16<%s>(*reinterpret_cast<float(*)[4]>(&%s.d[(m * %d + n) * 4]), fa[m], bn);"
                           % (dt, acc.name, ni))


def _tcgen05(em, op, path):
    ctx = em.ctx
    a = SharedOperand(em, op.a, path + ".a", op.a_major)
    b = SharedOperand(em, op.b, path + ".b", op.b_major)
    slot = "__tmem_" + op.acc.region
    if slot not in ctx.shared:
        raise LoweringError(path + ".acc", "tcgen05 accumulates into a tensor-memory region")
    if a.k != b.k or a.k % 16:
        raise LoweringError(path, "tcgen05 operand K extents disagree (%d vs %d)" % (a.k, b.k))
    bf16 = "true" if a.sr.region.dtype == ir_pb2.DTYPE_BF16 else "false"
    w = em.w
    with w.block(""):
        w.line("const uint32_t cake_tmem = *reinterpret_cast<const uint32_t*>(cake_smem + %d);" % ctx.shared[slot].offset)
        w.line("const int cake_scale_d = %s;" % _scale_d(em, op))
        for name, opnd in (("a", a), ("b", b)):
            w.line("const uint64_t cake_desc_%s = cake::tcgen05::make_desc(%s + %s, %d, %d, %d);"
                   % (name, opnd.base, opnd.origin(), 16, 8 * opnd.span, opnd.span))
        w.line("constexpr uint32_t cake_idesc = cake::tcgen05::idesc_f16<%s>(%d, %d);" % (bf16, a.mn, b.mn))
        for j in range(a.k // 16):
            w.line("cake::tcgen05::mma_f16(cake_tmem, cake_desc_a + %d, cake_desc_b + %d, cake_idesc, %s);"
                   % (a.k_step_offset(j) >> 4, b.k_step_offset(j) >> 4, "cake_scale_d" if j == 0 else "1"))


@printer("mma")
def mma(em, op, path):
    kind = op.kind
    if kind == ir_pb2.MMA_KIND_WGMMA:
        _wgmma(em, op, path)
    elif kind == ir_pb2.MMA_KIND_MMA_SYNC:
        _mma_sync(em, op, path)
    elif kind == ir_pb2.MMA_KIND_TCGEN05:
        _tcgen05(em, op, path)
    else:
        raise LoweringError(path, "mma kind not set")


@printer("mma_wait")
def mma_wait(em, op, path):
    # Fence (pin after the wait) only the accumulators this wait retires: touching one whose
    # wgmma is still in flight makes ptxas serialize every wgmma. Which groups are retired
    # comes from the role's static wgmma order (see Emitter.inflight); when it is unknown,
    # nothing is fenced and ptxas orders each read after its group's retirement itself.
    if em.ctx.target.has("wgmma"):
        em.w.line("cake::wgmma::wait<%d>();" % op.pending)
        if em.inflight is not None:
            keep = len(em.inflight) - op.pending if op.pending else len(em.inflight)
            retired = em.inflight[:max(0, keep)]
            em.inflight = em.inflight[max(0, keep):]
            for name in dict.fromkeys(retired):
                if name not in em.inflight:
                    em.w.line("cake::wgmma::fence_operands(r_%s.d);" % name)


@printer("mma_commit")
def mma_commit(em, op, path):
    em.w.line("cake::tcgen05::commit(%s);" % barrier_pointer(em, op.barrier, path + ".barrier"))


@printer("tmem_load")
def tmem_load(em, op, path):
    slot = "__tmem_" + op.src.region
    if slot not in em.ctx.shared or op.dst.region not in em.ctx.registers:
        raise LoweringError(path, "tmem_load reads a tensor-memory region into a register region")
    dst = Fragment(em.ctx.registers[op.dst.region])
    if dst.layout != ir_pb2.FRAGMENT_LAYOUT_ROW_PER_THREAD or dst.count % 8:
        raise LoweringError(path + ".dst", "tmem_load fills a row_per_thread fragment of a multiple of 8 columns")
    w = em.w
    with w.block(""):
        w.line("const uint32_t cake_tmem = *reinterpret_cast<const uint32_t*>(cake_smem + %d);" % em.ctx.shared[slot].offset)
        with w.block("for (int c = 0; c < %d; c += 8)" % dst.count):
            w.line("cake::tcgen05::load_x8(*reinterpret_cast<float(*)[8]>(&%s[c]), cake_tmem + (uint32_t((cake_warp & 3) * 32) << 16) + c);" % dst.name)


def load_operand_fragment(em, src, dst, transpose, path):
    """ldmatrix.x4 loads of a shared tile into an MMA_A / MMA_B fragment."""
    if dst.region not in em.ctx.registers:
        raise LoweringError(path + ".dst", "ldmatrix fills a register region")
    frag = Fragment(em.ctx.registers[dst.region])
    opnd = SharedOperand(em, src, path + ".src")
    fn = "ldmatrix_x4_trans" if transpose else "ldmatrix_x4"
    w = em.w
    if frag.layout == ir_pb2.FRAGMENT_LAYOUT_MMA_A:
        mi, ki = frag.shape[0] // 16, frag.shape[1] // 16
        with w.block("for (int m = 0; m < %d; ++m) for (int kk = 0; kk < %d; ++kk)" % (mi, ki)):
            w.line("cake::warp::%s(*reinterpret_cast<uint32_t(*)[4]>(&%s.r[(m * %d + kk) * 4]), %s);" % (
                fn, frag.name, ki, _ldmatrix_address(opnd, "m * 16 + (cake_lane & 15)", "kk * 16 + (cake_lane >> 4) * 8")))
    elif frag.layout == ir_pb2.FRAGMENT_LAYOUT_MMA_B:
        nj, ki = frag.shape[0] // 8, frag.shape[1] // 16
        if nj % 2:
            raise LoweringError(path + ".dst", "MMA_B fragments load in pairs of n8 blocks")
        with w.block("for (int n = 0; n < %d; n += 2) for (int kk = 0; kk < %d; ++kk)" % (nj, ki)):
            w.line("uint32_t t[4];")
            w.line("cake::warp::%s(t, %s);" % (fn, _ldmatrix_address(
                opnd, "n * 8 + (cake_lane >> 4) * 8 + (cake_lane & 7)", "kk * 16 + ((cake_lane >> 3) & 1) * 8")))
            w.line("%s.r[(n * %d + kk) * 2] = t[0]; %s.r[(n * %d + kk) * 2 + 1] = t[1];" % (frag.name, ki, frag.name, ki))
            w.line("%s.r[((n + 1) * %d + kk) * 2] = t[2]; %s.r[((n + 1) * %d + kk) * 2 + 1] = t[3];" % (frag.name, ki, frag.name, ki))
    else:
        raise LoweringError(path + ".dst", "ldmatrix fills mma_a or mma_b fragments")


def store_accumulator_fragment(em, src, dst, transpose, path):
    """stmatrix of an accumulator fragment (converted to 16-bit) into a shared tile."""
    if src.region not in em.ctx.registers:
        raise LoweringError(path + ".src", "stmatrix stores a register region")
    frag = Fragment(em.ctx.registers[src.region])
    opnd = SharedOperand(em, dst, path + ".dst")
    if frag.layout != ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC:
        raise LoweringError(path + ".src", "stmatrix stores wgmma_acc fragments")
    cvt = "__floats2bfloat162_rn" if opnd.sr.region.dtype == ir_pb2.DTYPE_BF16 else "__floats2half2_rn"
    fn = "stmatrix_x4_trans" if transpose else "stmatrix_x4"
    w = em.w
    # Each x4 covers 16 rows x 16 columns of the warp's slice: values 8c..8c+7 of the thread.
    with w.block("for (int c = 0; c < %d; ++c)" % (frag.shape[1] // 16)):
        w.line("uint32_t t[4];")
        with w.block("for (int q = 0; q < 4; ++q)"):
            w.line("auto h = %s(%s.d[8 * c + 2 * q], %s.d[8 * c + 2 * q + 1]);" % (cvt, frag.name, frag.name))
            w.line("t[q] = *reinterpret_cast<uint32_t*>(&h);")
        w.line("cake::warp::%s(%s, t);" % (fn, _ldmatrix_address(
            opnd, "16 * (cake_warp & 3) + (cake_lane & 7) + ((cake_lane >> 3) & 1) * 8", "c * 16 + (cake_lane >> 4) * 8")))
