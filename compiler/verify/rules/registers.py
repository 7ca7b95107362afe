"""Register rules: setmaxnreg budgets are legal and fit the register file, and each role's live
register fragments (plus a margin) fit its budget.

Fragments are counted where they are live, as ptxas allocates them: a
fragment lives from its first to its last access in program order, across a
whole loop when it is used both inside and outside it or carried from one
iteration to the next (its first access in the loop reads it).
"""

from cake.ir.v1 import ir_pb2

from compiler.verify import exprs, oprefs
from compiler.verify.context import DTYPE_BYTES, elements
from compiler.verify.registry import Finding, rule
from compiler.verify.rules import limits as lim

L = ir_pb2.FragmentLayout


@rule(
    "CAKE-RES-003", "resources", "error",
    doc="Role register budgets are legal setmaxnreg values: multiples of 8 in [24, 256].",
    fix_hint="Round the role's registers to a multiple of 8 between 24 and 256.",
)
def setmaxnreg_values(ctx):
    if not ctx.has("setmaxnreg"):
        return
    for i, role in enumerate(ctx.kernel.roles):
        n = role.registers
        if n and (n % lim.SETMAXNREG_STEP or not lim.SETMAXNREG_MIN <= n <= lim.SETMAXNREG_MAX):
            yield Finding(ctx.role_path(i), "role `%s` asks for %d registers per thread; setmaxnreg takes multiples of "
                          "8 in [24, 256]" % (role.name, n))


def _default_budget(ctx):
    blocks = max(1, ctx.kernel.launch.min_blocks_per_sm)
    per_thread = ctx.limits.registers_per_sm // max(1, ctx.block_threads * blocks)
    return min(ctx.limits.registers_per_thread_max, per_thread // 8 * 8)


@rule(
    "CAKE-RES-004", "resources", "error",
    doc="Role budgets times their threads (times min_blocks_per_sm) fit the SM's register file.",
    fix_hint="Lower the register budget of the largest role (or of the producer, which needs few).",
)
def register_file(ctx):
    if ctx.limits is None or not any(r.registers for r in ctx.kernel.roles) or not ctx.block_threads:
        return
    blocks = max(1, ctx.kernel.launch.min_blocks_per_sm)
    default = _default_budget(ctx)
    use = [(role.registers or default) * span.threads for role, span in zip(ctx.kernel.roles, ctx.spans)]
    total = sum(use) * blocks
    cap = ctx.limits.registers_per_sm
    if total > cap:
        i = max(range(len(use)), key=lambda j: use[j])
        yield Finding(
            ctx.role_path(i),
            "role budgets need %d registers per SM (%d blocks), over the %d-register file; `%s` alone takes %d"
            % (total, blocks, cap, ctx.kernel.roles[i].name, use[i]),
        )


def fragment_registers(region):
    """32-bit registers per thread that a register region takes, by its fragment layout."""
    s = list(region.shape)
    if not s or any(d <= 0 for d in s):
        return 0
    lay, rest = region.layout, elements(s[1:])
    if lay == L.FRAGMENT_LAYOUT_WGMMA_ACC:
        values = elements(s) // 128  # a warpgroup's 128 threads share the [64, N] tile
    elif lay == L.FRAGMENT_LAYOUT_WGMMA_ROWS:
        values = 2 * rest  # each thread's quad owns two of the 64 rows
    elif lay == L.FRAGMENT_LAYOUT_WGMMA_COLS:
        values = s[0] // 4 * rest  # each thread holds N / 4 of the N columns
    elif lay in (L.FRAGMENT_LAYOUT_MMA_ACC, L.FRAGMENT_LAYOUT_MMA_A, L.FRAGMENT_LAYOUT_MMA_B):
        values = elements(s) // 32  # a warp's 32 threads share the tile
    elif lay == L.FRAGMENT_LAYOUT_MMA_ROWS:
        values = 2 * (s[0] // 16) * rest  # two rows per 16-row block
    elif lay == L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
        values = rest  # thread t holds row t
    else:
        values = elements(s)
    return -(-values * DTYPE_BYTES.get(region.dtype, 4) // 4)


def _accesses(ctx, site):
    """(region name, reads first) of each register operand of an op."""
    out = []
    for field, ref, access in oprefs.tiles(site.kind, site.msg):
        region = ctx.region(ref.region)
        if region is None or region.space != ir_pb2.MEMORY_SPACE_REGISTER:
            continue
        reads = access != oprefs.W
        if site.kind == "mma" and field == "acc":
            reads = site.msg.HasField("accumulate") and exprs.constant(site.msg.accumulate) != 0
        out.append((ref.region, reads))
    return out


def live_peak(ctx, role_index):
    """(peak registers of live fragments, {region: registers} live at the peak) for one role."""
    sites = [s for s in ctx.ops if s.role_index == role_index]
    loops = []
    for p, s in enumerate(sites):
        if s.kind == "loop":
            q, prefix = p, s.path + "."
            while q + 1 < len(sites) and sites[q + 1].path.startswith(prefix):
                q += 1
            loops.append((p, q))
    spans, first_read = {}, {}
    for p, s in enumerate(sites):
        if s.msg is None:
            continue
        for name, reads in _accesses(ctx, s):
            lo, hi = spans.get(name, (p, p))
            spans[name] = (min(lo, p), max(hi, p))
            for ls, le in loops:  # does this region's first access inside each loop read it?
                if ls <= p <= le:
                    first_read.setdefault((name, ls), reads)
    changed = True
    while changed:
        changed = False
        for name, (lo, hi) in list(spans.items()):
            for ls, le in loops:
                crosses = (lo < ls <= hi) or (lo <= le < hi)
                carried = ls <= lo and hi <= le and first_read.get((name, ls))
                if (crosses or carried) and (lo > ls or hi < le):
                    lo, hi = min(lo, ls), max(hi, le)
                    changed = True
            spans[name] = (lo, hi)
    size = {name: fragment_registers(ctx.region(name)) for name in spans}
    peak, at = 0, {}
    for p in range(len(sites)):
        live = {n: size[n] for n, (lo, hi) in spans.items() if lo <= p <= hi}
        total = sum(live.values())
        if total > peak:
            peak, at = total, live
    return peak, at


@rule(
    "CAKE-RES-005", "resources", "error",
    doc="A role's live register fragments plus a margin for addresses and counters fit its register budget (255 without one).",
    fix_hint="Raise the role's budget (within the register file), hold smaller tiles per thread, or end a fragment's life earlier.",
)
def fragment_footprint(ctx):
    if ctx.limits is None:
        return
    for i, role in enumerate(ctx.kernel.roles):
        peak, live = live_peak(ctx, i)
        budget = role.registers or ctx.limits.registers_per_thread_max
        if peak and peak + lim.REGISTER_MARGIN > budget:
            notes = tuple(("`%s` takes %d" % (n, r), ctx.region_path(n)) for n, r in sorted(live.items(), key=lambda x: -x[1])[:4])
            yield Finding(
                ctx.role_path(i),
                "role `%s` holds %d registers of live fragments per thread (+%d margin) but has a budget of %d"
                % (role.name, peak, lim.REGISTER_MARGIN, budget),
                notes,
            )
