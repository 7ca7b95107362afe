"""IR features: named, documented facts about a kernel and its parts, for declarative rules.

`extract(ctx)` returns entities, each (level, path, {feature: value}), at four
levels. Every entity also carries the kernel's features; an op also carries
its role's. Values are ints, bools, strings (enum short names) or lists.
`FEATURES` is the documented catalogue (docs/verifier_rules.md lists it).
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import oprefs
from compiler.ir.dtypes import DTYPE_BYTES, SWIZZLE_SPAN
from compiler.ir.shapes import elements, tile_shape
from compiler.verify import threads
from compiler.verify.context import short

FEATURES = {
    "kernel.name": "the kernel's name",
    "kernel.target": "target short name: sm_80, sm_90a, sm_100a",
    "kernel.threads": "threads per block (all roles, warpgroup-aligned)",
    "kernel.shared_bytes": "shared memory the layout needs, bytes",
    "kernel.roles": "number of roles",
    "kernel.pipelines": "number of pipelines",
    "kernel.persistent": "persistent launch (bool)",
    "kernel.cluster_size": "CTAs per cluster (1 without clusters)",
    "kernel.metric": "contract metric short name",
    "role.name": "the role's name",
    "role.kind": "producer, consumer or compute",
    "role.warps": "warps of the role",
    "role.threads": "threads of the role",
    "role.registers": "setmaxnreg budget (0: ptxas decides)",
    "role.ops": "number of ops in its body, nested ones included",
    "role.op_kinds": "list of the op kinds its body uses",
    "region.name": "the region's name",
    "region.space": "shared, register or tensor",
    "region.dtype": "element type short name",
    "region.shape": "tile shape (list)",
    "region.rank": "number of dims",
    "region.stages": "ring depth (1 when unset)",
    "region.swizzle": "none, 32b, 64b or 128b",
    "region.swizzle_bytes": "swizzle span in bytes (0 for none)",
    "region.layout": "fragment layout short name",
    "region.owner": "owner role (register and tensor regions)",
    "region.stage_bytes": "bytes of one stage",
    "region.bytes": "bytes of all stages",
    "region.inner_bytes": "bytes of the innermost dimension",
    "region.ring": "cycled by a pipeline (bool)",
    "barrier.name": "the barrier array's name",
    "barrier.kind": "mbarrier or named",
    "barrier.count": "barriers in the array",
    "barrier.arrivals": "arrivals per phase (threads for named barriers)",
    "barrier.tx_bytes": "declared transaction bytes per phase",
    "op.kind": "the op's kind (its oneof member): tma_load, mma, mbarrier_wait, ...",
    "op.role": "name of the role whose body holds it",
    "op.depth": "loops and branches enclosing it",
    "op.in_loop": "inside a loop (bool)",
    "op.in_branch": "inside a branch (bool)",
    "op.threads": "threads of its role that can execute it (conditions over builtins evaluated, others assumed true)",
    "op.regions": "list of the regions it reads or writes",
    "op.barrier": "the barrier it names ('' if none)",
    "op.mma_kind": "wgmma, tcgen05 or mma_sync for MMAs ('' otherwise)",
    "op.box_bytes": "bytes one TMA load or store moves (0 otherwise)",
}
LEVELS = ("kernel", "role", "region", "barrier", "op")


def _kernel(ctx):
    k = ctx.kernel
    cluster = 1
    for c in k.launch.cluster:
        cluster *= max(1, c)
    return {
        "kernel.name": k.name,
        "kernel.target": ctx.target_name,
        "kernel.threads": ctx.block_threads,
        "kernel.shared_bytes": ctx.smem_layout.total,
        "kernel.roles": len(k.roles),
        "kernel.pipelines": len(k.pipelines),
        "kernel.persistent": bool(k.launch.persistent),
        "kernel.cluster_size": cluster,
        "kernel.metric": short(ir_pb2.Metric, k.contract.metric),
    }


def _role(ctx, i, role):
    sites = [s for s in ctx.ops if s.role_index == i]
    return {
        "role.name": role.name,
        "role.kind": short(ir_pb2.RoleKind, role.kind),
        "role.warps": ctx.spans[i].warps,
        "role.threads": ctx.spans[i].threads,
        "role.registers": role.registers,
        "role.ops": len(sites),
        "role.op_kinds": sorted({s.kind for s in sites if s.kind}),
    }


def _region(ctx, r):
    esize = DTYPE_BYTES.get(r.dtype, 0)
    stage = elements(r.shape) * esize
    return {
        "region.name": r.name,
        "region.space": short(ir_pb2.MemorySpace, r.space),
        "region.dtype": short(ir_pb2.Dtype, r.dtype),
        "region.shape": list(r.shape),
        "region.rank": len(r.shape),
        "region.stages": max(1, r.stages),
        "region.swizzle": short(ir_pb2.Swizzle, r.swizzle),
        "region.swizzle_bytes": SWIZZLE_SPAN.get(r.swizzle, 0),
        "region.layout": short(ir_pb2.FragmentLayout, r.layout),
        "region.owner": r.owner,
        "region.stage_bytes": stage,
        "region.bytes": stage * max(1, r.stages),
        "region.inner_bytes": (r.shape[-1] if r.shape else 0) * esize,
        "region.ring": r.name in ctx.pipeline_of_region,
    }


def _barrier(b):
    return {
        "barrier.name": b.name,
        "barrier.kind": short(ir_pb2.BarrierKind, b.kind),
        "barrier.count": max(1, b.count),
        "barrier.arrivals": b.arrivals,
        "barrier.tx_bytes": b.tx_bytes,
    }


def _op(ctx, site):
    msg = site.msg
    tiles = oprefs.tiles(site.kind, msg) if msg is not None else []
    box = 0
    if site.kind in ("tma_load", "tma_store"):
        ref = msg.dst if site.kind == "tma_load" else msg.src
        region = ctx.region(ref.region)
        if region is not None:
            shape = tile_shape(ref, region)
            box = elements(shape) * DTYPE_BYTES.get(region.dtype, 0)
    return {
        "op.kind": site.kind or "",
        "op.role": ctx.kernel.roles[site.role_index].name,
        "op.depth": len(site.conds) + len(site.loop_vars),
        "op.in_loop": bool(site.loop_vars),
        "op.in_branch": bool(site.conds),
        "op.threads": threads.executing_threads(min(ctx.spans[site.role_index].threads, ctx.threads_per_block_max),
                                                 site.conds),
        "op.regions": sorted({ref.region for _, ref, _ in tiles}),
        "op.barrier": (oprefs.barrier_name(site.kind, msg) or "") if msg is not None else "",
        "op.mma_kind": short(ir_pb2.MmaKind, msg.kind) if site.kind == "mma" else "",
        "op.box_bytes": box,
    }


def extract(ctx):
    """[(level, path, features)] for the kernel, each role, region, barrier and op."""
    kernel = _kernel(ctx)
    out = [("kernel", "kernel", kernel)]
    roles = []
    for i, role in enumerate(ctx.kernel.roles):
        f = dict(kernel, **_role(ctx, i, role))
        roles.append(f)
        out.append(("role", ctx.role_path(i), f))
    for i, r in enumerate(ctx.kernel.regions):
        out.append(("region", "kernel.regions[%d]" % i, dict(kernel, **_region(ctx, r))))
    for i, b in enumerate(ctx.kernel.barriers):
        out.append(("barrier", "kernel.barriers[%d]" % i, dict(kernel, **_barrier(b))))
    for site in ctx.ops:
        out.append(("op", site.path, dict(roles[site.role_index], **_op(ctx, site))))
    return out
