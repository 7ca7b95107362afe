"""Target rules: the kernel names a target, and uses only instruction families its target has
(feature gates of compiler/targets.py: Target.has)."""

from cake.ir.v1 import ir_pb2

from compiler.targets import FEATURES
from compiler.verify.registry import Finding, rule


@rule(
    "CAKE-TARGET-001", "target", "error",
    doc="The kernel names a target CAKE compiles for (sm_80, sm_90a, sm_100a).",
    fix_hint="Set `target` to sm_80, sm_90a or sm_100a.",
)
def known_target(ctx):
    if ctx.target is None:
        yield Finding("kernel", "target %s is not one CAKE compiles for (sm_80, sm_90a, sm_100a)" % ctx.target_name)


def _gate(id, feature, doc, fix_hint, uses):
    """Register a rule reporting the uses (path, what) of `feature` on a target without it: one finding
    at the first use, the others as notes (the defect is the target choice, not each use)."""

    def check(ctx):
        if ctx.target is None or ctx.has(feature):
            return
        found = list(uses(ctx))
        if found:
            (path, what), rest = found[0], found[1:]
            more = " (and %d more uses)" % len(rest) if rest else ""
            yield Finding(
                path, "%s needs %s, which %s does not have%s" % (what, FEATURES[feature], ctx.target_name, more),
                tuple(("also needs %s" % feature, p) for p, _ in rest[:4]),
            )

    check.__name__ = "needs_" + feature
    rule(id, "target", "error", doc=doc, fix_hint=fix_hint)(check)


_MMA_FEATURE = {ir_pb2.MMA_KIND_WGMMA: "wgmma", ir_pb2.MMA_KIND_TCGEN05: "tcgen05", ir_pb2.MMA_KIND_MMA_SYNC: "mma_sync"}


def _mma_uses(feature):
    def uses(ctx):
        for s in ctx.sites("mma"):
            if _MMA_FEATURE.get(s.msg.kind) == feature:
                yield s.path, "this %s MMA" % feature

    return uses


def _ops(*kinds):
    def uses(ctx):
        for s in ctx.sites(*kinds):
            yield s.path, s.kind

    return uses


def _tcgen05(ctx):
    yield from _mma_uses("tcgen05")(ctx)
    for i, r in enumerate(ctx.kernel.regions):
        if r.space == ir_pb2.MEMORY_SPACE_TENSOR:
            yield "kernel.regions[%d]" % i, "tensor-memory region `%s`" % r.name
    yield from _ops("tmem_load", "mma_commit")(ctx)


def _clusters(ctx):
    if any(c > 1 for c in ctx.kernel.launch.cluster):
        yield "kernel.launch", "a cluster launch"
    for s in ctx.sites("tma_load"):
        if s.msg.multicast_mask:
            yield s.path, "a multicast load"
    for path, node in ctx.nodes:
        if node.DESCRIPTOR.name == "Expr" and node.WhichOneof("kind") == "sym" and node.sym == "cluster.rank":
            yield path, "cluster.rank"


def _registers(ctx):
    for i, role in enumerate(ctx.kernel.roles):
        if role.registers:
            yield ctx.role_path(i), "a register budget for role `%s` (setmaxnreg)" % role.name


def _fences(kind):
    def uses(ctx):
        for s in ctx.sites("fence"):
            if s.msg.kind == kind:
                yield s.path, "this fence"

    return uses


_gate("CAKE-TARGET-002", "wgmma", "wgmma MMAs only on targets with wgmma (sm_90a).",
      "Use mma_sync on sm_80 and tcgen05 on sm_100a.", _mma_uses("wgmma"))
_gate("CAKE-TARGET-003", "tcgen05", "tcgen05 MMAs and tensor memory (regions, tmem_load, mma_commit) only on sm_100a.",
      "Use wgmma (register accumulators) on sm_90a and mma_sync on sm_80.", _tcgen05)
_gate("CAKE-TARGET-004", "tma", "TMA loads, stores and bulk waits only on targets with TMA (sm_90a+).",
      "Use cp_async (with cp_async_wait) on sm_80.", _ops("tma_load", "tma_store", "bulk_wait"))
_gate("CAKE-TARGET-005", "mbarrier_tx", "mbarrier expect_tx only on targets with transaction counts (sm_90a+).",
      "Use plain arrivals (cp.async completes through cp_async_wait) on sm_80.", _ops("mbarrier_expect_tx"))
_gate("CAKE-TARGET-006", "clusters", "Clusters, multicast and cluster.rank only on targets with clusters (sm_90a+).",
      "Launch without clusters on sm_80.", _clusters)
_gate("CAKE-TARGET-007", "stmatrix", "stmatrix only on targets with it (sm_90a+).",
      "Store fragments with copy on sm_80.", _ops("stmatrix"))
_gate("CAKE-TARGET-008", "setmaxnreg", "Role register budgets (setmaxnreg) only on sm_90a and sm_100a.",
      "Leave `registers` at 0 on sm_80 (ptxas allocates).", _registers)
# The async proxy and mbarrier-init fences arrive with TMA and transaction counts (sm_90).
_gate("CAKE-TARGET-009", "tma", "fence.proxy.async only on targets with an async proxy (TMA, sm_90a+).",
      "Drop the fence on sm_80: its shared-memory readers are all generic-proxy.",
      _fences(ir_pb2.FENCE_KIND_PROXY_ASYNC))
_gate("CAKE-TARGET-010", "mbarrier_tx", "fence.mbarrier_init only on sm_90a+.",
      "On sm_80 a block_sync after mbarrier_init publishes it.", _fences(ir_pb2.FENCE_KIND_MBARRIER_INIT))
