"""Synchronization rules: mbarrier initialisation, arrival and transaction counts, phases, deadlock,
block_sync and named barriers, collective ops (static checks and the protocol model's findings)."""

from cake.ir.v1 import ir_pb2

from compiler.ir import oprefs
from compiler.verify import exprs
from compiler.verify.protocol import findings
from compiler.verify.registry import Finding, rule


def _model_rule(id, doc, fix_hint, *kinds):
    findings.model_rule(id, "synchronization", doc, fix_hint, *kinds)


@rule(
    "CAKE-SYNC-001", "synchronization", "error",
    doc="Every mbarrier array that an op uses is initialised by some mbarrier_init.",
    fix_hint="Initialise the array from one thread (e.g. under `thread == 0`), then fence(mbarrier_init) and block_sync before any use.",
)
def initialised(ctx):
    inits = {s.msg.barrier for s in ctx.sites("mbarrier_init")}
    for site in ctx.ops:
        if site.kind in oprefs.MBARRIER_OPS and site.kind != "mbarrier_init":
            name = oprefs.barrier_name(site.kind, site.msg)
            b = ctx.barrier(name)
            if b is not None and b.kind == ir_pb2.BARRIER_KIND_MBARRIER and name not in inits:
                yield Finding(site.path, "uses mbarrier `%s`, which nothing initialises" % name,
                              (("`%s` is declared here" % name, ctx.barrier_path(name)),))
                inits.add(name)  # once per array


@rule(
    "CAKE-SYNC-010", "synchronization", "error",
    doc="A wait on a barrier named by index gives its phase; a wait by round derives it (no explicit phase); constant phases are 0 or 1.",
    fix_hint="Address ring barriers by `round` and let the parity be derived, or give `phase` for a barrier addressed by index.",
)
def wait_form(ctx):
    for site in ctx.sites("mbarrier_wait"):
        m = site.msg
        slot = m.barrier.WhichOneof("slot")
        if m.HasField("phase"):
            if slot == "round":
                yield Finding(site.path, "a wait by round derives its parity; the explicit phase would override it")
            value = exprs.constant(m.phase)
            if value is not None and value not in (0, 1):
                yield Finding(site.path, "phase %d is not a parity (0 or 1)" % value)
        elif slot != "round":
            yield Finding(site.path, "a wait on `%s` by index needs an explicit phase" % m.barrier.barrier)


@rule(
    "CAKE-SYNC-012", "synchronization", "error",
    doc="A named barrier's thread count is a positive multiple of 32 no larger than the block.",
    fix_hint="Set the named barrier's arrivals to the number of threads (whole warps) that sync on it.",
)
def named_counts(ctx):
    for i, b in enumerate(ctx.kernel.barriers):
        if b.kind != ir_pb2.BARRIER_KIND_NAMED:
            continue
        if b.arrivals <= 0 or b.arrivals % 32 or (ctx.block_threads and b.arrivals > ctx.block_threads):
            yield Finding("kernel.barriers[%d]" % i, "named barrier `%s` counts %d threads; it needs whole warps of this "
                          "%d-thread block" % (b.name, b.arrivals, ctx.block_threads))


@rule(
    "CAKE-SYNC-015", "synchronization", "error",
    doc="A reference to an array of several mbarriers says which one (index or round); constant indices of mbarrier "
    "and named-barrier arrays are in range.",
    fix_hint="Address the barrier with `name[index]` or `name@round(r)`; index a named-barrier array within its count.",
)
def slots_named(ctx):
    for site in ctx.ops:
        spec = oprefs.BARRIER_FIELD.get(site.kind)
        if spec is None or site.msg is None:
            continue
        name = oprefs.barrier_name(site.kind, site.msg)
        b = ctx.barrier(name)
        if b is None:
            continue
        if spec[1] and getattr(site.msg, spec[0]).WhichOneof("slot") is None and b.count > 1:
            yield Finding(site.path, "`%s` has %d barriers; say which one" % (name, b.count))
            continue
        index = oprefs.barrier_index(site.kind, site.msg)
        i = exprs.constant(index) if index is not None else None
        if i is not None and not 0 <= i < max(1, b.count):
            yield Finding(site.path, "index %d is outside `%s`'s %d barriers" % (i, name, max(1, b.count)))


