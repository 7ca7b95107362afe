"""Fragment registers by layout, and the live peak a role needs (fragments live together)."""

from cake.ir.v1 import ir_pb2

from compiler.ir import fragments
from compiler.ir.builder import KernelBuilder
from kernels.gemm.schedules import gemm_sm90a


def _region(shape, layout, dtype=ir_pb2.DTYPE_F32):
    return ir_pb2.Region(name="r", space=ir_pb2.MEMORY_SPACE_REGISTER, dtype=dtype, shape=shape, layout=layout)


def test_values_and_registers_per_thread_by_layout():
    L = ir_pb2.FragmentLayout
    cases = [
        ([64, 256], L.FRAGMENT_LAYOUT_WGMMA_ACC, 128),  # 128 threads share the tile
        ([64], L.FRAGMENT_LAYOUT_WGMMA_ROWS, 2),
        ([64, 4], L.FRAGMENT_LAYOUT_WGMMA_ROWS, 8),
        ([64, 32], L.FRAGMENT_LAYOUT_MMA_ACC, 64),  # 32 threads share the tile
        ([32], L.FRAGMENT_LAYOUT_MMA_ROWS, 4),
        ([128, 8], L.FRAGMENT_LAYOUT_ROW_PER_THREAD, 8),
        ([3, 5], L.FRAGMENT_LAYOUT_PER_THREAD, 15),
    ]
    for shape, layout, values in cases:
        assert fragments.values_per_thread(_region(shape, layout)) == values
        assert fragments.registers_per_thread(_region(shape, layout)) == values  # f32: one register each
    packed = _region([64, 16], L.FRAGMENT_LAYOUT_MMA_A, ir_pb2.DTYPE_BF16)
    assert (fragments.values_per_thread(packed), fragments.registers_per_thread(packed)) == (32, 16)
    assert fragments.values_per_thread(_region([64, 0], L.FRAGMENT_LAYOUT_WGMMA_ACC)) == 0
    assert fragments.values_per_thread(_region([], L.FRAGMENT_LAYOUT_PER_THREAD)) == 0


def test_the_gemm_consumer_needs_its_accumulator():
    k = gemm_sm90a()  # a [64, 256] f32 accumulator per consumer warpgroup
    consumer = [r.name for r in k.roles].index("mma")
    peak, live = fragments.live_peak(k, consumer)
    assert (peak, live) == (128, {"acc": 128})
    assert fragments.live_peak(k, 1 - consumer)[0] == 0  # the producer holds no fragments


def test_fragments_not_live_together_do_not_add_up():
    k = KernelBuilder("k", target="sm_90a")
    a = k.registers("a", "f32", [8], layout="per_thread", owner="main")
    b = k.registers("b", "f32", [16], layout="per_thread", owner="main")
    with k.role("main", "compute", warps=1) as r:
        r.fill(a.all, 0.0)
        r.ew("add", a.all, a.all, a.all)  # a's last use
        r.fill(b.all, 0.0)
        r.ew("add", b.all, b.all, b.all)
    assert fragments.live_peak(k.build(), 0) == (16, {"b": 16})
