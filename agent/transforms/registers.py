"""Register budgets (setmaxnreg): `registers` sets one role's; `rebalance_registers` balances the block's.

`registers(kernel, role, value)`: precondition, the target has setmaxnreg, `role`
exists and `value` is a legal budget it does not have already; rewrite, that role's
budget (whether it still fits the launch pool is the verifier's CAKE-RES-004).

`rebalance_registers`: producers keep few registers, the other roles share the rest
of the launch's allocation.

Precondition: the kernel's target has setmaxnreg (sm_90a, sm_100a) and the block has
roles to balance: those with register budgets, or, where no role has one yet, every
role of a warp-specialized block (one with a producer role; a producer split off by
split_producer starts without budgets). Among them at least one is not a producer.

Rewrite: each producer role being balanced gets `producer` registers per thread; the
other balanced roles share evenly, rounded down to setmaxnreg's step and at most
`cap`, what the launch pool (threads x the launch budget, compiler/targets/registers)
leaves after the producers and the roles left at the launch budget. setmaxnreg only
moves registers within the block's allocation and no instruction changes, so what the
block computes is unchanged; a role that needs more than the launch budget (a wide
accumulator in a block of many warps) now fits, where the verifier (CAKE-RES-005) and
the cost model refused it.
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import NotApplicable, copy_kernel, find_role, target_name
from compiler.ir.roles import role_threads
from compiler.targets import TARGETS, database
from compiler.targets import registers as target_registers


def setmaxnreg(kernel):
    """The budgets setmaxnreg takes on the kernel's target; NotApplicable where it has none."""
    name = target_name(kernel)
    legal = target_registers.setmaxnreg(name) if name in TARGETS else None
    if legal is None:
        raise NotApplicable("register budgets (setmaxnreg) exist on sm_90a and sm_100a only")
    return legal


def registers(kernel, role, value):
    """Set one role's register budget (setmaxnreg), a legal setmaxnreg value (multiples of 8 in [24, 256])."""
    legal = setmaxnreg(kernel)
    value = int(value)
    if not legal.legal(value):
        raise NotApplicable("%d is not a setmaxnreg value" % value)
    out = copy_kernel(kernel)
    target = find_role(out, role)
    if target.registers == value:
        raise NotApplicable("role %r already has %d registers" % (role, value))
    target.registers = value
    return out


def _balanced(kernel):
    """Indices of the roles to balance: the budgeted ones, else every role of a block with a producer."""
    budgeted = [i for i, r in enumerate(kernel.roles) if r.registers]
    if budgeted:
        return budgeted
    if any(r.kind == ir_pb2.ROLE_KIND_PRODUCER for r in kernel.roles):
        return list(range(len(kernel.roles)))
    raise NotApplicable("no role has a register budget and no producer role gives registers away")


def precondition(kernel, producer=24, cap=240):
    """{role index: budget} the rewrite sets; NotApplicable with the reason when it cannot or has nothing to do."""
    legal = setmaxnreg(kernel)
    if not legal.legal(producer):
        raise NotApplicable("%d is not a setmaxnreg value" % producer)
    limits = database.limits(target_name(kernel))
    chosen = _balanced(kernel)
    producers = [i for i in chosen if kernel.roles[i].kind == ir_pb2.ROLE_KIND_PRODUCER]
    others = [i for i in chosen if i not in producers]
    if not others:
        raise NotApplicable("only producer roles have budgets")
    entry = target_registers.kernel_launch_budget(kernel, limits)
    kept = sum(role_threads(r) for i, r in enumerate(kernel.roles) if i not in chosen) * entry
    left = target_registers.pool(kernel, limits) - kept - producer * sum(role_threads(kernel.roles[i]) for i in producers)
    share = target_registers.share(left, sum(role_threads(kernel.roles[i]) for i in others), target_name(kernel), cap)
    if share < legal.minimum:
        raise NotApplicable("the launch allocation leaves %d registers per consumer thread" % share)
    budgets = {**{i: producer for i in producers}, **{i: share for i in others}}
    if all(kernel.roles[i].registers == b for i, b in budgets.items()):
        raise NotApplicable("budgets are already balanced")
    return budgets


def rebalance_registers(kernel, producer=24, cap=240):
    """The kernel with its producers at `producer` registers and the other roles sharing the rest (module docstring)."""
    budgets = precondition(kernel, producer, cap)
    out = copy_kernel(kernel)
    for i, b in budgets.items():
        out.roles[i].registers = b
    return out
