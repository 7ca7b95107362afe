"""Resource rules: shared memory, threads, tensor memory, named barriers, clusters and occupancy within
the target's limits (compiler/targets/targets.json). Registers are registers.py's."""

from cake.ir.v1 import ir_pb2

from compiler.ir import named_barriers as named_barrier_ids
from compiler.ir.dtypes import DTYPE_BYTES
from compiler.ir.shapes import elements
from compiler.verify.registry import Finding, rule


@rule(
    "CAKE-RES-001", "resources", "error",
    doc="The shared memory a launch requests (lowering's layout: regions with their stages, 1024-byte aligned, TMEM address slots, scratch, mbarriers; and the slack that aligns its base at run time) fits the target's per-block maximum.",
    fix_hint="Use fewer stages or smaller tiles, or share one region between phases of the kernel.",
)
def shared_memory(ctx):
    if ctx.limits is None:
        return
    lay = ctx.smem_layout
    cap = ctx.limits.shared_per_block_bytes
    if lay.requested > cap and lay.regions:
        big = max(lay.regions, key=lambda slot: slot.bytes)
        notes = tuple(("`%s` takes %d bytes" % (slot.name, slot.bytes), "kernel.regions[%d]" % slot.index)
                      for slot in lay.regions if slot is not big)
        yield Finding(
            "kernel.regions[%d]" % big.index,
            "shared memory totals %d bytes (a launch requests %d with the run-time alignment slack), over %s's "
            "%d-byte limit per block; `%s` alone takes %d"
            % (lay.total, lay.requested, ctx.target_name, cap, big.name, big.bytes),
            notes,
        )


@rule(
    "CAKE-RES-002", "resources", "error",
    doc="The block's threads (all roles, warpgroup roles aligned) fit the target's maximum per block.",
    fix_hint="Use fewer or smaller roles.",
)
def thread_count(ctx):
    if ctx.limits is None:
        return
    cap = ctx.limits.threads_per_block_max
    for i, span in enumerate(ctx.spans):
        end = 32 * (span.first_warp + span.warps)
        if end > cap:
            yield Finding(ctx.role_path(i), "the block reaches %d threads at role `%s`; %s allows %d"
                          % (end, ctx.kernel.roles[i].name, ctx.target_name, cap))
            return


@rule(
    "CAKE-RES-006", "resources", "error",
    doc="Tensor-memory regions fit the SM's tensor memory (128 lanes x 512 columns of 32 bits).",
    fix_hint="Use fewer or narrower tensor-memory accumulators.",
)
def tensor_memory(ctx):
    if ctx.limits is None or not ctx.has("tensor_memory"):
        return
    total, last = 0, None
    for i, r in enumerate(ctx.kernel.regions):
        if r.space == ir_pb2.MEMORY_SPACE_TENSOR:
            total += max(0, elements(r.shape)) * DTYPE_BYTES.get(r.dtype, 4)
            last = i
            if r.shape and r.shape[0] > 128:
                yield Finding("kernel.regions[%d]" % i, "tensor memory has 128 lanes; `%s` has %d rows" % (r.name, r.shape[0]))
    if last is not None and total > ctx.limits.tensor_memory_bytes_per_sm:
        yield Finding("kernel.regions[%d]" % last, "tensor-memory regions take %d bytes; the SM has %d"
                      % (total, ctx.limits.tensor_memory_bytes_per_sm))


@rule(
    "CAKE-RES-007", "resources", "error",
    doc="Named barriers fit the hardware's ids (barrier 0 is block_sync's): count ids per array, plus one per role that "
    "solves into registers (its scratch hand-off).",
    fix_hint="Use fewer named barriers, or mbarriers.",
)
def named_barriers(ctx):
    if ctx.limits is None:
        return
    over = named_barrier_ids.first_past(named_barrier_ids.assign(ctx.kernel, ctx.smem_layout),
                                        ctx.limits.named_barriers_max)
    if over is None:
        return
    needs, last = over.first + over.count - 1, ctx.limits.named_barriers_max - 1
    if over.kind == named_barrier_ids.BARRIER:
        yield Finding("kernel.barriers[%d]" % over.index, "named barrier `%s` needs id %d; %s has ids 1..%d"
                      % (over.name, needs, ctx.target_name, last))
    else:
        yield Finding(ctx.role_path(over.index), "role `%s` solves into registers, which needs a named barrier for its "
                      "scratch hand-off: id %d; %s has ids 1..%d" % (over.name, needs, ctx.target_name, last))


@rule(
    "CAKE-RES-008", "resources", "error",
    doc="The cluster has at most the target's portable maximum of CTAs.",
    fix_hint="Use a smaller cluster.",
)
def cluster_size(ctx):
    if ctx.limits is None or not ctx.has("clusters"):
        return
    size = 1
    for c in ctx.kernel.launch.cluster:
        size *= max(1, c)
    if size > ctx.limits.cluster_size_max:
        yield Finding("kernel.launch", "a cluster of %d CTAs; %s allows %d" % (size, ctx.target_name, ctx.limits.cluster_size_max))


@rule(
    "CAKE-RES-009", "resources", "error",
    doc="min_blocks_per_sm blocks fit on one SM together (shared memory, threads, blocks).",
    fix_hint="Lower min_blocks_per_sm, or shrink the block's shared memory or threads.",
)
def occupancy(ctx):
    lm, blocks = ctx.limits, ctx.kernel.launch.min_blocks_per_sm
    if lm is None or blocks <= 1:
        return
    smem = ctx.smem_layout.requested + lm.shared_reserved_per_block_bytes
    problems = []
    if smem * blocks > lm.shared_per_sm_bytes:
        problems.append("%d x %d bytes of shared memory exceed the SM's %d" % (blocks, smem, lm.shared_per_sm_bytes))
    if ctx.block_threads * blocks > lm.threads_per_sm_max:
        problems.append("%d x %d threads exceed the SM's %d" % (blocks, ctx.block_threads, lm.threads_per_sm_max))
    if blocks > lm.blocks_per_sm_max:
        problems.append("more than %d blocks per SM" % lm.blocks_per_sm_max)
    if problems:
        yield Finding("kernel.launch", "min_blocks_per_sm %d cannot hold: %s" % (blocks, "; ".join(problems)))
