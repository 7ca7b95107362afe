"""Register budgets: what a launch allocates, what setmaxnreg may move, what a role needs.

The one derivation the verifier (CAKE-RES-003/004/005), the cost model (registers
and occupancy), lowering (setmaxnreg at role entry), the build (spill diagnostics),
the agent's register rewrites and the tuned schedules share.

- At launch (`launch_budget`): under __launch_bounds__(T, B) ptxas compiles a kernel
  to at most the register file over T x B threads, rounded down to the allocation
  step (registers go to warps in units of 256, 8 per thread) and never above the
  per-thread maximum (255). A kernel that sets budgets starts every thread at that
  count: ptxas 13.0 reports 168 for the 384-thread GEMM and 96 for the 640-thread
  KMeans assignment, and 255 for 128 or 256 threads. (Rounding the 255 down to 248, as
  a multiple of 8, undercounts: 255 is a per-thread count the hardware allocates as 256.)
- The pool (`pool`): setmaxnreg.dec releases registers into a per-CTA pool and
  setmaxnreg.inc waits until the pool holds what it asks for (PTX ISA, setmaxnreg), so
  the pool is what the CTA was launched with, T x the launch budget. Role budgets
  times their threads (a role without a budget keeps the launch budget) must sum to at
  most that, or setmaxnreg.inc waits forever. (Comparing the sum with the SM's 65,536
  registers instead admits over-commits whenever T x B does not divide the file:
  62,464 passes for 640 threads whose pool is 61,440; averaging the sum over the
  threads and rounding up to 8 refuses pools that are exactly full.)
- Legal budgets (`setmaxnreg`): multiples of 8 in [24, 256] (PTX ISA), per target.
- Sharing the pool (`share`, `producer_consumer_split`): what roles leave of the pool,
  split evenly over other threads and rounded down to a legal budget; warp-specialized
  schedules and the agent's rebalancing rewrite give their consumers this.
- A role's need beyond its fragments (`role_overhead`): addresses, loop counters,
  descriptors and predicates, measured with ptxas (the database's source says how).
  What a role needs (`role_need`) is its live fragments (compiler/ir/fragments.py) plus
  that; `short_roles` are the roles holding fragments whose need exceeds their budget
  (the verifier's CAKE-RES-005, the cost model's refusal, the schedules' fit checks).
"""

from compiler.ir import fragments, roles
from compiler.targets import database


def launch_budget(threads, min_blocks, limits):
    """Registers per thread a block of `threads` starts with when `min_blocks` must fit per SM."""
    if threads <= 0:
        return 0
    step = limits.register_allocation_unit // roles.WARP
    per_thread = limits.registers_per_sm // (threads * max(1, min_blocks)) // step * step
    return min(limits.registers_per_thread_max, per_thread)


def kernel_launch_budget(kernel, limits, spans=None):
    """launch_budget of `kernel`'s block (its threads, its launch's min_blocks_per_sm)."""
    return launch_budget(roles.block_threads(kernel, spans), kernel.launch.min_blocks_per_sm, limits)


def pool(kernel, limits, spans=None):
    """Registers the block is launched with: what setmaxnreg can move between its roles."""
    return roles.block_threads(kernel, spans) * kernel_launch_budget(kernel, limits, spans)


def role_budgets(kernel, limits, spans=None, setmaxnreg=True):
    """Each role's registers per thread: its budget, or the launch budget when it sets none (or when the
    target has no setmaxnreg: a budget there is CAKE-TARGET-008's error, and ptxas gives every thread the same)."""
    entry = kernel_launch_budget(kernel, limits, spans)
    return [(role.registers if setmaxnreg else 0) or entry for role in kernel.roles]


def pool_use(kernel, limits, spans=None):
    """[registers per role: budget x threads]; their sum must not exceed `pool`."""
    spans = roles.role_spans(kernel) if spans is None else spans
    return [b * s.threads for b, s in zip(role_budgets(kernel, limits, spans), spans)]


def share(left, threads, target_name, cap=None):
    """Registers per thread when `threads` threads split `left` registers of the pool evenly: rounded down to
    setmaxnreg's step and at most `cap` (setmaxnreg's maximum when None)."""
    legal = setmaxnreg(target_name)
    cap = legal.maximum if cap is None else min(cap, legal.maximum)
    return min(cap, left // max(1, threads) // legal.step * legal.step)


def producer_consumer_split(target_name, producer_threads, producer, consumer_threads, cap=None):
    """(producer, consumer) budgets of a block of one producer role holding `producer` registers per thread
    and consumer roles sharing what it leaves of the launch pool (min_blocks_per_sm 1)."""
    threads = producer_threads + consumer_threads
    left = threads * launch_budget(threads, 1, database.limits(target_name)) - producer_threads * producer
    return producer, share(left, consumer_threads, target_name, cap)


def setmaxnreg(target_name):
    """The budgets setmaxnreg takes on `target_name` (database.Setmaxnreg), None without it."""
    return database.target_facts(target_name).setmaxnreg


def role_overhead(target_name):
    """Registers a role needs beyond its register fragments on `target_name`."""
    return database.target_facts(target_name).role_register_overhead


def role_need(kernel, role_index, target_name, sites=None):
    """(registers per thread the role needs, {region: registers} of its fragments live at the peak).

    `sites` is the role's walk as compiler/ir/fragments.role_sites gives it, for a caller that has one."""
    peak, live = fragments.live_peak(kernel, role_index, sites)
    return peak + role_overhead(target_name), live


def short_roles(kernel, limits, target_name, has_setmaxnreg, sites=None):
    """[(role index, need, budget, live fragments)] of the roles holding fragments that need more registers than
    their budget (role_budgets). A role without fragments is not judged: ptxas fits its scalars to any budget.
    `sites(i)`, when given, returns role i's walk (compiler/ir/fragments.role_sites)."""
    out = []
    budgets = role_budgets(kernel, limits, setmaxnreg=has_setmaxnreg)
    for i, budget in enumerate(budgets):
        need, live = role_need(kernel, i, target_name, sites(i) if sites else None)
        if live and need > budget:
            out.append((i, need, budget, live))
    return out
