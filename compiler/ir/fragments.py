"""Register fragments: how many elements, and 32-bit registers, each owner thread holds of a register
region, by its fragment layout (FragmentLayout in ir.proto). THE derivation: lowering declares
that many elements per thread, the verifier's register rules and the cost model count those
registers, and the build blames spills on the role they overflow.

- WGMMA_ACC [64, N]: a warpgroup's 128 threads share the tile, N / 2 each.
- WGMMA_ROWS [64] or [64, k]: each thread's quad holds two of the 64 rows, 2 k each.
- WGMMA_COLS [N] or [N, k]: the columns of a [64, N] accumulator, N / 4 k each.
- MMA_ACC, MMA_A, MMA_B [r, c]: a warp's 32 threads share the tile, r c / 32 each
  (A and B are packed operands: two 16-bit values to a register).
- MMA_ROWS [16 i] or [16 i, k]: two rows per 16-row block, 2 i k each.
- ROW_PER_THREAD [threads] or [threads, k]: thread t holds row t, k each.
- PER_THREAD (or unset): every owner thread holds the whole shape.
A shape with no dimensions or a non-positive one holds nothing (the verifier reports it).

`live_peak` is what a role needs for its fragments: the most registers of fragments live
together in its program; a role needs that plus compiler/targets/registers.role_overhead.
"""

import math

from cake.ir.v1 import ir_pb2

from compiler.ir import oprefs
from compiler.ir.dtypes import DTYPE_BYTES
from compiler.ir.expr import constant

L = ir_pb2.FragmentLayout
REGISTER_BYTES = 4
# Threads sharing one copy of a register region's shape, by fragment layout: the shape is per
# warpgroup (WGMMA_*), per warp (MMA_*) or per thread (PER_THREAD); ROW_PER_THREAD spreads one
# tile over the whole owner role (absent here).
UNIT_THREADS = {
    L.FRAGMENT_LAYOUT_PER_THREAD: 1,
    L.FRAGMENT_LAYOUT_WGMMA_ACC: 128,
    L.FRAGMENT_LAYOUT_WGMMA_ROWS: 128,
    L.FRAGMENT_LAYOUT_WGMMA_COLS: 128,
    L.FRAGMENT_LAYOUT_MMA_ACC: 32,
    L.FRAGMENT_LAYOUT_MMA_ROWS: 32,
    L.FRAGMENT_LAYOUT_MMA_A: 32,
    L.FRAGMENT_LAYOUT_MMA_B: 32,
}


def values_per_thread(region):
    """Elements of `region` (a register region) one owner thread holds."""
    s = list(region.shape)
    if not s or any(d <= 0 for d in s):
        return 0
    rest = math.prod(s[1:])
    layout = region.layout
    if layout == L.FRAGMENT_LAYOUT_WGMMA_ACC:
        return math.prod(s) // UNIT_THREADS[layout]
    if layout == L.FRAGMENT_LAYOUT_WGMMA_ROWS:
        return 2 * rest
    if layout == L.FRAGMENT_LAYOUT_WGMMA_COLS:
        return s[0] // 4 * rest
    if layout in (L.FRAGMENT_LAYOUT_MMA_ACC, L.FRAGMENT_LAYOUT_MMA_A, L.FRAGMENT_LAYOUT_MMA_B):
        return math.prod(s) // UNIT_THREADS[layout]
    if layout == L.FRAGMENT_LAYOUT_MMA_ROWS:
        return 2 * (s[0] // 16) * rest
    if layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
        return rest
    return math.prod(s)


def registers_per_thread(region):
    """32-bit registers one owner thread spends on `region` (an unknown dtype counts a register per value)."""
    return -(-values_per_thread(region) * DTYPE_BYTES.get(region.dtype, REGISTER_BYTES) // REGISTER_BYTES)




def role_sites(kernel, role_index):
    """(path, kind, message) of every op of one role, nested bodies included, in program order."""
    out = []

    def walk(body, prefix):
        for i, op in enumerate(body[:]):  # (a slice: iterating a protobuf container ends in a raised IndexError)
            kind = op.WhichOneof("kind")
            msg = getattr(op, kind) if kind else None
            path = "%s[%d].%s" % (prefix, i, kind) if kind else "%s[%d]" % (prefix, i)
            out.append((path, kind, msg))
            if kind == "loop":
                walk(msg.body, path + ".body")
            elif kind == "branch":
                walk(msg.then_body, path + ".then_body")
                walk(msg.else_body, path + ".else_body")

    walk(kernel.roles[role_index].body, "kernel.roles[%d].body" % role_index)
    return out


def _register_accesses(regions, kind, msg, tiles):
    """(region name, reads it first) of each register operand of one op (`tiles`: its oprefs.tiles)."""
    out = []
    for field, ref, access in tiles:
        region = regions.get(ref.region)
        if region is None or region.space != ir_pb2.MEMORY_SPACE_REGISTER:
            continue
        reads = access != oprefs.W
        if kind == "mma" and field == "acc":
            reads = msg.HasField("accumulate") and constant(msg.accumulate) != 0
        out.append((ref.region, reads))
    return out


def live_peak(kernel, role_index, sites=None):
    """(peak registers of the fragments live together, {region: registers} live at the peak) of one role.

    Fragments are counted where they are live, as ptxas allocates them: a fragment lives
    from its first to its last access in program order, across a whole loop when it is
    used both inside and outside it or carried from one iteration to the next (its first
    access in the loop reads it). `sites` ((path, kind, message) in program order, as
    role_sites gives them) lets a caller that walked the role already pass its walk, each op with its
    oprefs.tiles as a fourth element where the caller has them.
    """
    sites = role_sites(kernel, role_index) if sites is None else sites
    regions = {}
    for r in kernel.regions:
        regions.setdefault(r.name, r)
    loops = []
    for p, site in enumerate(sites):
        path, kind = site[0], site[1]
        if kind == "loop":
            q, prefix = p, path + "."
            while q + 1 < len(sites) and sites[q + 1][0].startswith(prefix):
                q += 1
            loops.append((p, q))
    spans, first_read = {}, {}
    for p, site in enumerate(sites):
        kind, msg = site[1], site[2]
        if msg is None:
            continue
        tiles = site[3] if len(site) > 3 else oprefs.tiles(kind, msg)
        for name, reads in _register_accesses(regions, kind, msg, tiles):
            lo, hi = spans.get(name, (p, p))
            spans[name] = (min(lo, p), max(hi, p))
            for ls, le in loops:  # does this region's first access inside each loop read it?
                if ls <= p <= le:
                    first_read.setdefault((name, ls), reads)
    changed = True
    while changed:
        changed = False
        for name, (lo, hi) in list(spans.items()):
            for ls, le in loops:
                crosses = (lo < ls <= hi) or (lo <= le < hi)
                carried = ls <= lo and hi <= le and first_read.get((name, ls))
                if (crosses or carried) and (lo > ls or hi < le):
                    lo, hi = min(lo, ls), max(hi, le)
                    changed = True
            spans[name] = (lo, hi)
    size = {name: registers_per_thread(regions[name]) for name in spans}
    change = [0] * (len(sites) + 1)  # the registers live at p: the sum of change[:p + 1]
    for name, (lo, hi) in spans.items():
        change[lo] += size[name]
        change[hi + 1] -= size[name]
    peak, at, total = 0, {}, 0
    for p in range(len(sites)):
        total += change[p]
        if total > peak:
            peak, at = total, {n: size[n] for n, (lo, hi) in spans.items() if lo <= p <= hi}
    return peak, at
