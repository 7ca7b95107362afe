"""Role placement: consecutive warps, warpgroup roles aligned, the block up to the last role."""

from compiler.ir import roles
from compiler.ir.builder import KernelBuilder


def _kernel(*sizes):
    k = KernelBuilder("k", target="sm_90a")
    for i, size in enumerate(sizes):
        with k.role("r%d" % i, "compute", **size):
            pass
    return k.build()


def test_a_warpgroup_role_starts_at_a_warpgroup_boundary():
    k = _kernel(dict(warps=1), dict(warpgroups=2), dict(warps=3))
    assert [(s.first_warp, s.warps) for s in roles.role_spans(k)] == [(0, 1), (4, 8), (12, 3)]
    assert roles.block_threads(k) == 32 * 15  # the padding warps 1..3 launch too; no padding after the last role


def test_unset_or_negative_sizes_have_no_warps():
    k = _kernel(dict(warps=2), dict(warps=1))
    k.roles[1].warps = -3
    k.roles.add(name="unsized")
    assert [roles.role_warps(r) for r in k.roles] == [2, 0, 0]
    assert roles.role_threads(k.roles[0]) == 64
    assert roles.block_threads(k) == 64


def test_no_roles_no_threads():
    assert roles.block_threads(KernelBuilder("k", target="sm_90a").build()) == 0
