"""The shared-memory layout: aligned regions and stages, TMEM address slots, scratch tiles, mbarriers, total."""

from cake.ir.v1 import ir_pb2

from compiler.ir import smem_layout
from compiler.ir.builder import KernelBuilder


def test_regions_start_1024_aligned_and_stages_are_padded_by_swizzle():
    k = KernelBuilder("k", target="sm_90a")
    k.shared("small", "bf16", [10])  # 20 B, padded to 32
    k.shared("plain", "f32", [3], stages=2)  # at 1024: 2 x 16 B
    k.shared("swz", "bf16", [8, 64], stages=2, swizzle="128b")  # at 2048: 1 KB stages
    k.registers("r", "f32", [64], layout="per_thread", owner="x")  # not shared
    k.mbarrier("full", arrivals=1, count=2)
    k.named_barrier("nb", threads=128)  # a hardware barrier, no shared memory
    lay = smem_layout.layout(k.build())
    assert [(s.name, s.index, s.offset, s.stage_bytes, s.stages) for s in lay.regions] == [
        ("small", 0, 0, 32, 1),
        ("plain", 1, 1024, 16, 2),
        ("swz", 2, 2048, 1024, 2),
    ]
    assert lay.mbarriers == ((0, 4096),)
    assert lay.total == 4096 + 16


def test_tmem_slots_and_scratch_come_before_the_mbarriers():
    k = KernelBuilder("k", target="sm_100a")
    k.shared("s", "f32", [4])
    k.tensor_memory("t", "f32", [128, 64], owner="solve")
    a = k.shared("a", "f32", [16, 16])
    x = k.registers("x", "f32", [16, 8], layout="row_per_thread", owner="solve")
    k.mbarrier("bar", arrivals=1, count=3)
    with k.role("solve", "compute", warps=1) as r:
        with r.loop("i", 0, 2):
            r.tri_solve(a.all, x.all)
    lay = smem_layout.layout(k.build())
    assert [s.offset for s in lay.regions] == [0, 1024]
    assert lay.tmem_slots == ((1, 2048),)
    assert lay.scratch == (("solve", 2064, 8),)  # 16 x 8 f32
    assert lay.mbarriers == ((0, 2064 + 512),)
    assert lay.total == 2608  # 2576 + 3 x 8, rounded up to 16


def test_garbage_measures_zero():
    k = ir_pb2.Kernel(regions=[ir_pb2.Region(name="g", space=ir_pb2.MEMORY_SPACE_SHARED, shape=[-4, 8])])
    lay = smem_layout.layout(k)
    assert lay.regions[0].stage_bytes == 0 and lay.total == 0


def test_a_tma_round_delivers_the_unpadded_tiles_the_builder_counts():
    k = KernelBuilder("k", target="sm_90a")
    sx = k.shared("sX", "bf16", [64, 96], stages=3, swizzle="64b")  # 12 KiB a stage: already 1024-aligned
    col = k.shared("sCol", "f32", [65], stages=3)  # 260 B, padded to 272
    regions = k.build().regions
    assert [smem_layout.tile_bytes(r) for r in regions] == [64 * 96 * 2, 65 * 4]
    assert [smem_layout.stage_bytes(r) for r in regions] == [12288, 272]
    assert k.tile_bytes(sx, col) == 64 * 96 * 2 + 65 * 4 and k.tile_bytes() == 0


def test_stages_a_tma_copy_reads_or_writes_are_128_byte_aligned():
    k = KernelBuilder("k", target="sm_90a")
    n = k.symbol("N", min=64, max=1 << 20)
    x = k.tensor("x", "f32", [n])
    y = k.tensor("y", "f32", [n], access="write")
    loaded = k.shared("loaded", "f32", [16], stages=3)  # 64 B: a TMA destination, padded to 128
    stored = k.shared("stored", "f32", [20], stages=2)  # 80 B: a TMA store's source, padded to 128
    plain = k.shared("plain", "f32", [16], stages=3)  # 64 B, touched by no TMA copy: 16-byte stages
    bar = k.mbarrier("full", arrivals=1, count=3, tx_bytes=64)
    with k.role("load", "producer", warps=1) as r:
        r.tma_load(x[0], loaded[0], bar.round(0))
        r.tma_store(stored[0], y[0])
        r.copy(plain[0], y[64])
    lay = smem_layout.layout(k.build())
    assert [(s.name, s.stage_bytes) for s in lay.regions] == [("loaded", 128), ("stored", 128), ("plain", 64)]
    assert smem_layout.tma_regions(k.build()) == {"loaded", "stored"}
