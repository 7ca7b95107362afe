"""mma.sync to wgmma: a role's warp-level MMAs become warpgroup MMAs, with their layouts.

Precondition (target with wgmma): in one role every MMA is an mma.sync on shared,
swizzled, K-major operands in which warp w multiplies rows 16 w .. 16 w + 15 of A
(window `warp * 16 +: 16`, all of K) by all of B into its MMA_ACC accumulator
[16, N] (N a multiple of 16, at most 256); the role's register fragments are
MMA_ACC [16, N] and MMA_ROWS [16] / [16, k] (no operand fragments), and every other
op that moves one of them addresses its rows as `warp * 16`; the role has whole
warpgroups.

Rewrite: each MMA becomes one wgmma per warpgroup g over rows 64 g .. 64 g + 63 (window
`warpgroup * 64 +: 64`) followed by `mma_wait 0`; MMA_ACC [16, N] becomes WGMMA_ACC
[64, N] and MMA_ROWS [16, ...] WGMMA_ROWS [64, ...]; the fragment moves' `warp * 16`
becomes `warpgroup * 64`; a role sized in warps is sized in warpgroups. Nothing moves
between threads: row 16 w + r of a warp's m16n8 accumulators and row 16 (w % 4) + r of
its warpgroup's m64nN accumulator are held by the same lanes in the same order (quad
r % 8 of warp w), so every thread holds the same values as before. Operand tiles written
by generic-proxy ops (plain copies, cp.async) are fenced (fence.proxy.async) before the
block's barriers, since wgmma reads them through the async proxy.
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import (
    NotApplicable,
    const,
    copy_kernel,
    mul,
    replace_expr,
    sym,
    target_has,
    tile_refs,
    walk_ops,
    written_tiles,
)
from compiler.ir.paths import walk

WARP_ROWS = mul(sym("warp"), const(16))
WARPGROUP_ROWS = mul(sym("warpgroup"), const(64))
_LAYOUT = {ir_pb2.FRAGMENT_LAYOUT_MMA_ACC: ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC,
           ir_pb2.FRAGMENT_LAYOUT_MMA_ROWS: ir_pb2.FRAGMENT_LAYOUT_WGMMA_ROWS}
_GENERIC_WRITERS = ("copy", "cp_async", "fill", "elementwise", "stmatrix", "reduce", "scan", "tri_solve")
_SYNCS = ("block_sync", "named_barrier_sync")


def _warps(role):
    return 4 * role.warpgroups if role.WhichOneof("size") == "warpgroups" else role.warps


def _mmas(role):
    return [op.mma for _, _, op in walk_ops(role.body) if op.WhichOneof("kind") == "mma"]


def _uses_warp(message):
    return any(isinstance(n, ir_pb2.Expr) and n.WhichOneof("kind") == "sym" and n.sym == "warp"
               for n in _nodes(message))


def _nodes(message):
    return [n for _, n in walk(message)]


def _check_role(kernel, role):
    regions = {r.name: r for r in kernel.regions}
    mmas = _mmas(role)
    if not mmas:
        raise NotApplicable("role %r has no MMA" % role.name)
    if _warps(role) % 4:
        raise NotApplicable("role %r has %d warps, not whole warpgroups" % (role.name, _warps(role)))
    for mma in mmas:
        if mma.kind != ir_pb2.MMA_KIND_MMA_SYNC:
            raise NotApplicable("role %r runs a %s MMA" % (role.name, ir_pb2.MmaKind.Name(mma.kind)))
        a, b, acc = regions.get(mma.a.region), regions.get(mma.b.region), regions.get(mma.acc.region)
        for ref, region in ((mma.a, a), (mma.b, b)):
            if region is None or region.space != ir_pb2.MEMORY_SPACE_SHARED:
                raise NotApplicable("MMA operand %r is not a shared tile" % ref.region)
            if region.swizzle == ir_pb2.SWIZZLE_NONE_UNSPECIFIED or len(region.shape) != 2:
                raise NotApplicable("MMA operand %r is not a swizzled 2-D tile (wgmma reads descriptors)" % ref.region)
        if mma.a_major or mma.b_major:
            raise NotApplicable("an MMA operand is MN-major")
        win = list(mma.a.window)
        if len(win) != 2 or win[0].start != WARP_ROWS or win[0].size != 16 or win[1].size != a.shape[1] or \
                win[1].start != const(0):
            raise NotApplicable("A of an MMA is not the warp's 16 rows (`warp * 16 +: 16`, all of K)")
        if a.shape[0] != 16 * _warps(role):
            raise NotApplicable("A %r has %d rows for %d warps" % (a.name, a.shape[0], _warps(role)))
        if mma.b.window and any(w.size != d for w, d in zip(mma.b.window, b.shape)):
            raise NotApplicable("B of an MMA is a window of %r" % b.name)
        if acc is None or acc.layout != ir_pb2.FRAGMENT_LAYOUT_MMA_ACC or list(acc.shape[:1]) != [16] or mma.acc.window:
            raise NotApplicable("an MMA accumulates into something other than a whole [16, N] mma_acc fragment")
        n = acc.shape[1]
        if n % 16 or n > 256 or n != b.shape[0]:
            raise NotApplicable("an accumulator %d wide is not a wgmma N (16 .. 256, step 16) of B's rows" % n)
    owned = [r for r in kernel.regions if r.space == ir_pb2.MEMORY_SPACE_REGISTER and r.owner == role.name]
    frags = set()
    for r in owned:
        if r.layout in (ir_pb2.FRAGMENT_LAYOUT_MMA_A, ir_pb2.FRAGMENT_LAYOUT_MMA_B):
            raise NotApplicable("role %r holds MMA operand fragments (%r)" % (role.name, r.name))
        if r.layout in _LAYOUT:
            if not r.shape or r.shape[0] != 16:
                raise NotApplicable("fragment %r does not have 16 rows" % r.name)
            frags.add(r.name)
    for _, _, op in walk_ops(role.body):
        kind = op.WhichOneof("kind")
        if kind in ("loop", "branch", "mma"):
            continue
        if any(ref.region in frags for ref in tile_refs(op)) and _uses_warp(getattr(op, kind)):
            probe = ir_pb2.Op()
            probe.CopyFrom(op)
            replace_expr(probe, WARP_ROWS, WARPGROUP_ROWS)
            if _uses_warp(getattr(probe, kind)):
                raise NotApplicable("an op moving a fragment addresses rows by `warp` other than `warp * 16`")
    return frags


def _pick(kernel, role):
    names = [role] if role is not None else [r.name for r in kernel.roles if any(
        m.kind == ir_pb2.MMA_KIND_MMA_SYNC for m in _mmas(r))]
    if not names:
        raise NotApplicable("no role runs mma.sync")
    for r in kernel.roles:
        if r.name == names[0]:
            return r
    raise NotApplicable("no role %r" % role)


def precondition(kernel, role=None):
    """(role, its fragments) mma_to_wgmma would convert; NotApplicable with the reason otherwise."""
    if not target_has(kernel, "wgmma"):
        raise NotApplicable("the target has no wgmma")
    r = _pick(kernel, role)
    return r, _check_role(kernel, r)


def _with_waits(ops):
    """`ops` (a body, edited in place) with mma_wait 0 after every run of MMAs, in nested bodies too."""
    i = 0
    while i < len(ops):
        op = ops[i]
        kind = op.WhichOneof("kind")
        if kind == "loop":
            _with_waits(op.loop.body)
        elif kind == "branch":
            _with_waits(op.branch.then_body)
            _with_waits(op.branch.else_body)
        elif kind == "mma":
            op.mma.kind = ir_pb2.MMA_KIND_WGMMA
            w = op.mma.a.window[0]
            w.start.CopyFrom(WARPGROUP_ROWS)
            w.size = 64
            nxt = ops[i + 1] if i + 1 < len(ops) else None
            if nxt is None or nxt.WhichOneof("kind") != "mma":
                ops.insert(i + 1, ir_pb2.Op(mma_wait=ir_pb2.MmaWait(pending=0)))
                i += 1
        i += 1


def _fence_generic_writes(kernel, role):
    """fence.proxy.async before the role's block barriers when generic ops write a wgmma operand tile."""
    operands = {m.a.region for m in _mmas(role)} | {m.b.region for m in _mmas(role)}
    for other in kernel.roles:
        for _, _, op in walk_ops(other.body):
            if op.WhichOneof("kind") in _GENERIC_WRITERS and any(t.region in operands for t in written_tiles(op)):
                if other.name != role.name:
                    raise NotApplicable("role %r writes wgmma operand tiles through the generic proxy" % other.name)
                break
        else:
            continue
        _fence_before_syncs(role.body)


