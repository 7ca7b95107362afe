"""Schedule idioms shared by the GEMM-shaped kernels (GEMM, KMeans assignment, KNN top-k, KDA).

Each helper emits the ops of one well-known protocol, so every schedule spells it the
same way and the verifier sees one shape of it:
- `init_barriers`: thread 0 of a role initialises mbarriers and fences the init for
  the async proxy; then the whole block meets at bar.sync 0 (every other role calls
  `block_sync` once at entry to meet it).
- `cp_async_ring`: the sm_80 multi-stage cp.async ring (no mbarriers): a prologue
  fills stages - 1 slots, each round waits for its own groups, syncs the block and
  refills the slot the previous round freed.
- `swizzle_for`: the widest shared-memory swizzle a tile row allows.
"""

import contextlib

from cake.ir.v1 import ir_pb2

from compiler.ir.dtypes import element_bytes, widest_swizzle
from compiler.ir.enums import short_name


def init_barriers(r, *barriers):
    """Thread 0 initialises `barriers` and fences the init; then bar.sync 0 for the whole block."""
    with r.if_(r.thread == 0):
        for b in barriers:
            r.mbarrier_init(b)
        r.fence("mbarrier_init")
    r.block_sync()


def swizzle_for(cols, dtype):
    """The short name of the widest swizzle whose span divides a tile row of `cols` elements of `dtype`
    (compiler/ir/dtypes.py's spans and element sizes)."""
    return short_name(ir_pb2.Swizzle.DESCRIPTOR, widest_swizzle(cols * element_bytes(dtype)))


@contextlib.contextmanager
def cp_async_ring(r, var, rounds, stages, groups, issue):
    """A cp.async ring of `stages` slots over `rounds` rounds; yields the round ready in shared memory.

    `issue(round)` emits the round's cp_async ops (each is one commit group; there are
    `groups` of them) into slot round % stages. Round t waits until its groups landed:
    the groups of the stages - 2 rounds issued after it may stay in flight, except
    near the end where fewer were issued (then it waits for all). The block sync makes
    every thread's copies visible and guarantees the slot refilled next (round
    t + stages - 1, slot (t - 1) % stages) is no longer read by round t - 1.
    """
    with r.loop(var + "_fill", 0, stages - 1) as s:
        with r.if_(s < rounds):
            issue(s)
    with r.loop(var, 0, rounds) as t:
        if stages > 2:
            with r.if_(t + (stages - 2) < rounds):
                r.cp_async_wait(groups * (stages - 2))
            with r.else_():
                r.cp_async_wait(0)
        else:
            r.cp_async_wait(0)
        r.block_sync()
        with r.if_(t + (stages - 1) < rounds):
            issue(t + (stages - 1))
        yield t
