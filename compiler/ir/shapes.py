"""The shape a tile operand covers: THE derivation the verifier, the cost model and lowering share.

A TileRef names one stage of a region and optionally a window of it, one Window per
dimension (ir.proto); the tile's shape is the windows' sizes, or the region's shape
when there is no window. (A window with fewer entries than the region has dimensions
is a verification error, CAKE-STRUCT; this shape is then the windows' only.)
"""

import math


def tile_shape(ref, region):
    """The shape TileRef `ref` of `region` covers."""
    if ref.window:
        return [w.size for w in ref.window]
    return list(region.shape)


def elements(shape):
    """Elements of a shape (exact: a Python int of any size)."""
    return math.prod(shape)
