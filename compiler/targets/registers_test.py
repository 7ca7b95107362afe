"""Register budgets: the launch budget ptxas compiles to, the setmaxnreg pool, legal budgets."""

from compiler.targets import database, registers
from kernels.gemm.schedules import gemm_sm90a

H200 = database.limits("sm_90a")


def test_the_launch_budget_is_the_file_over_the_threads_in_steps_of_8_at_most_255():
    # What ptxas 13.0 reports for budgeted kernels: 168 (GEMM, 384 threads), 96 (KMeans, 640)
    assert registers.launch_budget(384, 1, H200) == 168
    assert registers.launch_budget(640, 1, H200) == 96
    # 128 or 256 threads: the per-thread maximum, not 248
    assert registers.launch_budget(128, 1, H200) == 255
    assert registers.launch_budget(256, 1, H200) == 255
    assert registers.launch_budget(128, 4, H200) == 128  # __launch_bounds__(128, 4)
    assert registers.launch_budget(0, 1, H200) == 0


def test_the_pool_is_what_the_block_is_launched_with():
    k = gemm_sm90a()  # producer 40 x 128, consumers 232 x 256
    assert registers.pool(k, H200) == 384 * 168 == 64512
    assert registers.pool_use(k, H200) == [40 * 128, 232 * 256]
    k.roles[0].registers = 0  # a role without a budget keeps the launch budget
    assert registers.pool_use(k, H200) == [168 * 128, 232 * 256]


def test_setmaxnreg_budgets_and_the_role_overhead_come_from_the_database():
    legal = registers.setmaxnreg("sm_90a")
    assert [v for v in range(0, 300) if legal.legal(v)] == list(range(24, 257, 8))
    assert registers.setmaxnreg("sm_100a") == legal
    assert registers.setmaxnreg("sm_80") is None
    assert registers.role_overhead("sm_90a") == 32
    assert "ptxas" in database.target_facts("sm_90a").sources["role_register_overhead"]


def test_consumers_share_what_the_producer_leaves_of_the_pool_in_legal_budgets():
    # 384 threads start at 168: a 40-register producer warpgroup leaves (64512 - 5120) / 256 = 232 per consumer
    assert registers.producer_consumer_split("sm_90a", 128, 40, 256) == (40, 232)
    assert registers.producer_consumer_split("sm_90a", 128, 24, 512) == (24, 112)  # 640 threads start at 96: 58368 left over 512
    assert registers.producer_consumer_split("sm_90a", 128, 40, 128, cap=240) == (40, 240)  # 464 left: capped
    assert registers.share(10_000, 48, "sm_90a") == 208  # 208.3 rounded down to a multiple of 8
    assert registers.share(100_000, 128, "sm_90a") == 256  # never above setmaxnreg's maximum
