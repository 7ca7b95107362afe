"""Where roles sit in a block: THE derivation of warps, threads and the block size.

Roles take consecutive warps in declaration order; a role sized in warpgroups starts
at a warpgroup boundary (wgmma and setmaxnreg act on aligned warpgroups, ir.proto's
Role), so the warps before it are padding. The block is the warps up to the end of
the last role: `block_threads` is what lowering launches (__launch_bounds__ and the
launch metadata), what the verifier and the cost model check against the target's
limits, and what register budgets are divided over. A role whose size is unset or
not positive has no warps here; the verifier reports it, lowering refuses it.
"""

import dataclasses

WARP = 32
WARPS_PER_WARPGROUP = 4


def role_warps(role):
    """Warps of a role (0 when its size is unset or not positive)."""
    size = role.WhichOneof("size")
    if size == "warps":
        return max(0, role.warps)
    if size == "warpgroups":
        return WARPS_PER_WARPGROUP * max(0, role.warpgroups)
    return 0


def role_threads(role):
    """Threads of a role (0 when its size is unset or not positive)."""
    return WARP * role_warps(role)


@dataclasses.dataclass(frozen=True)
class RoleSpan:
    """Where a role sits in the block: its first warp and its warps."""

    first_warp: int
    warps: int

    @property
    def threads(self):
        return WARP * self.warps


def role_spans(kernel):
    """One RoleSpan per role, in declaration order."""
    spans, warp = [], 0
    for role in kernel.roles:
        if role.WhichOneof("size") == "warpgroups":
            warp = -(-warp // WARPS_PER_WARPGROUP) * WARPS_PER_WARPGROUP
        spans.append(RoleSpan(warp, role_warps(role)))
        warp += role_warps(role)
    return spans


def block_threads(kernel, spans=None):
    """Threads per block: up to the end of the last role (warpgroup padding included)."""
    spans = role_spans(kernel) if spans is None else spans
    return WARP * (spans[-1].first_warp + spans[-1].warps) if spans else 0
