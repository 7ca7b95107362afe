"""The shape a tile operand covers: THE derivation the verifier, the cost model and lowering share.

A TileRef names one stage of a region and optionally a window of it, one Window per
dimension (ir.proto); the tile's shape is the windows' sizes, or the region's shape
when there is no window. (A window with fewer entries than the region has dimensions
is a verification error, CAKE-STRUCT; this shape is then the windows' only.)
An MMA operand's two dims are (MN, K) for a K-major tile and (K, MN) for an MN-major one
(ir.proto's Major): `mma_dims` says which is which for the verifier, the cost model,
lowering and the agent's transformations.
"""

import math

from cake.ir.v1 import ir_pb2


def tile_shape(ref, region):
    """The shape TileRef `ref` of `region` covers."""
    return window_shape([w.size for w in ref.window[:]], region)


def window_shape(sizes, region):
    """The shape a tile of `region` whose windows have `sizes` covers (no windows: the whole region)."""
    return list(sizes) if sizes else list(region.shape[:])  # (a slice: iterating a protobuf container raises)


def elements(shape):
    """Elements of a shape (exact: a Python int of any size)."""
    return math.prod(shape)


def mma_dims(dims, major):
    """(MN, K) of an MMA operand tile's last two dims: K-major tiles are [MN, K], MN-major ones [K, MN]."""
    first, second = dims[-2], dims[-1]
    return (second, first) if major == ir_pb2.MAJOR_MN else (first, second)
