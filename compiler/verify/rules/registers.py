"""Register rules: setmaxnreg budgets are legal and fit the registers the block is launched with,
and each role's live register fragments (plus what a role needs beyond them) fit its budget.
Budgets, the pool and the overhead are compiler/targets/registers.py's.

Fragments are counted where they are live (compiler/ir/fragments.live_peak), as ptxas
allocates them.
"""

from compiler.targets import registers
from compiler.verify.registry import Finding, rule


@rule(
    "CAKE-RES-003", "resources", "error",
    doc="Role register budgets are legal setmaxnreg values: multiples of 8 in [24, 256].",
    fix_hint="Round the role's registers to a multiple of 8 between 24 and 256.",
)
def setmaxnreg_values(ctx):
    legal = registers.setmaxnreg(ctx.target_name) if ctx.has("setmaxnreg") else None
    if legal is None:
        return
    for i, role in enumerate(ctx.kernel.roles):
        n = role.registers
        if n and not legal.legal(n):
            yield Finding(ctx.role_path(i), "role `%s` asks for %d registers per thread; setmaxnreg takes multiples of "
                          "%d in [%d, %d]" % (role.name, n, legal.step, legal.minimum, legal.maximum))


def _launchable(ctx):
    """Whether the block can launch at all (CAKE-RES-002 reports it otherwise): budgets are moot before."""
    return ctx.limits is not None and ctx.block_threads_in_range


@rule(
    "CAKE-RES-004", "resources", "error",
    doc="Role budgets times their threads fit the registers the block is launched with (its threads times the "
        "launch budget): setmaxnreg only moves registers within them.",
    fix_hint="Lower the register budget of the largest role (or of the producer, which needs few).",
)
def register_file(ctx):
    # Without setmaxnreg a budget is CAKE-TARGET-008's error, not an allocation to check.
    if not _launchable(ctx) or not ctx.has("setmaxnreg") or not any(r.registers for r in ctx.kernel.roles):
        return
    use = registers.pool_use(ctx.kernel, ctx.limits, ctx.spans)
    cap = registers.pool(ctx.kernel, ctx.limits, ctx.spans)
    if sum(use) > cap:
        i = max(range(len(use)), key=lambda j: use[j])
        entry = registers.kernel_launch_budget(ctx.kernel, ctx.limits, ctx.spans)
        yield Finding(
            ctx.role_path(i),
            "role budgets need %d registers, over the %d the block is launched with (%d threads x %d); `%s` alone "
            "takes %d" % (sum(use), cap, ctx.block_threads, entry, ctx.kernel.roles[i].name, use[i]),
        )


def _sites(ctx, role_index):
    """The role's ops as the context walked them, with their tiles, as compiler/ir/fragments.live_peak reads them."""
    return [(s.path, s.kind, s.msg, s.tiles()) for s in ctx.ops if s.role_index == role_index]


@rule(
    "CAKE-RES-005", "resources", "error",
    doc="A role's live register fragments plus what a role needs beyond them (addresses, counters) fit its register "
        "budget (the launch budget without one).",
    fix_hint="Raise the role's budget (within the register file), hold smaller tiles per thread, or end a fragment's life earlier.",
)
def fragment_footprint(ctx):
    if not _launchable(ctx):
        return
    overhead = registers.role_overhead(ctx.target_name)
    for i, need, budget, live in registers.short_roles(ctx.kernel, ctx.limits, ctx.target_name, ctx.has("setmaxnreg"),
                                                        lambda j: _sites(ctx, j)):
        notes = tuple(("`%s` takes %d" % (n, r), ctx.region_path(n)) for n, r in sorted(live.items(), key=lambda x: -x[1])[:4])
        yield Finding(
            ctx.role_path(i),
            "role `%s` holds %d registers of live fragments per thread (+%d it needs beyond them) but has a budget "
            "of %d" % (ctx.kernel.roles[i].name, need - overhead, overhead, budget),
            notes,
        )