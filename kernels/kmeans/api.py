"""Flash-KMeans for PyTorch users: `kmeans_assign(x, c)` and `kmeans(x, k, iters, tol, init)`.

Both run CAKE IR kernels (prebuilt for sm_90a, else compiled once and cached; see
compiler/build/prebuilt.py), the assignment through the shape dispatcher
(kernels/kmeans/dispatch.py), and are registered as torch custom ops (cake::kmeans_assign, cake::kmeans_update) with
fake implementations, so they compose with torch.compile. Inputs are checked first;
a wrong shape or dtype raises ValueError naming the argument and what it must be; a
GPU the kernels do not run on raises compiler.targets.UnsupportedDevice naming its
compute capability and what they need.
"""

import functools
from typing import Optional, Tuple, Union

import torch

from compiler import targets
from compiler.build import prebuilt
from kernels.kmeans import dispatch, reference, tuned, variants
from runtime.compiled import CompiledKernelRunner

DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}
TARGETS = ("sm_90a",)  # the kernels' target: the tuned assignment is wgmma + TMA, sm_90a only


@functools.lru_cache(maxsize=None)
def _check_device(index):
    """UnsupportedDevice unless the GPU at `index` runs the kernels (once per device)."""
    targets.pick(torch.cuda.get_device_capability(index), TARGETS, "cake.kmeans", torch.cuda.get_device_name(index))


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
        _check_device(t.device.index)
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
    if d < 1:
        raise ValueError("x and c need at least one feature, got D=%d" % d)
    if x.shape[1] < 1 or c.shape[1] < 1:
        raise ValueError("need at least one point and one centroid, got N=%d, K=%d" % (x.shape[1], c.shape[1]))
    return x.contiguous(), c.contiguous(), squeeze


def assign_into(x, c, labels, config=None):
    """Write the labels of checked [B, N, D] x and [B, K, D] c into int32 `labels` [B, N]."""
    return dispatch.assign(x, c, labels, config=config)


def _assign(x, c):
    return dispatch.assign(x, c)


@torch.library.custom_op("cake::kmeans_assign", mutates_args=())
def _assign_op(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return _assign(x, c)


@_assign_op.register_fake
def _(x, c):
    return x.new_empty(x.shape[:2], dtype=torch.int32)


def kmeans_assign(x: torch.Tensor, c: torch.Tensor, *, config: Optional[str] = None,
                  autotune: bool = False) -> torch.Tensor:
    """Nearest centroid (squared Euclidean) of every point: int32 labels [B, N] (or [N]).

    x: [B, N, D] or [N, D] points, c: [B, K, D] or [K, D] centroids, both bf16 or both
    f16 on one CUDA device, any D (kernels up to 1024 features; D % 8 != 0 runs on
    zero-padded copies, D > 1024 on the torch reference). Ties go to the smaller index.
    The schedule variant is picked per shape (kernels/kmeans/dispatch.py); `config`
    forces one (a name of variants.BY_NAME), `autotune=True` times the cost model's top
    candidates on these inputs once per shape and remembers the fastest.
    """
    if config is None and not autotune and not torch.compiler.is_compiling():
        labels = dispatch.fast_assign(x, c)  # a call on tensors already seen: no checks beyond the cached ones
        if labels is not None:
            return labels
    x, c, squeeze = _check(x, c)
    if autotune:
        dispatch.autotune(x, c)
    if config is not None:
        labels = dispatch.assign(x, c, config=config)
    elif torch.compiler.is_compiling():
        labels = _assign_op(x, c)
    else:
        labels = dispatch.assign(x, c)
    return labels[0] if squeeze else labels


@functools.lru_cache(maxsize=None)
def _update_runner(d, dtype_name):
    kernel = tuned.update_sorted(d=-(-d // 32) * 32, dtype=dtype_name)
    return CompiledKernelRunner(prebuilt.load(kernel, what="kmeans update d=%d %s" % (d, dtype_name)))


def _update(x, labels, c_prev):
    b, n, d = x.shape
    k = c_prev.shape[1]
    if d % 8 or d > variants.UPDATE_MAX_D:  # rows the kernel's vector loads cannot take: the torch update
        return reference.update(x, labels, c_prev)[0].to(c_prev.dtype)
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


def kmeans_update(x: torch.Tensor, labels: torch.Tensor, c_prev: torch.Tensor) -> torch.Tensor:
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


def kmeans(x: torch.Tensor, k: int, iters: int = 20, tol: float = 1e-4, init: Union[str, torch.Tensor] = "random",
           generator: Optional[torch.Generator] = None) -> Tuple[torch.Tensor, torch.Tensor]:
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
    d = x3.shape[2]
    if d % 8 and d < dispatch.MAX_KERNEL_D:  # pad once for the whole loop, not per assignment (nor per update)
        pad = (0, -(-d // 8) * 8 - d)
        x3, c = torch.nn.functional.pad(x3, pad), torch.nn.functional.pad(c, pad)
    compiling = torch.compiler.is_compiling()
    labels = None
    for _ in range(iters):
        # Eager calls skip the custom op's dispatch: x stays put, so each iteration's assignment
        # reuses its prepared launch and computes the new centroids' norms once.
        labels = _assign_op(x3, c) if compiling else dispatch.assign(x3, c)
        c_new = _update_op(x3, labels, c) if compiling else _update(x3, labels, c)
        if tol > 0:
            shift = float(torch.linalg.vector_norm((c_new - c).float()) / torch.linalg.vector_norm(c.float()).clamp_min(1e-30))
            c = c_new
            if shift <= tol:
                break
        else:
            c = c_new
    c = c[..., :d].contiguous() if c.shape[2] != d else c
    return (c[0], labels[0]) if squeeze else (c, labels)
