"""Poison values for outputs, and bit-exact comparisons of tensors.

Before every launch the harness fills each output with a poison value; an element
that still holds it afterwards was never written. Float poisons are NaNs with a
distinctive payload, so the oracle tells "never written" (poison bits intact) from
"the kernel computed a NaN" (CUDA's canonical NaN 0x7fffffff, or any other NaN).
Integer poisons are the type's minimum, which no index, label or count takes.
"""

import torch

# Bit patterns of the float poisons: quiet NaNs carrying a payload no arithmetic produces.
_FLOAT_POISON_BITS = {
    torch.float16: 0x7E5A,
    torch.bfloat16: 0x7FDA,
    torch.float32: 0x7FC0DEAD,
    torch.float64: 0x7FF80000DEADBEEF,
}

# The signed integer type of each element size: used to view any dtype as its raw bits.
_BITS_DTYPE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(tensor):
    """`tensor` viewed as signed integers of the same width: its raw bit patterns."""
    if tensor.dtype == torch.bool:
        return tensor.view(torch.int8)
    return tensor.view(_BITS_DTYPE[tensor.element_size()])


def poison_bits(dtype):
    """The raw bit pattern of `dtype`'s poison, as a Python int of the signed view."""
    if dtype in _FLOAT_POISON_BITS:
        return _FLOAT_POISON_BITS[dtype]
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        raise TypeError("no poison defined for %s outputs" % dtype)
    return torch.iinfo(dtype).min


def fill(tensor):
    """Overwrite every element of `tensor` with its dtype's poison (in place, on its stream)."""
    view = tensor if not tensor.dtype.is_floating_point else bits(tensor)
    view.fill_(poison_bits(tensor.dtype))
    return tensor


def poisoned_mask(tensor):
    """Boolean mask of elements that still hold the poison."""
    view = tensor if not tensor.dtype.is_floating_point else bits(tensor)
    return view == poison_bits(tensor.dtype)


def bitwise_equal(a, b):
    """True when `a` and `b` have the same shape and identical bits (NaN payloads included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(bits(a), bits(b))
