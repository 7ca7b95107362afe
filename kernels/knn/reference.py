"""KNN oracle: exact k nearest database rows in float64, the kernels' partial lists, and recall.

Queries q [..., Q, D], database x [..., M, D] (the same leading dims: a batch of
independent problems). Metrics:

    l2   squared Euclidean distance ||q - x||^2, ascending
    ip   inner product q.x, descending
    cos  cosine similarity q.x / (||q|| ||x||) (0 when a norm is 0), descending

Ties go to the smaller database index. With exclude_self (self-KNN, Q == M) query i
never lists database row i.
"""

import math

import torch

METRICS = ("l2", "ip", "cos")
# The API's metric names -> the short names used here and by the schedules.
METRIC_NAMES = {"l2": "l2", "ip": "ip", "inner_product": "ip", "cosine": "cos", "cos": "cos"}

# Queries scored at once: bounds the [queries, M] score matrix in memory.
_QUERIES_PER_CHUNK = 1 << 10


def largest(metric):
    """Whether a metric's best neighbours have the largest scores."""
    if metric not in METRICS:
        raise ValueError("metric must be one of %s, got %r" % (METRICS, metric))
    return metric != "l2"


def scores(q, x, metric):
    """Exact float64 scores [..., Q, M] of every (query, database row) pair."""
    qd, xd = q.double(), x.double()
    dots = qd @ xd.transpose(-1, -2)
    if metric == "ip":
        return dots
    if metric == "cos":
        qn = torch.linalg.vector_norm(qd, dim=-1)[..., :, None]
        xn = torch.linalg.vector_norm(xd, dim=-1)[..., None, :]
        norms = qn * xn
        return torch.where(norms > 0, dots / norms.clamp_min(1e-300), torch.zeros_like(dots))
    largest(metric)
    # Squared distances from differences would cost Q x M x D memory; the expansion in float64
    # is exact to about 1e-16 of the norms, far below any tolerance used here.
    return ((qd * qd).sum(-1)[..., :, None] + (xd * xd).sum(-1)[..., None, :] - 2 * dots).clamp_min(0)


def _rank(s, k, best_large):
    """(values, indices) of the k best entries of each row of s, best first, ties to the smaller index."""
    key = -s if best_large else s
    order = torch.sort(key, dim=-1, stable=True).indices[..., :k]
    return torch.gather(s, -1, order), order


def knn(q, x, k, metric="l2", exclude_self=False):
    """(scores float64 [..., Q, k], indices int64 [..., Q, k]): the k best database rows per query."""
    best_large = largest(metric)
    lead = q.shape[:-2]
    qf, xf = q.reshape(-1, *q.shape[-2:]), x.reshape(-1, *x.shape[-2:])
    vals, idxs = [], []
    for b in range(qf.shape[0]):
        v_b, i_b = [], []
        for i0 in range(0, qf.shape[1], _QUERIES_PER_CHUNK):
            s = scores(qf[b, i0 : i0 + _QUERIES_PER_CHUNK], xf[b], metric)
            if exclude_self:
                rows = torch.arange(i0, i0 + s.shape[0], device=s.device)
                s[torch.arange(s.shape[0], device=s.device), rows] = -math.inf if best_large else math.inf
            v, i = _rank(s, k, best_large)
            v_b.append(v)
            i_b.append(i)
        vals.append(torch.cat(v_b))
        idxs.append(torch.cat(i_b))
    return torch.stack(vals).reshape(*lead, -1, k), torch.stack(idxs).reshape(*lead, -1, k)


def ranking_scores(q, x, metric):
    """The scores the score kernels rank by (float64): x_sq - 2 q.x (l2), q.x (ip), q.x / ||x|| (cos)."""
    qd, xd = q.double(), x.double()
    dots = qd @ xd.transpose(-1, -2)
    if metric == "ip":
        return dots
    xn = torch.linalg.vector_norm(xd, dim=-1)[..., None, :]
    if metric == "cos":
        return torch.where(xn > 0, dots / xn.clamp_min(1e-300), torch.zeros_like(dots))
    largest(metric)
    return xn * xn - 2 * dots


