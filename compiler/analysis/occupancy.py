"""Per-block resources of a schedule and the occupancy they allow on a device.

- Shared memory: what lowering lays out (compiler/ir/smem_layout.py): regions,
  1024-byte aligned, with their stages; TMEM address slots; scratch tiles for
  solves into registers; the mbarriers.
- Registers per thread (compiler/targets/registers.py): with role budgets on a target
  with setmaxnreg, the launch budget (ptxas compiles such kernels to the launch bounds'
  count, and setmaxnreg moves registers within it); otherwise every thread gets the
  largest role's need (its live fragments, compiler/ir/fragments.py, plus the target's
  role overhead) in allocation steps, at most the launch budget. `register_problem`
  says when budgets over-commit the pool or a role needs more than its budget (what
  the verifier's CAKE-RES-004 and CAKE-RES-005 report).
- Occupancy: blocks per SM as limited by shared memory (with the system's
  per-block reservation), registers (allocated per warp in units), threads and
  the block limit; the smallest limit names the limiter.
"""

import collections

from compiler.ir import roles, smem_layout
from compiler.targets import registers

Occupancy = collections.namedtuple("Occupancy", "blocks_per_sm limiter limits")


def _round_up(value, unit):
    return -(-value // unit) * unit


def shared_bytes_per_block(kernel):
    """Shared memory one block uses, in bytes: what its launch requests for lowering's layout (regions, padding,
    slots, scratch, mbarriers, the base's alignment slack)."""
    return smem_layout.layout(kernel).requested


def threads_per_block(kernel):
    """Threads lowering launches (compiler/ir/roles.py: warpgroup roles start aligned)."""
    return roles.block_threads(kernel)


def role_needs(kernel, target_name):
    """Registers per thread each role needs (compiler/targets/registers.role_need)."""
    return [registers.role_need(kernel, i, target_name)[0] for i in range(len(kernel.roles))]


def registers_per_thread(kernel, device, setmaxnreg):
    """Registers per thread the block is launched with (see the module doc)."""
    entry = registers.kernel_launch_budget(kernel, device.limits)
    if setmaxnreg and any(r.registers > 0 for r in kernel.roles):
        return entry
    step = device.register_allocation_unit // roles.WARP
    return min(_round_up(max(role_needs(kernel, device.target), default=0), step), entry)


def register_problem(kernel, device, setmaxnreg):
    """Why the roles' registers do not fit the launch (the verifier's CAKE-RES-004/005), or None."""
    threads = threads_per_block(kernel)
    if not 0 < threads <= device.threads_per_block_max:
        return None  # the block does not launch at all: occupancy says so
    budgeted = setmaxnreg and any(r.registers > 0 for r in kernel.roles)
    if budgeted:
        pool = registers.pool(kernel, device.limits)
        use = sum(registers.pool_use(kernel, device.limits))
        if use > pool:
            return "role register budgets need %d registers, over the %d the block is launched with" % (use, pool)
    for i, need, budget, _ in registers.short_roles(kernel, device.limits, device.target, setmaxnreg)[:1]:
        return "role %s needs %d registers per thread (live fragments and overhead) but has %d" % (
            kernel.roles[i].name, need, budget)
    return None


def occupancy(device, shared_bytes, registers, threads):
    """Occupancy(blocks_per_sm, limiter, limits): limits maps each resource to the blocks it allows."""
    if shared_bytes > device.shared_per_block_bytes:
        by_shared = 0
    else:
        by_shared = device.shared_per_sm_bytes // (shared_bytes + device.shared_reserved_per_block_bytes)
    warps = -(-threads // roles.WARP)
    per_warp = _round_up(registers * roles.WARP, device.register_allocation_unit)
    by_registers = device.registers_per_sm // (per_warp * warps) if per_warp and warps else device.blocks_per_sm_max
    by_threads = device.threads_per_sm_max // threads if 0 < threads <= device.threads_per_block_max else 0
    limits = {
        "shared": by_shared,
        "registers": by_registers,
        "threads": by_threads,
        "blocks": device.blocks_per_sm_max,
    }
    limiter = min(limits, key=limits.get)  # ties: the first in this order
    return Occupancy(limits[limiter], limiter, limits)
