"""Runtime contracts for KNN: what the oracle checks and the timer times.

A KNN result (dist [B, Q, k] f32, idx [B, Q, k]) is judged against the float64 exact
scores of the inputs as given (reference.scores), by `neighbours_metric`:
- every index is a database row, not repeated in its list, and not the query itself
  under exclude_self;
- recall: a returned row counts as a true neighbour when its exact score reaches the
  exact k-th best score within the rounding of a ranking score (TIE_RTOL times the
  scale ||q||^2 + ||x||^2, or ||q|| ||x|| for inner products): among near-equal rows
  any choice is right;
- dist holds each returned row's exact score within DIST_RTOL of its scale, and is
  ordered best first up to the same rounding.
NaN and Inf never pass (runtime/check.py rejects them before the metric runs).
"""

import math

import torch

from kernels.knn import reference
from runtime import distributions
from runtime.contract import Contract, TensorSpec
from runtime.metrics import MetricResult

MIN_RECALL = 0.999
TIE_RTOL = {torch.bfloat16: 1e-5, torch.float16: 1e-5, torch.float32: 5e-5}
DIST_RTOL = 1e-5
# Queries and database rows scored at once (a float64 [queries, rows] block: 1 GiB).
_ROWS_PER_CHUNK = 1 << 17
_QUERIES_PER_CHUNK = 1 << 10
REFERENCES_KEPT = 2  # per contract: k-th scores [B, Q] of the last inputs seen (runtime/timing.py's two input sets)


def _scale(metric, qn, xn):
    """The magnitude a ranking score's rounding is relative to, per (query, row) pair."""
    if metric == "l2":
        return qn * qn + xn * xn
    if metric == "ip":
        return qn * xn
    return torch.ones_like(qn * xn)


def kth_scores(q, x, k, metric, exclude_self=False):
    """The exact (float64) k-th best score of every query [..., Q], chunked over queries and rows."""
    best_large = reference.largest(metric)
    qf, xf = q.reshape(-1, *q.shape[-2:]), x.reshape(-1, *x.shape[-2:])
    out = []
    for b in range(qf.shape[0]):
        per = []
        for i0 in range(0, qf.shape[1], _QUERIES_PER_CHUNK):
            qc = qf[b, i0 : i0 + _QUERIES_PER_CHUNK]
            best = None
            for j0 in range(0, xf.shape[1], _ROWS_PER_CHUNK):
                s = reference.scores(qc, xf[b, j0 : j0 + _ROWS_PER_CHUNK], metric)
                if exclude_self:
                    rows = torch.arange(qc.shape[0], device=s.device)
                    cols = rows + i0 - j0
                    keep = (cols >= 0) & (cols < s.shape[1])
                    s[rows[keep], cols[keep]] = -math.inf if best_large else math.inf
                top = torch.topk(s, min(k, s.shape[1]), dim=1, largest=best_large).values
                best = top if best is None else torch.topk(torch.cat([best, top], 1), k, dim=1, largest=best_large).values
            per.append(best[:, k - 1])
        out.append(torch.cat(per))
    return torch.stack(out).reshape(*q.shape[:-2], q.shape[-2])


def neighbours_metric(dist, idx, q, x, k, metric, exclude_self=False, kth=None):
    """MetricResult of a KNN result against the exact scores (see the module docstring)."""
    best_large = reference.largest(metric)
    q3, x3 = q.reshape(-1, *q.shape[-2:]), x.reshape(-1, *x.shape[-2:])
    b, nq, m = q3.shape[0], q3.shape[1], x3.shape[1]
    idx3 = idx.reshape(b, nq, k).long()
    dist3 = dist.reshape(b, nq, k).double()
    if not ((idx3 >= 0) & (idx3 < m)).all():
        return MetricResult(False, 0.0, "indices outside [0, %d)" % m)
    srt = torch.sort(idx3, dim=-1).values
    if (srt[..., 1:] == srt[..., :-1]).any():
        return MetricResult(False, 0.0, "a query lists the same database row twice")
    if exclude_self and (idx3 == torch.arange(nq, device=idx3.device)[None, :, None]).any():
        return MetricResult(False, 0.0, "a query lists itself although exclude_self is set")
    kth = kth_scores(q3, x3, k, metric, exclude_self) if kth is None else kth.reshape(b, nq)
    tol = TIE_RTOL.get(q.dtype, 1e-5)
    xn = torch.linalg.vector_norm(x3, dim=-1, dtype=torch.float64)  # [b, m], no float64 copy of x
    hits, worst, misordered = 0, 0.0, 0
    for bi in range(b):
        for i0 in range(0, nq, _QUERIES_PER_CHUNK):
            sl = slice(i0, i0 + _QUERIES_PER_CHUNK)
            ix = idx3[bi, sl]
            qd = q3[bi, sl].double()
            rows = x3[bi][ix.reshape(-1)].double().reshape(*ix.shape, -1)
            exact = _exact(qd[:, None, :], rows, metric)
            scale = _scale(metric, torch.linalg.vector_norm(qd, dim=-1)[:, None], xn[bi][ix])
            slack = tol * scale
            limit = kth[bi, sl][:, None]
            near = exact >= limit - slack if best_large else exact <= limit + slack
            hits += int(near.sum().item())
            err = (dist3[bi, sl] - exact).abs() / (DIST_RTOL * (exact.abs() + scale) + 1e-30)
            worst = max(worst, float(err.max().item()) if err.numel() else 0.0)
            step = dist3[bi, sl, 1:] - dist3[bi, sl, :-1]
            order_slack = slack[:, 1:] + slack[:, :-1]
            misordered += int(((step > order_slack) if best_large else (step < -order_slack)).sum().item())
    recall = hits / max(1, b * nq * k)
    msg = "recall %.6f (need >= %g) over %d queries x k=%d; worst dist error %.3g of the allowed; %d pairs out of order" % (
        recall, MIN_RECALL, b * nq, k, worst, misordered)
    return MetricResult(recall >= MIN_RECALL and worst <= 1.0 and not misordered, recall, msg)