def _fence_before_syncs(ops):
    i = 0
    while i < len(ops):
        kind = ops[i].WhichOneof("kind")
        if kind == "loop":
            _fence_before_syncs(ops[i].loop.body)
        elif kind == "branch":
            _fence_before_syncs(ops[i].branch.then_body)
            _fence_before_syncs(ops[i].branch.else_body)
        elif kind in _SYNCS:
            ops.insert(i, ir_pb2.Op(fence=ir_pb2.Fence(kind=ir_pb2.FENCE_KIND_PROXY_ASYNC)))
            i += 1
        i += 1


def mma_to_wgmma(kernel, role=None):
    """The kernel with one role's mma.sync MMAs as wgmma (see the module docstring)."""
    out = copy_kernel(kernel)
    r, frags = precondition(out, role)
    _fence_generic_writes(out, r)
    for _, _, op in walk_ops(r.body):
        kind = op.WhichOneof("kind")
        if kind not in ("loop", "branch", "mma") and any(ref.region in frags for ref in tile_refs(op)):
            replace_expr(getattr(op, kind), WARP_ROWS, WARPGROUP_ROWS)
    _with_waits(r.body)
    for region in out.regions:
        if region.name in frags:
            region.layout = _LAYOUT[region.layout]
            region.shape[0] = 64
    if r.WhichOneof("size") == "warps":
        r.warpgroups = r.warps // 4
    return out
