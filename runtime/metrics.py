"""Correctness metrics: how far a kernel's outputs may be from the reference.

Each metric returns a MetricResult (passed, value, message). They are written for
outputs already known to be written and finite (runtime/check.py checks that
first) and compute in fp64, so the metric itself adds no error.
"""

import dataclasses

import torch

_TINY = 1e-300  # guards divisions by a reference norm or objective that is exactly zero


@dataclasses.dataclass(frozen=True)
class MetricResult:
    passed: bool
    value: float  # the metric's number: worst error, relative error, recall, agreement
    message: str


def allclose(out, ref, rtol, atol=0.0, scale=None):
    """|out - ref| <= atol + rtol * scale elementwise; `scale` defaults to |ref|.

    Pass a problem-aware `scale` (e.g. |A| @ |x| for a matrix-vector product) so
    cancellation in the reference does not make correct rounding look like an error.
    """
    out64, ref64 = out.to(torch.float64), ref.to(torch.float64)
    scale = ref64.abs() if scale is None else scale.to(torch.float64)
    err = (out64 - ref64).abs()
    excess = err / (atol + rtol * scale).clamp_min(_TINY)
    if excess.numel() == 0:
        return MetricResult(True, 0.0, "empty output")
    worst = int(torch.argmax(excess).item())
    value = float(excess.flatten()[worst].item())
    where = _unravel(worst, excess.shape)
    detail = "worst element %s: got %.9g, reference %.9g (error %.3g, allowed %.3g)" % (
        where,
        out64.flatten()[worst].item(),
        ref64.flatten()[worst].item(),
        err.flatten()[worst].item(),
        (atol + rtol * scale.flatten()[worst]).item(),
    )
    bad = int((excess > 1).sum().item())
    if bad:
        return MetricResult(False, value, "%d of %d elements outside tolerance; %s" % (bad, excess.numel(), detail))
    return MetricResult(True, value, detail)


def rel_l2(out, ref, max_error):
    """||out - ref||_2 / ||ref||_2 <= max_error: the attention metric."""
    out64, ref64 = out.to(torch.float64), ref.to(torch.float64)
    value = float(torch.linalg.vector_norm(out64 - ref64) / max(torch.linalg.vector_norm(ref64).item(), _TINY))
    msg = "relative L2 error %.3g (allowed %.3g)" % (value, max_error)
    return MetricResult(value <= max_error, value, msg)


def _sq_distances(queries, points):
    """Squared Euclidean distances, fp64, queries x points."""
    q, p = queries.to(torch.float64), points.to(torch.float64)
    d = (q * q).sum(1, keepdim=True) - 2 * q @ p.T + (p * p).sum(1)
    return d.clamp_min(0)


def kmeans_objective(labels, points, centroids):
    """Sum of squared distances from each point to its labelled centroid, fp64."""
    diff = points.to(torch.float64) - centroids.to(torch.float64)[labels.long()]
    return float((diff * diff).sum().item())


def kmeans_labels(labels, points, centroids, ref_labels, min_agreement=0.9999, objective_rtol=1e-6, tie_rtol=1e-5):
    """KMeans assignment: labels agree with the fp32 reference up to ties, and the objective matches.

    Near-ties let a correct kernel pick the other of two almost equidistant centroids
    (fp32 sums in another order rank them differently), so a differing label counts as
    agreeing when its exact (fp64) distance equals the reference label's within
    tie_rtol of ||x||^2 + ||c||^2, the scale of the rounding in the distance. The
    objective (what KMeans minimises) must stay within objective_rtol either way.
    """
    k = centroids.shape[0]
    labels = labels.long()
    invalid = int(((labels < 0) | (labels >= k)).sum().item())
    if invalid:
        return MetricResult(False, 0.0, "%d labels outside [0, %d)" % (invalid, k))
    n = max(1, labels.numel())
    ref_labels = ref_labels.long()
    differ = labels != ref_labels
    raw = 1.0 - float(differ.sum().item()) / n
    ties = 0
    if differ.any():
        p = points[differ].to(torch.float64)
        ours, theirs = centroids[labels[differ]].to(torch.float64), centroids[ref_labels[differ]].to(torch.float64)
        d_ours, d_ref = ((p - ours) ** 2).sum(1), ((p - theirs) ** 2).sum(1)
        scale = (p * p).sum(1) + (theirs * theirs).sum(1)
        ties = int(((d_ours - d_ref).abs() <= tie_rtol * scale).sum().item())
    agreement = raw + ties / n
    obj = kmeans_objective(labels, points, centroids)
    ref_obj = kmeans_objective(ref_labels, points, centroids)
    obj_err = abs(obj - ref_obj) / max(abs(ref_obj), _TINY)
    msg = ("label agreement %.6f up to ties (raw %.6f, need >= %g), objective %.9g vs reference %.9g "
           "(relative %.3g, allowed %.3g)" % (agreement, raw, min_agreement, obj, ref_obj, obj_err, objective_rtol))
    return MetricResult(agreement >= min_agreement and obj_err <= objective_rtol, agreement, msg)


def knn_recall(indices, queries, points, min_recall=0.99, distance_rtol=1e-5, distance_atol=1e-6, chunk=1024):
    """KNN: fraction of returned neighbours that are true k-nearest, up to distance ties.

    A returned index is a hit when it is valid, not repeated in its row, and its exact
    (fp64) distance is within tolerance of the exact k-th smallest distance: among
    near-equidistant points any choice is correct.
    """
    nq, k = indices.shape
    npts = points.shape[0]
    hits = 0
    for start in range(0, nq, chunk):
        idx = indices[start : start + chunk].long()
        d = _sq_distances(queries[start : start + chunk], points)
        kth = torch.topk(d, k, dim=1, largest=False).values[:, -1:]
        valid = (idx >= 0) & (idx < npts)
        got = torch.gather(d, 1, idx.clamp(0, npts - 1))
        near = got <= kth * (1 + distance_rtol) + distance_atol
        # A repeated index counts once: mark all but its first occurrence (stable sort keeps order).
        sorted_idx, perm = torch.sort(idx, dim=1, stable=True)
        dup_sorted = torch.zeros_like(valid)
        dup_sorted[:, 1:] = sorted_idx[:, 1:] == sorted_idx[:, :-1]
        repeated = torch.zeros_like(valid).scatter_(1, perm, dup_sorted)
        hits += int((valid & near & ~repeated).sum().item())
    recall = hits / max(1, nq * k)
    msg = "recall %.6f (need >= %g) over %d queries x k=%d" % (recall, min_recall, nq, k)
    return MetricResult(recall >= min_recall, recall, msg)


def _unravel(flat, shape):
    where = []
    for s in reversed(shape):
        where.append(flat % s)
        flat //= s
    return tuple(reversed(where))
