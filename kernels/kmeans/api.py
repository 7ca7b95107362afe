"""Flash-KMeans for PyTorch users: `kmeans_assign(x, c)` and `kmeans(x, k, iters, tol, init)`.

Both run CAKE IR kernels compiled for the current GPU (built once, then cached) and
are registered as torch custom ops (cake::kmeans_assign, cake::kmeans_update) with
fake implementations, so they compose with torch.compile. Inputs are checked first;
a wrong shape or dtype raises ValueError naming the argument and what it must be.
"""

import functools
import math

import torch

from compiler.build.driver import build
from kernels.kmeans import tuned
from runtime.compiled import CompiledKernelRunner

DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}
MAX_D = 256


def _check(x, c):
    """Validated (x, c) as [B, N, D] / [B, K, D] and whether the batch dim was added."""
    for name, t in (("x", x), ("c", c)):
        if not isinstance(t, torch.Tensor):
            raise ValueError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
        if t.dim() not in (2, 3):
            raise ValueError("%s must be [N, D] or [B, N, D], got shape %s" % (name, tuple(t.shape)))
        if t.dtype not in DTYPES:
            raise ValueError("%s must be bfloat16 or float16, got %s" % (name, t.dtype))
        if not t.is_cuda:
            raise ValueError("%s must be on a CUDA device, got %s" % (name, t.device))
    if x.dim() != c.dim():
        raise ValueError("x and c must both be batched or both unbatched: x is %dD, c is %dD" % (x.dim(), c.dim()))
    if x.dtype != c.dtype:
        raise ValueError("x and c must have the same dtype: %s vs %s" % (x.dtype, c.dtype))
    if x.device != c.device:
        raise ValueError("x and c must be on the same device: %s vs %s" % (x.device, c.device))
    squeeze = x.dim() == 2
    if squeeze:
        x, c = x[None], c[None]
    if x.shape[0] != c.shape[0]:
        raise ValueError("x and c must have the same batch size: %d vs %d" % (x.shape[0], c.shape[0]))
    d = x.shape[2]
    if c.shape[2] != d:
        raise ValueError("x and c must have the same feature dim D: %d vs %d" % (d, c.shape[2]))
    if d % 8 or d > MAX_D:
        raise ValueError("D must be a multiple of 8 and at most %d (got %d); pad the features with zeros" % (MAX_D, d))
    if x.shape[1] < 1 or c.shape[1] < 1:
        raise ValueError("need at least one point and one centroid, got N=%d, K=%d" % (x.shape[1], c.shape[1]))
    return x.contiguous(), c.contiguous(), squeeze


