"""Whether a block fits its target: threads, shared memory, the register pool, each role's registers."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.targets import database, fits
from compiler.verify import verify
from kernels.gemm.schedules import gemm_sm90a

H200 = database.limits("sm_90a")


def _errors(kernel):
    return sorted({d.id for d in verify(kernel) if d.id in ("CAKE-RES-001", "CAKE-RES-002", "CAKE-RES-004",
                                                              "CAKE-RES-005")})


def test_a_schedule_that_verifies_fits():
    assert fits.shortfalls(gemm_sm90a()) == [] and fits.fits(gemm_sm90a())


def test_too_deep_a_ring_is_short_of_shared_memory():
    k = gemm_sm90a(stages=8)  # 8 x (128 x 64 + 256 x 64) bf16 tiles: 384 KiB
    [why] = fits.shortfalls(k)
    assert "bytes of shared memory requested, over the %d a block may have" % H200.shared_per_block_bytes in why
    assert _errors(k) == ["CAKE-RES-001"]


def test_budgets_over_the_pool_and_a_role_short_of_its_fragments_are_each_named():
    k = gemm_sm90a()
    k.roles[0].registers = 256  # the producer takes more than the pool leaves the consumers
    assert fits.shortfalls(k) == ["role budgets take %d registers, over the %d the block is launched with"
                                  % (256 * 128 + 232 * 256, 384 * 168)]
    assert _errors(k) == ["CAKE-RES-004"]
    k = gemm_sm90a()
    k.roles[1].registers = 64  # the consumers' accumulators need more
    [why] = fits.shortfalls(k)
    assert why.startswith("role %s needs " % k.roles[1].name) and why.endswith("over its budget of 64")
    assert _errors(k) == ["CAKE-RES-005"]


def test_a_block_past_the_thread_limit_is_only_that():
    k = gemm_sm90a()
    k.roles[1].warps = 64
    assert fits.shortfalls(k) == ["%d threads per block; sm_90a allows 1 to 1024" % (32 * (4 + 64))]
    assert "CAKE-RES-002" in _errors(k)


def test_a_kernel_without_a_known_target_is_refused():
    k = gemm_sm90a()
    k.target = ir_pb2.TARGET_UNSPECIFIED
    with pytest.raises(ValueError, match="no target CAKE compiles for"):
        fits.shortfalls(k)
