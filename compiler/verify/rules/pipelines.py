"""Pipeline rules: a ring's declarations agree, the producer refills a slot only after its consumers released it,
consumers release only slots they hold, and every fill is drained before the block exits."""

from cake.ir.v1 import ir_pb2

from compiler.verify.protocol import findings
from compiler.verify.registry import Finding, rule


@rule(
    "CAKE-PIPE-001", "pipeline", "error",
    doc="A pipeline's full and empty barriers are distinct mbarrier arrays of `stages` barriers and its regions are shared regions of `stages` stages.",
    fix_hint="Give the ring's barriers count = stages and its regions stages = stages (or fix the pipeline's stages).",
)
def ring_shape(ctx):
    for i, p in enumerate(ctx.kernel.pipelines):
        problems, notes = [], []
        if p.full == p.empty:
            problems.append("`%s` is both its full and its empty barrier" % p.full)
        for role, name in (("full", p.full), ("empty", p.empty)):
            b = ctx.barrier(name)
            if b is not None and (b.kind != ir_pb2.BARRIER_KIND_MBARRIER or max(1, b.count) != p.stages):
                problems.append("its %s barrier `%s` is not an mbarrier array of %d" % (role, name, p.stages))
                notes.append(("`%s` is declared here" % name, ctx.barrier_path(name)))
        for name in p.regions:
            r = ctx.region(name)
            if r is not None and (r.space != ir_pb2.MEMORY_SPACE_SHARED or max(1, r.stages) != p.stages):
                problems.append("region `%s` is not a shared region of %d stages" % (name, p.stages))
                notes.append(("`%s` is declared here" % name, ctx.region_path(name)))
        if problems:
            yield Finding("kernel.pipelines[%d]" % i, "%d-stage pipeline `%s`: %s" % (p.stages, p.name, "; ".join(problems)),
                          tuple(notes))


findings.model_rule(
    "CAKE-PIPE-002", "pipeline",
    "The producer refills a ring slot only after every read of its previous contents (including in-flight wgmma reads, "
    "complete at the following mma_wait) happened before the release it waited for.",
    "Wait on the slot's `empty` barrier before refilling it, and arrive on `empty` only after the reads completed "
    "(after mma_wait for wgmma operands).",
    "ring_race",
)
findings.model_rule(
    "CAKE-PIPE-003", "pipeline",
    "A TMA load into a ring stage signals the barrier of the same slot (stage = round % stages).",
    "Load into stage `round % stages` and signal `full@round(round)` with the same round.",
    "slot_mismatch",
)
findings.model_rule(
    "CAKE-PIPE-004", "pipeline",
    "Every fill is drained: each ring round (and each TMA load) is waited for before the block exits, and no "
    "cp.async is left in flight; the producer runs no more rounds than its consumers drain (on every modelled trip "
    "count).",
    "Run the producer's loop over exactly the rounds its consumers wait for, and wait for every load before exiting.",
    "ring_drain",
)
findings.model_rule(
    "CAKE-PIPE-005", "pipeline",
    "A consumer releases only ring slots it holds: an arrival on a ring's `empty` (or an MMA commit to it) by a "
    "thread that waits on the ring's `full` frees a slot that thread waited for and has not released yet, and such "
    "a thread does not arrive on the ring's `full`, which the producer's loads complete.",
    "Arrive on `empty` with the round of the `full` wait the release follows (empty@round(kt) after "
    "full@round(kt)), once per round.",
    "release_unheld",
)
