"""Emit the CUDA C++ of a kernel: signature, shared-memory carve-up, role dispatch, bodies.

Ops are printed by the table in ops.py (one function per op kind, grouped by family in
ops_*.py). Every block of generated code starts with a comment naming the IR path it
comes from, so a reader (or an nvcc error) can be traced back to the schedule.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import abi, smem_layout
from compiler.ir.scalars import role_scalars
from compiler.lower import ops
from compiler.lower.cexpr import ExprError, cexpr, ident
from compiler.lower.context import DTYPE_CTYPE, LoweringError, dtype_name
from compiler.lower.fragments import declare_fragment
from compiler.lower.writer import Writer
from compiler.targets import registers

INT32_MAX = (1 << 31) - 1

class Emitter:
    """Prints ops of one role into a Writer; tracks loop variables' non-negativity."""

    def __init__(self, ctx, writer):
        self.ctx = ctx
        self.w = writer
        self.role = None
        self.scope = {}
        self.scalars = frozenset()  # the role's one-element register regions, usable in expressions
        self.path = "kernel"  # the IR path of the op being printed (where an expression error is located)
        # Accumulators of this role's wgmma groups still in flight, oldest first, as far as
        # program order tells; None once control flow makes it path-dependent.
        self.inflight = []

    def expr(self, e):
        try:
            return cexpr(e, self.scope, self.scalars)
        except ExprError as error:
            raise LoweringError(self.path, str(error), "give every expression of this op a value") from None

    def ops(self, op_list, path):
        outer = self.path
        for i, op in enumerate(op_list):
            kind = op.WhichOneof("kind")
            op_path = "%s[%d].%s" % (path, i, kind) if kind else "%s[%d]" % (path, i)
            if kind is None:
                raise LoweringError("%s[%d]" % (path, i), "empty op")
            printer = ops.PRINTERS.get(kind)
            if printer is None:
                raise LoweringError(op_path, "lowering has no printer for op %r" % kind)
            self.w.comment(op_path)
            self.path = op_path
            printer(self, getattr(op, kind), op_path)
        self.path = outer


def _symbol_ctype(sym):
    return "int" if sym.max <= INT32_MAX else "long long"


def _signature(ctx):
    """The parameter list, from the kernel ABI (compiler/ir/abi.py) the launch metadata also reads."""
    args = []
    for a in abi.arguments(ctx.kernel, ctx.tensor_maps):
        if a.kind == abi.POINTER:
            args.append("%s%s* __restrict__ %s" % ("const " if a.read_only else "", DTYPE_CTYPE[a.dtype], ident(a.name)))
        elif a.kind == abi.SCALAR:
            args.append("%s %s" % (DTYPE_CTYPE[a.dtype], ident(a.name)))
        elif a.kind == abi.SYMBOL:
            args.append("long long %s_arg" % ident(a.source))  # the prologue reads it by this name
        else:
            args.append("const __grid_constant__ CUtensorMap %s" % a.name)
    return args


def _prologue(ctx, w):
    align = smem_layout.TILE_ALIGN
    w.line("extern __shared__ __align__(%d) uint8_t cake_smem_raw[];" % align)
    w.comment("Align the carve-up to %d B: swizzled tiles address their pattern from the tile base." % align)
    w.line("uint8_t* const cake_smem = cake_smem_raw + ((%du - (cake::smem_addr(cake_smem_raw) & %du)) & %du);"
           % (align, align - 1, align - 1))
    for s in ctx.kernel.contract.symbols:
        if s.HasField("value"):
            w.line("constexpr %s %s = %d;" % (_symbol_ctype(s), ident(s.name), s.value))
        else:
            w.line("const %s %s = static_cast<%s>(%s_arg);" % (_symbol_ctype(s), ident(s.name), _symbol_ctype(s), ident(s.name)))
    if ctx.kernel.contract.symbols:
        # A symbol only the contract or the host uses is still declared: keep nvcc quiet about it.
        w.line(" ".join("(void)%s;" % ident(s.name) for s in ctx.kernel.contract.symbols))
    for name, sr in ctx.shared.items():
        if name.startswith("__tmem_"):
            continue
        r = sr.region
        w.comment(
            "region %s: %s %s x %d stage(s), swizzle %dB, %d B per stage at offset %d"
            % (name, dtype_name(r.dtype), list(r.shape), max(1, r.stages), sr.span, sr.stage_bytes, sr.offset)
        )
    for name, (offset, b) in ctx.mbarriers.items():
        w.line("uint64_t* const bar_%s = reinterpret_cast<uint64_t*>(cake_smem + %d);  // %d mbarrier(s)" % (name, offset, max(1, b.count)))
    for t in ctx.tensor_maps:
        w.line("if (threadIdx.x == 0) cake::tma::prefetch(&%s);" % t.arg)


