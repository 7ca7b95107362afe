"""CPU emulation of the wide-k search (kernels/knn/widek.py) on float64 ranking scores: the seeding pass's minima
lists over the rows its plan covers (reference.group_best_lists with the rows layout's owners and groups), their
union's bound, the filter (reference.collected) and the select (reference.select_candidates), as the kernels run
them; a test compares the result with reference.knn."""

import torch

from kernels.knn import reference, wide_select, widek


def minima_owners(plan, rows):
    """(owners, groups) [rows] of the rows a rows-layout minima plan covers: partial list si * C + class, and the
    group named by the first row of its column in the class's first tile of the range."""
    kw = plan.kwargs
    bn, inter, t = kw["block_n"], kw["interleave"], plan.tiles
    r = torch.arange(rows)
    tile = r // bn
    si, j = tile // t, tile % t
    cls = j % inter
    return si * inter + cls, (si * t + cls) * bn + r % bn


def search(q, x, k, metric="l2", exclude_self=False, sms=132):
    """(dist, idx, overflowed [B, Q]) of the wide-k search of q [B, Q, D] in x [B, M, D] (float64 emulation)."""
    b, nq, d = q.shape
    m = x.shape[1]
    sp, covered, _, cap = widek.plans(b, nq, m, -(-d // 8) * 8, k, sms)
    best_large = reference.largest(metric)
    s = reference.ranking_scores(q, x, metric)
    if sp is None:
        bound = torch.full((b, nq), -torch.inf if best_large else torch.inf, dtype=torch.float64)
    else:
        owners, groups = minima_owners(sp, covered)
        part_v, _ = reference.group_best_lists_of(s[..., :covered], owners, groups, wide_select.SEED_K, best_large)
        bound = reference.union_bound(part_v, k + 1 if exclude_self else k, metric)
        bound = torch.nextafter(bound, torch.full_like(bound, -torch.inf if best_large else torch.inf))
    mask, count = reference.collected(s, bound, metric, exclude_self)
    cand_v = torch.full((b, nq, cap), torch.nan, dtype=torch.float64)
    cand_i = torch.full((b, nq, cap), -1, dtype=torch.int64)
    for bi in range(b):
        for i in range(nq):
            rows = mask[bi, i].nonzero().flatten()[:cap]
            rows = rows[torch.randperm(rows.numel())]  # appended in no order
            cand_v[bi, i, : rows.numel()] = s[bi, i, rows]
            cand_i[bi, i, : rows.numel()] = rows
    dist, idx = reference.select_candidates(q, x, cand_v, cand_i, count, k, metric)
    return dist, idx, count > cap
