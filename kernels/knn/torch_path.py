"""The exact torch path of a KNN search: k past the kernels' register lists (MAX_K < k <= MAX_TORCH_K).

Per problem and chunk of queries: ranking scores in f32 from the 16-bit rows (cuBLAS with f32
outputs, the score matrix at most 2^28 entries), torch.topk, then the k winners rescored
exactly in f32 from the rows (squared L2 distance clamped at 0, inner product, cosine
similarity) and sorted, ties to the smaller index, as the merge kernel does. It reads the
same prepared rows as the kernels (kernels/knn/rows.py), so every option the API takes works.
"""

import torch

SCORES_PER_CHUNK = 1 << 28  # f32 scores held at once (1 GiB)


def f32_products(device="cuda"):
    """(mm, widen): q @ x.T with f32 results (cuBLAS's out_dtype for 16-bit inputs where torch has it, else
    f32 copies of the inputs) and the conversion its inputs need first."""
    try:
        a = torch.ones(16, 16, device=device, dtype=torch.bfloat16)
        torch.mm(a, a, out_dtype=torch.float32)
        return (lambda qc, xt: torch.mm(qc, xt, out_dtype=torch.float32)), (lambda t: t)
    except (TypeError, RuntimeError):
        return (lambda qc, xt: torch.mm(qc, xt)), (lambda t: t.float())


def _exact(qc, xr, metric):
    """Exact f32 scores of queries qc [c, D] against their candidates xr [c, k, D]."""
    qf, xf = qc.float()[:, None, :], xr.float()
    if metric == "l2":
        return ((qf - xf) ** 2).sum(-1)
    dots = (qf * xf).sum(-1)
    if metric == "ip":
        return dots
    norms = torch.linalg.vector_norm(qf, dim=-1) * torch.linalg.vector_norm(xf, dim=-1)
    return torch.where(norms > 0, dots / norms.clamp_min(1e-30), torch.zeros_like(dots))


def search_into(q_rows, db, k, exclude_self, dist, idx):
    """The k best rows of database `db` for queries q_rows [B, Q, D'] (its rescoring rows' width) into dist, idx."""
    largest = db.metric != "l2"
    worst = -torch.inf if largest else torch.inf
    mm, widen = f32_products(q_rows.device)
    b, nq = q_rows.shape[0], q_rows.shape[1]
    m = db.shape[1]
    chunk = max(1, min(nq, SCORES_PER_CHUNK // m))
    for bi in range(b):
        x = db.rows[bi]
        xt = widen(x).T
        col = None if db.col is None else db.col[bi, :m]
        for i0 in range(0, nq, chunk):
            qc = q_rows[bi, i0 : i0 + chunk]
            s = mm(widen(qc), xt)
            if db.metric == "l2":
                s = col[None] - 2 * s
            elif db.metric == "cos":
                s = s * col[None]
            if exclude_self:
                rows = torch.arange(qc.shape[0], device=s.device)
                s[rows, i0 + rows] = worst
            top = torch.topk(s, k, dim=1, largest=largest).indices
            del s
            exact = _exact(qc, x[top], db.metric)
            # Best first, ties to the smaller index: order by index, then stably by score.
            top, order = torch.sort(top, dim=1)
            exact = torch.gather(exact, 1, order)
            exact, order = torch.sort(exact, dim=1, descending=largest, stable=True)
            dist[bi, i0 : i0 + chunk] = exact
            idx[bi, i0 : i0 + chunk] = torch.gather(top, 1, order).to(idx.dtype)
    return dist, idx
