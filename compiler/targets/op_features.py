"""Which IR ops, regions and launch settings need which instruction family: THE table.

Lowering refuses a kernel that uses a family its target lacks (before printing any
of it), the verifier's CAKE-TARGET rules report the uses at their IR paths, and
ListPrimitives says on which targets each op lowers; all three read `uses` and the
tables below, so they cannot disagree. Feature names are those of the target
database (compiler/targets/targets.json).
"""

import collections

from cake.ir.v1 import ir_pb2

from compiler.ir import paths

# Ops that need a feature whatever their fields (tcgen05.ld and tcgen05.commit are tcgen05 instructions).
OP_FEATURES = {
    "tma_load": "tma",
    "tma_store": "tma",
    "bulk_wait": "tma",
    "mbarrier_expect_tx": "mbarrier_tx",
    "stmatrix": "stmatrix",
    "mma_commit": "tcgen05",
    "tmem_load": "tcgen05",
}
# MMA instruction families by kind.
MMA_FEATURES = {
    ir_pb2.MMA_KIND_WGMMA: "wgmma",
    ir_pb2.MMA_KIND_TCGEN05: "tcgen05",
    ir_pb2.MMA_KIND_MMA_SYNC: "mma_sync",
}
# The async proxy and mbarrier-init fences arrive with TMA and transaction counts (sm_90).
FENCE_FEATURES = {
    ir_pb2.FENCE_KIND_PROXY_ASYNC: "tma",
    ir_pb2.FENCE_KIND_MBARRIER_INIT: "mbarrier_tx",
}

# One use of a feature: where, which feature, what uses it (for messages), and through what
# (the op kind, or "launch", "region", "role", "expr").
Use = collections.namedtuple("Use", "path feature what via")


def op_feature(kind, msg):
    """The feature op `kind` (its message `msg`) needs, or None."""
    if kind == "mma":
        return MMA_FEATURES.get(msg.kind)
    if kind == "fence":
        return FENCE_FEATURES.get(msg.kind)
    return OP_FEATURES.get(kind)


def _op_uses(body, prefix):
    for i, op in enumerate(body[:]):  # (a slice: iterating a protobuf container ends in a raised IndexError)
        kind = op.WhichOneof("kind")
        if kind is None:
            continue
        path = "%s[%d].%s" % (prefix, i, kind)
        msg = getattr(op, kind)
        feature = op_feature(kind, msg)
        if feature:
            what = {"mma": "this %s MMA" % feature, "fence": "this fence"}.get(kind, kind)
            yield Use(path, feature, what, kind)
        if kind == "tma_load" and msg.multicast_mask:
            yield Use(path, "clusters", "a multicast load", kind)
        if kind == "loop":
            yield from _op_uses(msg.body, path + ".body")
        elif kind == "branch":
            yield from _op_uses(msg.then_body, path + ".then_body")
            yield from _op_uses(msg.else_body, path + ".else_body")


def uses(kernel, nodes=None):
    """Every use of a feature in `kernel`: the launch, then ops in program order (role by role),
    then regions, role budgets and cluster.rank in expressions (`nodes`: paths.walk(kernel),
    when the caller has it already)."""
    if any(c > 1 for c in kernel.launch.cluster):
        yield Use("kernel.launch", "clusters", "a cluster launch", "launch")
    for i, role in enumerate(kernel.roles):
        yield from _op_uses(role.body, "kernel.roles[%d].body" % i)
    for i, region in enumerate(kernel.regions):
        if region.space == ir_pb2.MEMORY_SPACE_TENSOR:
            yield Use("kernel.regions[%d]" % i, "tcgen05", "tensor-memory region `%s`" % region.name, "region")
    for i, role in enumerate(kernel.roles):
        if role.registers:
            yield Use("kernel.roles[%d]" % i, "setmaxnreg", "a register budget for role `%s` (setmaxnreg)" % role.name,
                      "role")
    for path, node in paths.walk(kernel) if nodes is None else nodes:
        if isinstance(node, ir_pb2.Expr) and node.WhichOneof("kind") == "sym" and node.sym == "cluster.rank":
            yield Use(path, "clusters", "cluster.rank", "expr")


def missing(kernel, target):
    """The uses in `kernel` of features `target` (a compiler.targets.Target) lacks."""
    return [u for u in uses(kernel) if not target.has(u.feature)]
