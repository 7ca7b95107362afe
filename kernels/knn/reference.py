"""KNN oracle: the k nearest database rows of each query in squared L2 distance, and recall.

q [Q, D] queries, x [M, D] database. Distances are expanded as
||q||^2 + ||x||^2 - 2 q.x, which is what the top-k kernels compute (they take the norms
precomputed as `q_sq` and `x_sq`); the oracle evaluates it in float64, where bf16 or
fp32 inputs make it exact to rounding, and ranks with a stable sort so equal
distances go to the smaller database index.
"""

import torch

# Queries ranked at once: bounds the oracle's [queries, M] distance matrix.
_QUERIES_PER_CHUNK = 1 << 10


def sq_norms(t):
    """||t[i, :]||^2 per row in float32: the `q_sq` / `x_sq` a kernel takes."""
    t = t.float()
    return (t * t).sum(-1)


def knn(q, x, k, q_sq=None, x_sq=None):
    """(dist f32 [Q, k] ascending, idx int32 [Q, k]): the k nearest rows of x to each query.

    dist[i, j] = q_sq[i] + x_sq[idx[i, j]] - 2 q[i] . x[idx[i, j]], with the norms
    computed from q and x unless given; ties go to the smaller index.
    """
    qd, xd = q.double(), x.double()
    q_sq = (qd * qd).sum(-1) if q_sq is None else q_sq.double().reshape(-1)
    x_sq = (xd * xd).sum(-1) if x_sq is None else x_sq.double().reshape(-1)
    dists, idxs = [], []
    for i0 in range(0, q.shape[0], _QUERIES_PER_CHUNK):
        d = q_sq[i0 : i0 + _QUERIES_PER_CHUNK, None] + x_sq[None, :] - 2 * qd[i0 : i0 + _QUERIES_PER_CHUNK] @ xd.T
        d, i = torch.sort(d, dim=1, stable=True)
        dists.append(d[:, :k])
        idxs.append(i[:, :k])
    return torch.cat(dists).float(), torch.cat(idxs).to(torch.int32)


def recall(idx, ref_idx):
    """Fraction of the reference neighbours (ref_idx [Q, k]) that idx [Q, k] found, over all queries."""
    found = (idx.long()[:, :, None] == ref_idx.long()[:, None, :]).any(1)
    return found.float().mean().item()