def assign_params(d):
    """The tuned schedule's parameters for feature dim d (tile width d rounded up to 64)."""
    width = -(-d // 64) * 64
    if width <= 128:
        return dict(d=width, block_k=128, stages=3, x_stages=2)
    return dict(d=width, block_k=64, stages=3, x_stages=1)


@functools.lru_cache(maxsize=None)
def _runner(params, dtype_name):
    kernel = tuned.assign_sm90a_tuned(dtype=dtype_name, **dict(params))
    result = build(kernel)
    if not result.ok:
        raise RuntimeError("kmeans assign kernel failed to build: %s" % "; ".join(d.message for d in result.diagnostics))
    return CompiledKernelRunner(result.compiled)


_SQ_NORM_BUFFERS = {}


def padded_sq_norms(c, block_k):
    """||c||^2 per centroid in fp32, padded with +inf to a whole number of centroid tiles.

    The buffer is reused per (shape, device), so its tensor map is built once; calls on one
    stream are ordered, so reuse is safe there.
    """
    b, k, _ = c.shape
    kp = -(-k // block_k) * block_k
    key = (b, k, kp, c.device)
    out = _SQ_NORM_BUFFERS.get(key)
    if out is None:
        out = torch.full((b, kp), math.inf, dtype=torch.float32, device=c.device)
        _SQ_NORM_BUFFERS[key] = out
    cf = c.float()
    torch.linalg.vecdot(cf, cf, dim=-1, out=out[:, :k])
    return out


def assign_into(x, c, labels):
    """Write the labels of checked [B, N, D] x and [B, K, D] c into int32 `labels` [B, N]."""
    params = assign_params(x.shape[2])
    runner = _runner(tuple(sorted(params.items())), DTYPES[x.dtype])
    runner(x=x, c=c, c_sq=padded_sq_norms(c, params["block_k"]), labels=labels)
    return labels


def _assign(x, c):
    return assign_into(x, c, torch.empty(x.shape[:2], dtype=torch.int32, device=x.device))


@torch.library.custom_op("cake::kmeans_assign", mutates_args=())
def _assign_op(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return _assign(x, c)


@_assign_op.register_fake
def _(x, c):
    return x.new_empty(x.shape[:2], dtype=torch.int32)


def kmeans_assign(x, c):
    """Nearest centroid (squared Euclidean) of every point: int32 labels [B, N] (or [N]).

    x: [B, N, D] or [N, D] points, c: [B, K, D] or [K, D] centroids, both bf16 or both
    f16 on one CUDA device, D a multiple of 8 up to 256. Ties go to the smaller index.
    """
    x, c, squeeze = _check(x, c)
    labels = _assign_op(x, c)
    return labels[0] if squeeze else labels


@functools.lru_cache(maxsize=None)
def _update_runner(d, dtype_name):
    kernel = tuned.update_sorted(d=-(-d // 32) * 32, dtype=dtype_name)
    result = build(kernel)
    if not result.ok:
        raise RuntimeError("kmeans update kernel failed to build: %s" % "; ".join(d.message for d in result.diagnostics))
    return CompiledKernelRunner(result.compiled)


def _update(x, labels, c_prev):
    b, n, d = x.shape
    k = c_prev.shape[1]
    sorted_labels, order = torch.sort(labels, dim=1)
    sums = torch.zeros((b, k, d), dtype=torch.float32, device=x.device)
    counts = torch.zeros((b, k), dtype=torch.int32, device=x.device)
    _update_runner(d, DTYPES[x.dtype])(x=x, order=order, sorted=sorted_labels.to(torch.int32), sums=sums, counts=counts)
    # An empty cluster keeps its centroid.
    means = sums / counts.clamp_min(1)[..., None].float()
    return torch.where((counts > 0)[..., None], means, c_prev.float()).to(c_prev.dtype)


@torch.library.custom_op("cake::kmeans_update", mutates_args=())
def _update_op(x: torch.Tensor, labels: torch.Tensor, c_prev: torch.Tensor) -> torch.Tensor:
    return _update(x, labels, c_prev)


@_update_op.register_fake
def _(x, labels, c_prev):
    return torch.empty_like(c_prev)


def kmeans_update(x, labels, c_prev):
    """New centroids: the mean of each cluster's points; an empty cluster keeps c_prev's row."""
    x, c_prev, squeeze = _check(x, c_prev)
    labels = labels[None] if squeeze else labels
    if labels.shape != x.shape[:2] or labels.dtype != torch.int32:
        raise ValueError("labels must be int32 of shape %s, got %s %s" % (tuple(x.shape[:2]), labels.dtype, tuple(labels.shape)))
    c_new = _update_op(x, labels.contiguous(), c_prev)
    return c_new[0] if squeeze else c_new


def _initial_centroids(x, k, init, generator):
    b, n, d = x.shape
    if isinstance(init, torch.Tensor):
        c = init[None] if init.dim() == 2 else init
        if c.shape != (b, k, d):
            raise ValueError("init centroids must have shape %s, got %s" % ((b, k, d), tuple(c.shape)))
        return c.to(x.dtype).contiguous()
    if init != "random":
        raise ValueError("init must be 'random' or a [B, K, D] tensor of centroids, got %r" % (init,))
    if k > n:
        raise ValueError("k=%d is more than the %d points" % (k, n))
    idx = torch.stack([torch.randperm(n, device=x.device, generator=generator)[:k] for _ in range(b)])
    return torch.gather(x, 1, idx[..., None].expand(-1, -1, d)).contiguous()


def kmeans(x, k, iters=20, tol=1e-4, init="random", generator=None):
    """Lloyd's algorithm: (centroids [B, K, D] in x's dtype, labels [B, N] int32).

    Each iteration assigns every point to its nearest centroid and moves each centroid to
    the mean of its points (an empty cluster keeps its centroid). It stops after `iters`
    iterations, or once the centroids move less than `tol` relative (tol=0: never early,
    and no host synchronisation per iteration). init is "random" (k distinct points) or
    a tensor of starting centroids.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError("k must be a positive int, got %r" % (k,))
    if not isinstance(iters, int) or iters < 1:
        raise ValueError("iters must be a positive int, got %r" % (iters,))
    if tol < 0:
        raise ValueError("tol must be >= 0, got %r" % (tol,))
    squeeze = x.dim() == 2
    x3 = x[None] if squeeze else x
    c = _initial_centroids(x3, k, init, generator)
    x3, c, _ = _check(x3, c)
    labels = None
    for _ in range(iters):
        labels = _assign_op(x3, c)
        c_new = _update_op(x3, labels, c)
        if tol > 0:
            shift = float(torch.linalg.vector_norm((c_new - c).float()) / torch.linalg.vector_norm(c.float()).clamp_min(1e-30))
            c = c_new
            if shift <= tol:
                break
        else:
            c = c_new
    return (c[0], labels[0]) if squeeze else (c, labels)
