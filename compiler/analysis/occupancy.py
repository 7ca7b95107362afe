"""Per-block resources of a schedule and the occupancy they allow on a device.

- Shared memory: what lowering lays out (compiler/ir/smem_layout.py): regions,
  1024-byte aligned, with their stages; TMEM address slots; scratch tiles for
  solves into registers; the mbarriers.
- Registers per thread: with role budgets on a target with setmaxnreg, the block's
  register pool is the sum of threads x budget over roles (a role without a budget
  counts its estimate), spread over all threads; without setmaxnreg every thread
  gets the largest role's need. A role's estimate is its register regions plus
  REGISTER_OVERHEAD for addresses, indices and loop counters. Rounded up to 8
  (the allocation granularity) and capped by 255 and by min_blocks_per_sm.
- Occupancy: blocks per SM as limited by shared memory (with the system's
  per-block reservation), registers (allocated per warp in units), threads and
  the block limit; the smallest limit names the limiter.
"""

import collections
import math

from cake.ir.v1 import ir_pb2

from compiler.analysis import tiles
from compiler.ir import smem_layout

REGISTER_OVERHEAD = 32

Occupancy = collections.namedtuple("Occupancy", "blocks_per_sm limiter limits")


def _round_up(value, unit):
    return -(-value // unit) * unit


def shared_bytes_per_block(kernel):
    """Shared memory one block uses, in bytes: lowering's layout (regions, padding, slots, scratch, mbarriers)."""
    return smem_layout.layout(kernel).total


def threads_per_block(kernel):
    return sum(tiles.role_threads(role) for role in kernel.roles)


def _estimate(kernel, role):
    owned = sum(
        tiles.registers_per_thread(r)
        for r in kernel.regions
        if r.space == ir_pb2.MEMORY_SPACE_REGISTER and r.owner == role.name
    )
    return owned + REGISTER_OVERHEAD


def registers_per_thread(kernel, device, setmaxnreg):
    """Registers per thread the block is launched with (see the module doc)."""
    threads = threads_per_block(kernel)
    needs = [(tiles.role_threads(r), r.registers if r.registers > 0 else _estimate(kernel, r)) for r in kernel.roles]
    if not needs or threads == 0:
        return 0
    if setmaxnreg and any(r.registers > 0 for r in kernel.roles):
        regs = math.ceil(sum(t * n for t, n in needs) / threads)
    else:
        regs = max(n for _, n in needs)
    cap = device.registers_per_thread_max
    min_blocks = kernel.launch.min_blocks_per_sm
    if min_blocks > 0:
        # __launch_bounds__(threads, min_blocks): ptxas caps registers (spilling the rest).
        cap = min(cap, device.registers_per_sm // (min_blocks * threads) // 8 * 8)
    return max(0, min(_round_up(regs, 8), cap))


def occupancy(device, shared_bytes, registers, threads):
    """Occupancy(blocks_per_sm, limiter, limits): limits maps each resource to the blocks it allows."""
    if shared_bytes > device.shared_per_block_bytes:
        by_shared = 0
    else:
        by_shared = device.shared_per_sm_bytes // (shared_bytes + device.shared_reserved_per_block_bytes)
    warps = -(-threads // 32)
    per_warp = _round_up(registers * 32, device.register_allocation_unit)
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