def partial_lists(q, x, k, owners, metric="l2", exclude_self=False):
    """(part_v float64 [B, P, Q, k], part_i int64 [B, P, Q, k]): each partial list's k best rows by ranking score.

    `owners` [M] (int64, in [0, P)) says which partial list each database row feeds, as a
    score kernel's split into ranges and list owners does; an entry with no candidate
    holds the worst score and index -1.
    """
    best_large = largest(metric)
    s = ranking_scores(q, x, metric)
    if exclude_self:
        nq = s.shape[1]
        s = s.clone()
        s[:, torch.arange(nq), torch.arange(nq)] = -math.inf if best_large else math.inf
    return partial_lists_of(s, torch.arange(s.shape[-1]), owners, k, best_large)


def group_best_lists(q, x, k, owners, groups, metric="l2"):
    """(part_v float64 [B, P, Q, k], part_i int64 [B, P, Q, k]) of a seeding pass (a score kernel's minima form):
    each partial list's k best group bests, a group's best being the best ranking score of its rows.

    `owners` [M] says which partial list each database row feeds and `groups` [M] which group (named
    by its first row; a group feeds one list). The k-th entry of the merged lists bounds each
    query's k-th score: its k entries are reached by k distinct rows.
    """
    return group_best_lists_of(ranking_scores(q, x, metric), owners, groups, k, largest(metric))


def group_best_lists_of(s, owners, groups, k, best_large):
    """group_best_lists from ranking scores s [B, Q, M] (M: the rows the groups cover)."""
    names = torch.unique(groups)
    bests = torch.stack([(s[..., groups == g].amax(-1) if best_large else s[..., groups == g].amin(-1)) for g in names], -1)
    group_owner = torch.stack([owners[groups == g][0] for g in names])
    return partial_lists_of(bests, names, group_owner, k, best_large)


def partial_lists_of(s, names, owners, k, best_large):
    """The k best columns of scores s [B, Q, N] per owner (owners [N] in [0, P)), named by `names` [N]."""
    worst = -math.inf if best_large else math.inf
    b, nq, _ = s.shape
    p = int(owners.max().item()) + 1 if owners.numel() else 1
    part_v = torch.full((b, p, nq, k), worst, dtype=torch.float64)
    part_i = torch.full((b, p, nq, k), -1, dtype=torch.int64)
    for owner in range(p):
        cols = torch.nonzero(owners == owner).flatten()
        if not cols.numel():
            continue
        v, i = _rank(s[:, :, cols], min(k, cols.numel()), best_large)
        kept = v != worst
        part_v[:, owner, :, : v.shape[-1]] = torch.where(kept, v, part_v[:, owner, :, : v.shape[-1]])
        part_i[:, owner, :, : v.shape[-1]] = torch.where(kept, names[cols][i], part_i[:, owner, :, : v.shape[-1]])
    return part_v, part_i


def merge_lists(q, x, part_v, part_i, k, metric="l2"):
    """(dist, idx) of the merge kernel: the best k entries of the partial lists by ranking score,
    rescored exactly (float64 here) and sorted by exact score, ties to the smaller index."""
    best_large = largest(metric)
    b, p, nq, kk = part_v.shape
    cand_v = part_v.permute(0, 2, 1, 3).reshape(b, nq, p * kk)
    cand_i = part_i.permute(0, 2, 1, 3).reshape(b, nq, p * kk)
    # Rank by (score, index): sort by index first, then stably by score.
    by_index = torch.sort(cand_i, dim=-1, stable=True).indices
    cand_v, cand_i = torch.gather(cand_v, -1, by_index), torch.gather(cand_i, -1, by_index)
    _, order = _rank(cand_v, k, best_large)
    winners = torch.gather(cand_i, -1, order)
    exact = scores(q, x, metric)
    valid = winners >= 0
    got = torch.gather(exact, -1, winners.clamp_min(0))
    got = torch.where(valid, got, torch.full_like(got, -math.inf if best_large else math.inf))
    by_index = torch.sort(winners, dim=-1, stable=True).indices
    got, winners = torch.gather(got, -1, by_index), torch.gather(winners, -1, by_index)
    v, order = _rank(got, k, best_large)
    return v, torch.gather(winners, -1, order)


