"""Whether a kernel fits the block its target gives it: threads, shared memory, the register pool, each role's
registers.

One yes-or-no over what the verifier checks of a block with no launch in hand (CAKE-RES-002,
001, 004 and 005): its threads within the per-block maximum, the shared memory lowering lays
out (compiler/ir/smem_layout.py) within the device's per-block maximum, role budgets within
the register pool the block is launched with, and every role's live fragments plus its
overhead within its budget (registers.py). Schedules that choose their parameters by what
fits build the candidate kernel and ask this (kernels/knn/plan.py, kernels/kmeans/variants.py)
instead of re-deriving bytes or registers: they choose what the verifier accepts, and
compiler/consistency_test.py checks that the two agree on every mutation it makes.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import enums, roles, smem_layout
from compiler.targets import TARGETS, database, registers


def shortfalls(kernel, device=None):
    """What of `kernel`'s block does not fit its target (on `device`, the target's default when None), one line
    each; empty when it fits. ValueError for a kernel whose target CAKE does not know."""
    name = enums.short_name(ir_pb2.Target.DESCRIPTOR, kernel.target)
    if name not in TARGETS:
        raise ValueError("kernel %s has no target CAKE compiles for (%s)" % (kernel.name, name))
    limits = database.limits(name, device)
    spans = roles.role_spans(kernel)
    threads = roles.block_threads(kernel, spans)
    if not 0 < threads <= limits.threads_per_block_max:
        return ["%d threads per block; %s allows 1 to %d" % (threads, name, limits.threads_per_block_max)]
    out = []
    shared = smem_layout.layout(kernel).requested
    if shared > limits.shared_per_block_bytes:
        out.append("%d bytes of shared memory requested, over the %d a block may have"
                   % (shared, limits.shared_per_block_bytes))
    setmaxnreg = TARGETS[name].has("setmaxnreg")
    if setmaxnreg and any(r.registers for r in kernel.roles):
        use, pool = sum(registers.pool_use(kernel, limits, spans)), registers.pool(kernel, limits, spans)
        if use > pool:
            out.append("role budgets take %d registers, over the %d the block is launched with" % (use, pool))
    for i, need, budget, _ in registers.short_roles(kernel, limits, name, setmaxnreg):
        out.append("role %s needs %d registers per thread, over its budget of %d" % (kernel.roles[i].name, need, budget))
    return out


def fits(kernel, device=None):
    """Whether `kernel`'s block fits its target (see shortfalls)."""
    return not shortfalls(kernel, device)