def _check_register_budgets(ctx):
    """Role budgets are values setmaxnreg takes, and fit the block's allocation at launch
    (compiler/targets/registers.py: the pool), within which setmaxnreg moves registers;
    asking for more makes setmaxnreg.inc wait forever, so such budgets are refused here
    rather than hang on the GPU."""
    if not ctx.target.has("setmaxnreg"):
        return
    legal = registers.setmaxnreg(ctx.target.name)
    for info in ctx.roles:
        if info.role.registers and not legal.legal(info.role.registers):
            raise LoweringError("kernel.roles[%d]" % info.index, "setmaxnreg takes multiples of %d in [%d, %d], not %d"
                                % (legal.step, legal.minimum, legal.maximum, info.role.registers))
    pool = registers.pool(ctx.kernel, ctx.limits, ctx.spans)
    total = sum(registers.pool_use(ctx.kernel, ctx.limits, ctx.spans))
    if total > pool:
        raise LoweringError(
            "kernel.roles",
            "role register budgets need %d registers but the block is allocated %d at launch (%d threads x %d); "
            "setmaxnreg.inc would wait forever" % (total, pool, ctx.threads, ctx.entry_registers),
            "lower the consumer budgets or the producer's further, so that sum(budget x threads) <= %d" % pool,
        )


def _role(ctx, em, info):
    w = em.w
    role = info.role
    path = "kernel.roles[%d]" % info.index
    lo, hi = info.first_warp, info.first_warp + info.warps
    w.comment("%s: role %r, warps %d..%d" % (path, role.name, lo, hi - 1))
    with w.block("if (cake_warp_id >= %d && cake_warp_id < %d)" % (lo, hi)):
        if role.registers and ctx.target.has("setmaxnreg"):
            if role.registers > ctx.entry_registers:
                w.line("cake::setmaxnreg_inc<%d>();" % role.registers)
            elif role.registers < ctx.entry_registers:
                w.line("cake::setmaxnreg_dec<%d>();" % role.registers)
        w.line("const int cake_thread = int(threadIdx.x) - %d;" % (32 * lo))
        w.line("const int cake_warp = cake_warp_id - %d;" % lo)
        w.line("const int cake_warpgroup = cake_warp >> 2;")
        w.line("const int cake_lane = int(threadIdx.x) & 31;")
        w.line("const bool cake_elected = cake::elect_one();")
        w.line("(void)cake_thread; (void)cake_warpgroup; (void)cake_lane; (void)cake_elected;")
        for region in ctx.kernel.regions:
            if region.space == ir_pb2.MEMORY_SPACE_REGISTER and region.owner == role.name:
                declare_fragment(w, region)
        em.role = info
        em.scope = {s.name: s.min >= 0 for s in ctx.kernel.contract.symbols}
        em.inflight = []
        em.scalars = frozenset(role_scalars(ctx.kernel, role.name))
        em.ops(role.body, path + ".body")


def emit_kernel(ctx):
    """Pass: print the whole kernel into ctx.source."""
    body = Writer()
    body.depth = 1
    em = Emitter(ctx, body)
    _prologue(ctx, body)
    _check_register_budgets(ctx)
    body.line("const int cake_warp_id = cake::warp_index();")
    for info in ctx.roles:
        _role(ctx, em, info)
    # The signature lists tensor maps, which emitting the bodies discovered.
    head = Writer()
    head.comment("Generated by CAKE from kernel %r for %s. Do not edit." % (ctx.kernel.name, ctx.target.name))
    head.line("#include <cake/cake.cuh>")
    head.line("")
    blocks = max(1, ctx.kernel.launch.min_blocks_per_sm)
    head.line('extern "C" __global__ void __launch_bounds__(%d, %d) cake_%s(' % (ctx.threads, blocks, ctx.kernel.name))
    args = _signature(ctx)
    for i, a in enumerate(args):
        head.line("    %s%s" % (a, "," if i + 1 < len(args) else ") {"))
    if not args:
        head.line("    ) {")
    ctx.source = head.text() + body.text() + "}\n"