def fan_in_lists(part_v, part_i, k, metric="l2", group=32):
    """(out_v, out_i) of the fan-in kernel: per query, the k best entries (ranking score, then index) of each group of
    `group` consecutive partial lists of part_v/part_i [B, P, Q, k], best first: [B, P / group, Q, k]."""
    best_large = largest(metric)
    b, p, nq, kk = part_v.shape
    g = p // group
    v = part_v.reshape(b, g, group, nq, kk).permute(0, 1, 3, 2, 4).reshape(b, g, nq, group * kk)
    i = part_i.reshape(b, g, group, nq, kk).permute(0, 1, 3, 2, 4).reshape(b, g, nq, group * kk)
    by_index = torch.sort(i, dim=-1, stable=True).indices
    v, i = torch.gather(v, -1, by_index), torch.gather(i, -1, by_index)
    top, order = _rank(v, k, best_large)
    return top, torch.gather(i, -1, order)


def recall(idx, ref_idx):
    """Fraction of the reference neighbours (ref_idx [..., Q, k]) that idx [..., Q, k] found, over all queries."""
    found = (idx.long()[..., :, None] == ref_idx.long()[..., None, :]).any(-2)
    return found.float().mean().item()


def union_bound(part_v, k, metric="l2"):
    """[B, Q]: the k-th best entry of the union of each query's partial lists part_v [B, P, Q, k'] (the worst score
    when they hold fewer than k entries). Entries of disjoint lists name distinct rows, so at least k rows of the
    database score at least that well: a bound on the k-th score (the wide-k path's seeding, kernels/knn/wide_select.py)."""
    best_large = largest(metric)
    b, p, nq, kk = part_v.shape
    union = part_v.permute(0, 2, 1, 3).reshape(b, nq, p * kk)
    if p * kk < k:
        return torch.full((b, nq), -math.inf if best_large else math.inf, dtype=part_v.dtype)
    return torch.topk(union, k, dim=-1, largest=best_large).values[..., k - 1]


def collected(s, bound, metric="l2", exclude_self=False):
    """(mask [B, Q, M], count [B, Q]) of a filter kernel (TopKCollect) on ranking scores s [B, Q, M]: the rows whose
    score beats the query's bound (strictly), its own row left out for self-KNN."""
    best_large = largest(metric)
    mask = s > bound[..., None] if best_large else s < bound[..., None]
    if exclude_self:
        n = min(s.shape[-2], s.shape[-1])
        mask[..., torch.arange(n), torch.arange(n)] = False
    return mask, mask.sum(-1)


def select_candidates(q, x, cand_v, cand_i, count, k, metric="l2"):
    """(dist, idx) of the select kernel (TopKSelect): of the first min(count, C) candidates per query, the k best by
    ranking score (ties to the smaller index), rescored exactly (float64 here) and sorted; worst score, index -1
    past the candidates."""
    best_large = largest(metric)
    c = cand_v.shape[-1]
    valid = torch.arange(c)[None, None, :] < count.clamp(max=c)[..., None]
    worst = -math.inf if best_large else math.inf
    v = torch.where(valid, cand_v.double(), torch.full_like(cand_v.double(), worst))
    i = torch.where(valid, cand_i.long(), torch.full_like(cand_i.long(), -1))
    return merge_lists(q, x, v[:, None], i[:, None], k, metric)