def _exact(q, rows, metric):
    if metric == "l2":
        return ((q - rows) ** 2).sum(-1)
    dots = (q * rows).sum(-1)
    if metric == "ip":
        return dots
    norms = torch.linalg.vector_norm(q, dim=-1) * torch.linalg.vector_norm(rows, dim=-1)
    return torch.where(norms > 0, dots / norms.clamp_min(1e-300), torch.zeros_like(dots))


def _inputs(dtype, self_knn):
    def make(shape, dist, generator, device):
        b, nq, m, d = shape["B"], shape["Q"], shape["M"], shape["D"]
        x = distributions.sample(dist, (b, m, d), generator, device).to(dtype)
        if self_knn:
            return [x, x]
        q = distributions.sample(dist, (b, nq, d), generator, device).to(dtype)
        return [q, x]

    return make


def knn_contract(shapes, dtype=torch.bfloat16, distributions_=distributions.ALL):
    """dist, idx = knn(q, x, k) over `shapes` (dicts of B, Q, M, D, k, and optionally metric, self and
    exclude_self; the first is the tuned one). `self` makes the queries the database rows (q is x,
    Q == M: all-pairs), as exclude_self does, which also keeps each point out of its own list."""
    shapes = tuple(dict(s) for s in shapes)
    first = shapes[0]
    exclude = bool(first.get("exclude_self"))
    same = exclude or bool(first.get("self"))
    metric = reference.METRIC_NAMES.get(first.get("metric", "l2"), first.get("metric", "l2"))
    k = first["k"]
    keys = lambda s: (bool(s.get("exclude_self")), bool(s.get("self")), s.get("metric", "l2"), s["k"])  # noqa: E731
    if any(keys(s) != keys(first) for s in shapes):
        raise ValueError("one contract has one metric, k, self and exclude_self; make a contract per combination")
    cache = {}

    def ref(inputs):
        # Keyed by content (the oracle clones its inputs), so every implementation checked or timed on the same
        # seed reuses one reference: the timer's input sets (REFERENCES_KEPT of them) each keep theirs.
        key = tuple((tuple(t.shape), t.dtype, float(torch.sum(t, dtype=torch.float64)),
                     float(torch.sum(t.abs(), dtype=torch.float64))) for t in inputs)
        if key not in cache:
            if len(cache) >= REFERENCES_KEPT:
                cache.clear()
            cache[key] = kth_scores(inputs[0], inputs[1], k, metric, exclude)
        return [cache[key]]

    return Contract(
        name="knn_%s_k%d%s" % (metric, k, "_self" if same else ""),
        input_names=("q", "x"),
        output_names=("dist", "idx"),
        shapes=shapes,
        make_inputs=_inputs(dtype, same),
        outputs=lambda inputs: [TensorSpec((inputs[0].shape[0], inputs[0].shape[1], k), torch.float32),
                                TensorSpec((inputs[0].shape[0], inputs[0].shape[1], k), torch.int32)],
        reference=ref,
        metric=lambda outs, refs, inputs: neighbours_metric(outs[0], outs[1], inputs[0], inputs[1], k, metric,
                                                            exclude, kth=refs[0]),
        distributions=tuple(distributions_),
    )
