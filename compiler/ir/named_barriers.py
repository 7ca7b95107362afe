"""Hardware ids of named barriers: THE assignment lowering emits and the verifier checks.

Id 0 is block_sync's (bar.sync 0). Named barriers take consecutive ids from 1 in
declaration order, `count` ids each (an array); then every role that solves into
registers takes one more for its scratch hand-off (compiler/ir/smem_layout.py's
scratch tiles), in role order. The target's named_barriers_max bounds the ids
(compiler/targets): the verifier reports the first id past it (CAKE-RES-007), and
lowering refuses it.
"""

import collections

from cake.ir.v1 import ir_pb2

# One holder of ids: a named barrier (by declaration index) or a role's scratch hand-off (by role index).
Ids = collections.namedtuple("Ids", "kind index name first count")
BARRIER, SCRATCH = "barrier", "scratch"


def assign(kernel, layout):
    """[Ids] in id order; `layout` is the kernel's compiler/ir/smem_layout.layout (its scratch roles)."""
    out, next_id = [], 1
    for i, b in enumerate(kernel.barriers):
        if b.kind == ir_pb2.BARRIER_KIND_NAMED:
            out.append(Ids(BARRIER, i, b.name, next_id, max(1, b.count)))
            next_id += max(1, b.count)
    scratch = {name for name, _, _ in layout.scratch}
    for i, role in enumerate(kernel.roles):
        if role.name in scratch:
            out.append(Ids(SCRATCH, i, role.name, next_id, 1))
            next_id += 1
    return out


def first_past(ids, limit):
    """The first Ids whose last id is `limit` or more (ids run 1 .. limit - 1), or None."""
    return next((h for h in ids if h.first + h.count - 1 >= limit), None)
