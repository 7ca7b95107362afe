"""Data-consistency rules: nothing reads a region nothing writes, reads follow the writes they need,
async results are read only after their wait, and writes do not race earlier accesses."""

from compiler.ir import oprefs
from compiler.verify import exprs
from compiler.verify.protocol import findings
from compiler.verify.rules import outputs
from compiler.verify.registry import Finding, rule


def _written(ctx):
    out = set()
    for site in ctx.ops:
        if site.msg is None:
            continue
        for u in ctx.operands(site):
            if u.access != oprefs.R:
                out.add(u.name)
    return out


def _reads(ctx, site):
    """Names of the regions an op reads: tile operands, and register scalars its expressions read."""
    for u in ctx.operands(site):
        if site.kind == "mma" and u.field == "acc":
            if not site.msg.HasField("accumulate") or exprs.constant(site.msg.accumulate) == 0:
                continue
        elif u.access == oprefs.W:
            continue
        yield u.name
    yield from sorted(ctx.names_read(site.path, site.msg) & ctx.scalars[site.role_index].keys())


@rule(
    "CAKE-DATA-001", "data consistency", "error",
    doc="Every region that some op reads is written by some op (TMA, cp.async, copy, MMA, fill, ...).",
    fix_hint="Fill the region before reading it (a load, a fill, an MMA with accumulate 0), or read the region that holds the data.",
)
def never_written(ctx):
    written, reported = _written(ctx), set()
    for site in ctx.ops:
        if site.msg is None:
            continue
        for name in _reads(ctx, site):
            if name in ctx.regions and name not in written and name not in reported:
                reported.add(name)
                yield Finding(site.path, "reads `%s`, which no op ever writes" % name,
                              (("`%s` is declared here" % name, ctx.region_path(name)),))


findings.model_rule(
    "CAKE-DATA-002", "data consistency",
    "No thread reads a region (or accumulates into it) before anything wrote it along the program.",
    "Write the region first (e.g. accumulate only when k > 0, or fill it).",
    "uninit_read",
)
findings.model_rule(
    "CAKE-DATA-003", "data consistency",
    "Every read of shared or tensor memory happens after the write it reads (through a barrier wait or sync).",
    "Wait on the barrier the writer completes (the ring's `full` for TMA loads) or sync with the writers before reading.",
    "raw",
)
findings.model_rule(
    "CAKE-DATA-005", "data consistency",
    "Results of asynchronous ops (wgmma accumulators, cp.async tiles) are read only after the wait that completes them.",
    "Insert mma_wait (or cp_async_wait) before reading the result.",
    "async_read",
)
findings.model_rule(
    "CAKE-DATA-006", "data consistency",
    "A write is ordered after earlier reads and writes of the same location by other op instances.",
    "Synchronize (barrier, block_sync or bulk_wait for TMA stores) between the earlier accesses and this write.",
    "write_race",
)

findings.model_rule(
    "CAKE-DATA-008", "data consistency",
    "TMA stores and tensor cores (wgmma, tcgen05) read only shared or tensor-memory elements that something wrote: "
    "the writes before the read cover the whole tile it reads (writes by other warpgroups, warps or windows "
    "included).",
    "Write every element the TMA store or MMA reads (each warpgroup its rows, the whole tile, every column) before "
    "it, or read only the part that was written.",
    "uncovered_read",
)


@rule(
    "CAKE-DATA-007", "data consistency", "error",
    doc="No element is written twice where it should be written once: the warpgroups, warps or threads of one op "
    "write disjoint parts of a shared tile, and every element of a write-only output is written by exactly one "
    "thread of one block (checked as CAKE-CONTRACT-010 checks that it is written).",
    fix_hint="Offset each writer's window by its own index (warpgroup * rows, warp * rows, the block's tile, the "
    "loop's step) so that the writers tile the destination instead of sharing parts of it.",
    model=True,
)
def write_overlap(ctx):
    v = findings.violation(ctx, "write_overlap")
    if v:
        yield v
    found = outputs.result(ctx)
    if found and found[0] == "overlap":
        yield found[1]
