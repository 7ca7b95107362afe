"""Register scalars: the one-element register regions an expression may read by name (Expr.sym in ir.proto).

A register region is a scalar when each owner thread holds exactly one element of
it: PER_THREAD of one element ([1]) or ROW_PER_THREAD [threads] / [threads, 1]. In
the expressions of its owner role's ops its name stands for the executing thread's
run-time value (a label read from memory, a running count); lowering prints it as
that register. Other roles cannot read it, and its value is data: nothing static
(a verifier or a cost model) knows it.
"""

import math

from cake.ir.v1 import ir_pb2

L = ir_pb2.FragmentLayout


def is_scalar(region):
    """Whether `region` is a register scalar (one element per owner thread)."""
    if region.space != ir_pb2.MEMORY_SPACE_REGISTER:
        return False
    shape = list(region.shape)
    if region.layout == L.FRAGMENT_LAYOUT_PER_THREAD:
        return math.prod(shape) == 1
    if region.layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
        return len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)
    return False


def role_scalars(kernel, role_name):
    """{name: region index} of the register scalars `role_name` owns (a name means its first declaration)."""
    out, seen = {}, set()
    for i, r in enumerate(kernel.regions):
        if r.name not in seen and r.owner == role_name and is_scalar(r):
            out[r.name] = i
        seen.add(r.name)
    return out