@rule(
    "CAKE-SYNC-017", "synchronization", "error",
    doc="No synchronization under a data-dependent condition: barrier ops (arrive, expect_tx, wait, init, TMA loads "
    "and MMA commits), named barriers, block_sync, MMAs, mma/cp.async/bulk waits and other collective ops are not "
    "inside a branch whose condition reads a register scalar (how many threads reach them cannot be proven).",
    fix_hint="Hoist the synchronization out of the branch (run it unconditionally, or under a condition on loop "
    "variables, symbols and thread ids), and keep only data work (copies, atomics, math) under the data-dependent branch.",
)
def sync_under_data(ctx):
    for site in ctx.ops:
        if site.msg is None or not site.conds or not ctx.scalars[site.role_index]:
            continue
        if not oprefs.synchronizes(site.kind, site.msg):
            continue
        for (cond, _), branch in zip(site.conds, site.branches):
            names = ctx.data_names(cond, site.role_index)
            if names:
                which = "register `%s`" % names[0] if len(names) == 1 else "registers %s" % ", ".join("`%s`" % n for n in names)
                yield Finding(
                    site.path, "%s runs under a condition on %s (run-time data): how many threads reach it cannot be "
                    "proven" % (site.kind, which),
                    (("the data-dependent branch", branch),),
                )
                break


_model_rule(
    "CAKE-SYNC-002",
    "Every use of an mbarrier is ordered after its initialisation (init, then block_sync).",
    "Initialise barriers before a block_sync that every role passes before its first barrier op.",
    "use_before_init",
)
_model_rule(
    "CAKE-SYNC-003",
    "mbarrier initialisation is followed by fence(mbarrier_init) before the sync that publishes it to TMA, tcgen05 or the cluster.",
    "After the mbarrier_init ops, have the same thread run fence(mbarrier_init) before the block_sync.",
    "init_fence",
)
_model_rule(
    "CAKE-SYNC-004",
    "No deadlock: every wait's phase is eventually completed (on every modelled trip count).",
    "Make sure someone arrives on (or loads into) the phase this wait needs: check the round, the parity and who arrives.",
    "deadlock",
)
_model_rule(
    "CAKE-SYNC-005",
    "The threads arriving per phase match the barrier's arrival count (no phase completed early, none left short).",
    "Make `arrivals` equal the number of threads that arrive per round (count executing threads, not ops), or change who arrives.",
    "arrival_count",
)
_model_rule(
    "CAKE-SYNC-006",
    "Each phase's expect_tx bytes equal the bytes its TMA loads bring (prod(box) * element size per load).",
    "Set expect_tx bytes to the sum of the boxes the loads of this round bring (and issue them from one thread).",
    "tx_bytes",
)
_model_rule(
    "CAKE-SYNC-007",
    "Each phase's expected transaction bytes equal the barrier's declared tx_bytes.",
    "Declare the barrier's tx_bytes as the bytes one phase expects, or fix the expect_tx.",
    "tx_declared",
)
_model_rule(
    "CAKE-SYNC-008",
    "Rounds name each barrier completion once: a wait by round observes exactly the completion of its round (no "
    "phase skipped or lapped), and an op's rounds do not start over when an enclosing loop (a persistent tile loop) "
    "moves on.",
    "Keep every waiter within one ring lap of the arrivals (release only after all readers waited), and make rounds "
    "grow across enclosing loops (it * rounds_per_tile + k).",
    "phase_mismatch",
    "round_restart",
    "round_skip",
)
_model_rule(
    "CAKE-SYNC-009",
    "Every thread of the block executes block_sync the same number of times.",
    "Move block_sync out of role-specific or thread-specific branches so that every role reaches each one.",
    "block_sync_count",
)
_model_rule(
    "CAKE-SYNC-011",
    "Collective ops (.sync.aligned MMAs, ldmatrix/stmatrix, warp reductions) are reached by all threads of their warp or warpgroup.",
    "Hoist the collective op out of the branch that splits its warp or warpgroup.",
    "divergence",
)
_model_rule(
    "CAKE-SYNC-013",
    "An mbarrier array is initialised by exactly one thread.",
    "Guard mbarrier_init with a condition one thread satisfies, e.g. `thread == 0`.",
    "init_multi",
)
_model_rule(
    "CAKE-SYNC-014",
    "Barrier indices computed at run time stay within the array.",
    "Index the barrier array within its count (use a round for rings: the slot is round % count).",
    "barrier_index",
)
@rule(
    "CAKE-SYNC-016", "synchronization", "note",
    doc="The protocol model could not run on this kernel (too many thread classes or steps, or no valid input); its checks did not happen.",
    fix_hint="Simplify the conditions on thread ids, or give the contract small valid inputs, so the protocol can be model-checked.",
    model=True,
)
def model_skipped(ctx):
    res = findings.result(ctx)
    if res is not None and res.skipped:
        yield Finding("kernel", "the protocol model did not run: %s" % res.skipped)
