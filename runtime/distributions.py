"""Random input distributions for correctness checks.

A kernel tuned on standard-normal data can hide bugs that other data exposes:
overflow and guards that trip only on large values, reductions that lose accuracy
on clustered data, and argmin/top-k kernels that break ties differently (near-ties).
Every check draws fresh inputs from each of these distributions.

Tensors are viewed as points along the leading dimensions with features along the
last one (a 1-D tensor is points of one feature), which is what "clustered" and
"near-ties" mean for KMeans and KNN inputs; for other kernels they are simply
differently shaped data.
"""

import math

import torch

NORMAL = "normal"  # standard normal
UNIFORM = "uniform"  # uniform on [-1, 1)
CLUSTERED = "clustered"  # points close to a few well-separated centres
NEAR_TIES = "near_ties"  # coordinates on a coarse grid plus tiny noise: distances nearly tie
LARGE = "large"  # standard normal times a large scale (default 1e4)

ALL = (NORMAL, UNIFORM, CLUSTERED, NEAR_TIES, LARGE)

_CENTRES = 8  # clusters in CLUSTERED
_CLUSTER_SPREAD = 0.01  # noise around a centre, relative to the centres' spread of 4
_GRID = 0.25  # NEAR_TIES grid step
_TIE_NOISE = 1e-6  # NEAR_TIES noise: below fp32 resolution of most distances, so ties stay near


def sample(distribution, shape, generator, device, dtype=torch.float32, large_scale=1e4):
    """A fresh tensor of `shape` drawn from `distribution` (one of ALL) with `generator`."""
    shape = tuple(shape)
    if distribution not in ALL:
        raise ValueError("unknown distribution %r (known: %s)" % (distribution, ", ".join(ALL)))

    def randn(*s):
        return torch.randn(s, generator=generator, device=device, dtype=torch.float64)

    if distribution == NORMAL:
        x = randn(*shape)
    elif distribution == UNIFORM:
        x = torch.rand(shape, generator=generator, device=device, dtype=torch.float64) * 2 - 1
    elif distribution == LARGE:
        x = randn(*shape) * large_scale
    elif distribution == NEAR_TIES:
        x = torch.round(randn(*shape) / _GRID) * _GRID + _TIE_NOISE * randn(*shape)
    elif math.prod(shape) == 0:
        x = randn(*shape)
    else:
        features = shape[-1] if len(shape) > 1 else 1
        points = math.prod(shape) // features
        centres = randn(_CENTRES, features) * 4
        which = torch.randint(0, _CENTRES, (points,), generator=generator, device=device)
        x = (centres[which] + _CLUSTER_SPREAD * 4 * randn(points, features)).reshape(shape)
    return x.to(dtype)
