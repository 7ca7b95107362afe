"""Retarget a kernel to a newer SM whose instruction families include all of its current target's.

Precondition: `target` is a CAKE target (compiler/targets) that has every feature of the
kernel's target (sm_80 -> sm_90a or sm_100a). Rewrite: the kernel's target. Every op
keeps its meaning on the new target (the same instructions exist there), so it
computes the same thing; what changes is which further transformations apply (TMA
rings, wgmma, register budgets need sm_90a).
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import NotApplicable, copy_kernel, target_name
from compiler.ir import enums
from compiler.targets import TARGETS


def precondition(kernel, target="sm_90a"):
    new, old = TARGETS.get(target), TARGETS.get(target_name(kernel))
    if new is None:
        raise NotApplicable("unknown target %r (known: %s)" % (target, ", ".join(TARGETS)))
    if old is None:
        raise NotApplicable("the kernel's target %s is not one CAKE compiles for" % target_name(kernel))
    if old.name == new.name:
        raise NotApplicable("the kernel targets %s already" % target)
    missing = sorted(old.features - new.features)
    if missing:
        raise NotApplicable("%s lacks %s of %s" % (target, ", ".join(missing), old.name))


def retarget(kernel, target="sm_90a"):
    """The kernel for `target`, a superset of its target's instruction families."""
    precondition(kernel, target)
    out = copy_kernel(kernel)
    out.target = enums.value_of(ir_pb2.Target.DESCRIPTOR, target)
    return out
