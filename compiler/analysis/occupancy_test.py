"""Tests of shared memory, registers, threads and occupancy."""

from compiler.analysis import occupancy
from compiler.ir.builder import KernelBuilder
from compiler.targets import database, registers
from compiler.testing import analysis_kernels
from kernels.gemm.schedules import gemm_sm90a

H200 = database.device_for("sm_90a")


def test_shared_memory_is_what_a_launch_of_lowerings_layout_requests():
    k = KernelBuilder("k", target="sm_90a")
    k.shared("small", "bf16", [10])  # at 0: 20 B
    k.shared("plain", "f32", [3], stages=2)  # at 1024 (every region starts 1024-aligned): 2 x 16 B
    k.shared("swz", "bf16", [64, 64], stages=2, swizzle="128b")  # at 2048: 16 KB
    k.registers("r", "f32", [64], layout="per_thread", owner="x")  # not shared
    k.mbarrier("full", arrivals=1, count=2)
    k.named_barrier("nb", threads=128)  # hardware, not shared memory
    # ... then 2 mbarriers, and the 1024 bytes of slack that align the carve-up's base at run time.
    assert occupancy.shared_bytes_per_block(k.build()) == 2048 + 2 * 64 * 64 * 2 + 2 * 8 + 1024


def test_gemm_ring_of_four_128x256x64_stages_allows_one_block_per_sm():
    k = gemm_sm90a()
    shared = occupancy.shared_bytes_per_block(k)
    registers = occupancy.registers_per_thread(k, H200, setmaxnreg=True)
    occ = occupancy.occupancy(H200, shared, registers, occupancy.threads_per_block(k))
    assert (occ.blocks_per_sm, occ.limiter) == (1, "shared")
    assert occ.limits["shared"] == 1 and occ.limits["threads"] == 5


def test_two_stage_ring_is_limited_by_registers():
    k = gemm_sm90a(bm=128, bn=128, stages=2)
    shared = occupancy.shared_bytes_per_block(k)  # 64 KB: three blocks would fit
    occ = occupancy.occupancy(H200, shared, 168, 384)
    assert (occ.blocks_per_sm, occ.limiter) == (1, "registers")


def test_role_budgets_start_every_thread_at_the_launch_budget():
    k = gemm_sm90a()
    # 65536 / 384 threads, in steps of 8: what ptxas reports for the budgeted GEMM
    assert occupancy.registers_per_thread(k, H200, setmaxnreg=True) == 168
    # without setmaxnreg every thread gets the largest role's need: 128 accumulator registers + 32
    assert occupancy.registers_per_thread(k, H200, setmaxnreg=False) == 128 + registers.role_overhead("sm_90a")
    assert occupancy.register_problem(k, H200, setmaxnreg=True) is None


def test_budgets_over_the_launch_pool_do_not_fit():
    k = gemm_sm90a()
    k.roles[0].registers = 48  # 128 x 48 + 256 x 232 = 65,536: under the SM's file, over the 64,512 launched
    assert "over the 64512" in occupancy.register_problem(k, H200, setmaxnreg=True)
    k.roles[0].registers = 40
    k.roles[1].registers = 152  # below the consumer's 128 fragment registers + 32
    assert "role mma needs 160" in occupancy.register_problem(k, H200, setmaxnreg=True)


def test_registers_are_estimated_from_register_regions():
    k = analysis_kernels.copy_rows(cols=64)  # 64 f32 per thread + overhead
    assert occupancy.registers_per_thread(k, H200, setmaxnreg=True) == 64 + registers.role_overhead("sm_90a")
    wide = analysis_kernels.copy_rows(cols=512)
    assert occupancy.registers_per_thread(wide, H200, setmaxnreg=True) == 255  # the hardware cap


def test_min_blocks_per_sm_caps_registers():
    k = analysis_kernels.copy_rows(cols=512)
    k.launch.min_blocks_per_sm = 4  # 65536 / (4 x 128) = 128
    assert occupancy.registers_per_thread(k, H200, setmaxnreg=True) == 128


def test_threads_and_block_limits():
    assert occupancy.occupancy(H200, 0, 32, 2048).limiter == "threads"
    assert occupancy.occupancy(H200, 0, 32, 2048).blocks_per_sm == 0  # over 1024 threads per block
    small = occupancy.occupancy(H200, 0, 16, 32)
    assert (small.blocks_per_sm, small.limiter) == (32, "blocks")
    too_big = occupancy.occupancy(H200, H200.shared_per_block_bytes + 1, 32, 128)
    assert (too_big.blocks_per_sm, too_big.limiter) == (0, "shared")
