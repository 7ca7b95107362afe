"""Sizes of the things a schedule names, as the work counts measure them: dtypes, regions, copies.

Tile shapes are compiler/ir/shapes.py's, threads compiler/ir/roles.py's, fragment
layouts compiler/ir/fragments.py's. Garbage is measured as zero (an unknown dtype has
0 bytes, a negative dimension 0 elements) and in floats (a mutated shape may exceed
any integer a float can hold): judging it is the verifier's job, and the analysis must
still answer.
"""

import math

from cake.ir.v1 import ir_pb2

from compiler.ir import fragments, roles
from compiler.ir.dtypes import DTYPE_BYTES


def dtype_bytes(dtype):
    return DTYPE_BYTES.get(dtype, 0)


def elements(shape):
    """Elements of a shape (a float: garbage shapes may exceed any integer type)."""
    return math.prod(float(max(0, d)) for d in shape)


def region_bytes(region):
    """Bytes of one stage of a region (exact: a Python int of any size)."""
    return math.prod(max(0, d) for d in region.shape) * dtype_bytes(region.dtype)


def units(region, role):
    """Copies of a region's shape that `role` holds: register fragments are per warpgroup,
    warp or thread (compiler/ir/fragments.py); shared, tensor-memory and whole-role tiles are one copy."""
    if region.space != ir_pb2.MEMORY_SPACE_REGISTER:
        return 1
    per = fragments.UNIT_THREADS.get(region.layout)
    return 1 if per is None else roles.role_threads(role) // per
