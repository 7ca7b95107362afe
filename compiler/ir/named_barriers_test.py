"""Named-barrier ids: 0 is block_sync's; arrays take consecutive ids, then each scratch hand-off one."""

from compiler.ir import named_barriers, smem_layout
from compiler.ir.builder import KernelBuilder


def _kernel(counts):
    k = KernelBuilder("k", target="sm_90a")
    for i, n in enumerate(counts):
        k.named_barrier("nb%d" % i, threads=128, count=n)
    k.mbarrier("full", arrivals=1)  # not a named barrier: no id
    return k.build()


def test_arrays_take_consecutive_ids_from_1():
    k = _kernel([1, 4, 2])
    ids = named_barriers.assign(k, smem_layout.layout(k))
    assert [(h.name, h.first, h.count) for h in ids] == [("nb0", 1, 1), ("nb1", 2, 4), ("nb2", 6, 2)]
    assert named_barriers.first_past(ids, 16) is None


def test_the_first_holder_past_the_limit_is_named():
    k = _kernel([8, 7, 1])  # ids 1..8, 9..15, then 16: one past the 16 hardware barriers
    over = named_barriers.first_past(named_barriers.assign(k, smem_layout.layout(k)), 16)
    assert (over.kind, over.index, over.first) == (named_barriers.BARRIER, 2, 16)
