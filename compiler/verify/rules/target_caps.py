"""Target rules: the kernel names a target, and uses only instruction families its target has
(the uses of compiler/targets/op_features.py, against Target.has)."""

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


def _gate(id, feature, doc, fix_hint, via=lambda via: True):
    """Register a rule reporting the uses of `feature` (compiler/targets/op_features.py) whose `via`
    passes, on a target without it: one finding at the first use, the others as notes (the
    defect is the target choice, not each use)."""

    def check(ctx):
        if ctx.target is None or ctx.has(feature):
            return
        found = [u for u in ctx.feature_uses if u.feature == feature and via(u.via)]
        if found:
            first, rest = found[0], found[1:]
            more = " (and %d more uses)" % len(rest) if rest else ""
            yield Finding(
                first.path, "%s needs %s, which %s does not have%s" % (first.what, FEATURES[feature], ctx.target_name, more),
                tuple(("also needs %s" % feature, u.path) for u in rest[:4]),
            )

    check.__name__ = "needs_" + feature
    rule(id, "target", "error", doc=doc, fix_hint=fix_hint)(check)


def _not_fence(via):
    return via != "fence"


def _fence(via):
    return via == "fence"


_gate("CAKE-TARGET-002", "wgmma", "wgmma MMAs only on targets with wgmma (sm_90a).",
      "Use mma_sync on sm_80 and tcgen05 on sm_100a.")
_gate("CAKE-TARGET-003", "tcgen05", "tcgen05 MMAs and tensor memory (regions, tmem_load, mma_commit) only on sm_100a.",
      "Use wgmma (register accumulators) on sm_90a and mma_sync on sm_80.")
_gate("CAKE-TARGET-004", "tma", "TMA loads, stores and bulk waits only on targets with TMA (sm_90a+).",
      "Use cp_async (with cp_async_wait) on sm_80.", _not_fence)
_gate("CAKE-TARGET-005", "mbarrier_tx", "mbarrier expect_tx only on targets with transaction counts (sm_90a+).",
      "Use plain arrivals (cp.async completes through cp_async_wait) on sm_80.", _not_fence)
_gate("CAKE-TARGET-006", "clusters", "Clusters, multicast and cluster.rank only on targets with clusters (sm_90a+).",
      "Launch without clusters on sm_80.")
_gate("CAKE-TARGET-007", "stmatrix", "stmatrix only on targets with it (sm_90a+).",
      "Store fragments with copy on sm_80.")
_gate("CAKE-TARGET-008", "setmaxnreg", "Role register budgets (setmaxnreg) only on sm_90a and sm_100a.",
      "Leave `registers` at 0 on sm_80 (ptxas allocates).")
_gate("CAKE-TARGET-009", "tma", "fence.proxy.async only on targets with an async proxy (TMA, sm_90a+).",
      "Drop the fence on sm_80: its shared-memory readers are all generic-proxy.", _fence)
_gate("CAKE-TARGET-010", "mbarrier_tx", "fence.mbarrier_init only on sm_90a+.",
      "On sm_80 a block_sync after mbarrier_init publishes it.", _fence)
