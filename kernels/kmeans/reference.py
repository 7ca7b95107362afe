"""Flash-KMeans oracles: assignment, centroid update and a reference Lloyd loop, in torch.

Shapes follow the kernels: B independent problems, N points and K centroids of D
features each; x [B, N, D], c [B, K, D], labels [B, N] int32. Squared distances are
expanded as ||x||^2 - 2 x.c + ||c||^2; the assignment kernels drop the per-point
||x||^2 (it does not move the argmin) and take ||c||^2 precomputed as `c_sq`, so the
oracle accepts the same `c_sq` and ranks with exactly the kernel's score.
Ties go to the smallest centroid index, as the kernels' arg-min does.
"""

import torch

# Rows of the [rows, K] score matrix computed at once, and scores (B x rows x K) at most: bound the oracle's
# memory (B 118, N 1217, K 79992 asked for 43 GiB in one piece).
_ROWS_PER_CHUNK = 1 << 14
_SCORE_ELEMENTS = 1 << 28


def sq_norms(t, dtype=torch.float32):
    """||t[..., :]||^2 along the last axis, in `dtype`: the `c_sq` a kernel takes."""
    t = t.to(dtype)
    return (t * t).sum(-1)


def assign(x, c, c_sq=None, dtype=torch.float32):
    """labels[b, n] = argmin_k (c_sq[b, k] - 2 x[b, n] . c[b, k]), ties to the smallest k.

    With c_sq = ||c||^2 (the default) this is the nearest centroid in squared Euclidean
    distance. The scores are computed in `dtype` (float32 as the kernels do, or float64
    for an exact ranking of the given inputs). Returns int32 [B, N].
    """
    c_sq = sq_norms(c, dtype) if c_sq is None else c_sq.to(dtype)
    cT = c.to(dtype).transpose(1, 2)
    b, n, k = x.shape[0], x.shape[1], c.shape[1]
    labels = torch.empty((b, n), dtype=torch.int32, device=x.device)
    probs = max(1, min(b, _SCORE_ELEMENTS // (k * min(n, _ROWS_PER_CHUNK))))
    rows = max(1, min(_ROWS_PER_CHUNK, _SCORE_ELEMENTS // (probs * k)))
    for b0 in range(0, b, probs):
        for n0 in range(0, n, rows):
            xs = x[b0 : b0 + probs, n0 : n0 + rows].to(dtype)
            score = c_sq[b0 : b0 + probs, None, :] - 2 * torch.bmm(xs, cT[b0 : b0 + probs])
            labels[b0 : b0 + probs, n0 : n0 + rows] = score.argmin(-1).to(torch.int32)  # first minimum wins
    return labels


def objective(x, c, labels, dtype=torch.float64):
    """Per problem, the sum over points of ||x[b, n] - c[b, labels[b, n]]||^2: a [B] tensor."""
    nearest = torch.gather(c.to(dtype), 1, labels.long()[..., None].expand(-1, -1, c.shape[-1]))
    return ((x.to(dtype) - nearest) ** 2).sum((1, 2))


def accumulate(x, labels, sums, counts):
    """The update kernel's math: sums[b, k] += sum of x[b, n] with labels[b, n] = k; counts[b, k] += their number.

    `sums` is f32 [B, K, D]; `counts` is int32 [B, K] or [B, K, 1] (the kernel's
    per-row shape). Returns new tensors (the kernel adds in place, with atomics).
    """
    B, K = sums.shape[:2]
    idx = labels.long()
    add = torch.zeros(B, K, x.shape[-1], dtype=torch.float32, device=x.device)
    add.scatter_add_(1, idx[..., None].expand(-1, -1, x.shape[-1]), x.float())
    n = torch.zeros(B, K, dtype=torch.int32, device=x.device)
    n.scatter_add_(1, idx, torch.ones_like(idx, dtype=torch.int32))
    return sums + add, counts + n.reshape(counts.shape)


def finalize(sums, counts, c_prev):
    """The finalize kernel's math: c[b, k] = sums[b, k] / counts[b, k], or c_prev[b, k] if the cluster is empty.

    Returns f32 [B, K, D]; `counts` may be [B, K] or [B, K, 1].
    """
    n = counts.reshape(sums.shape[:2] + (1,)).float()
    return torch.where(n > 0, sums.float() / n.clamp(min=1), c_prev.float())


def update(x, labels, c_prev):
    """One centroid update: (new centroids f32 [B, K, D], counts int32 [B, K]).

    Each centroid becomes the mean of the points assigned to it; a centroid with no
    points keeps its previous position (c_prev).
    """
    B, K, D = c_prev.shape
    zeros = torch.zeros(B, K, D, dtype=torch.float32, device=x.device)
    sums, counts = accumulate(x, labels, zeros, torch.zeros(B, K, dtype=torch.int32, device=x.device))
    return finalize(sums, counts, c_prev), counts


def lloyd(x, k, iters=20, tol=1e-4, init=None, generator=None):
    """Lloyd's algorithm: (centroids f32 [B, k, D], labels int32 [B, N], objective [B] float64).

    `init` is a [B, k, D] tensor of starting centroids, or None to start from k
    distinct points of each problem drawn with `generator`. Stops after `iters`
    rounds, or once no problem's objective improves by more than `tol` relative.
    """
    B, N, _ = x.shape
    if init is None:
        pick = torch.stack([torch.randperm(N, generator=generator)[:k] for _ in range(B)]).to(x.device)
        init = torch.gather(x.float(), 1, pick[..., None].expand(-1, -1, x.shape[-1]))
    c = init.float()
    labels = assign(x, c)
    last = objective(x, c, labels)
    for _ in range(iters):
        c, _ = update(x, labels, c)
        labels = assign(x, c)
        now = objective(x, c, labels)
        if bool(((last - now) <= tol * last.abs()).all()):
            return c, labels, now
        last = now
    return c, labels, last
