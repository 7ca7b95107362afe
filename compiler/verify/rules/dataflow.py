"""Data-consistency rules: nothing reads a region nothing writes, reads follow the writes they need,
async results are read only after their wait, and writes do not race earlier accesses."""

from compiler.ir import oprefs
from compiler.verify import exprs
from compiler.verify.protocol import findings
from compiler.verify.registry import Finding, rule


def _written(ctx):
    out = set()
    for site in ctx.ops:
        if site.msg is None:
            continue
        for _, ref, access in oprefs.tiles(site.kind, site.msg):
            if access != oprefs.R:
                out.add(ref.region)
    return out


def _reads(ctx, site):
    """Names of the regions an op reads: tile operands, and register scalars its expressions read."""
    for field, ref, access in oprefs.tiles(site.kind, site.msg):
        if site.kind == "mma" and field == "acc":
            if not site.msg.HasField("accumulate") or exprs.constant(site.msg.accumulate) == 0:
                continue
        elif access == oprefs.W:
            continue
        yield ref.region
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
