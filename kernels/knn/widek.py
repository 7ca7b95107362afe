"""How a wide-k search (33 <= k <= 256) runs: the seeding pass, the filter, the select (kernels/knn/wide_select.py).

`WideCall` holds one search's prepared launches and buffers, kept in the database's calls like the
k <= 32 path's (kernels/knn/dispatch.py), so a repeated search costs its launches, a few torch ops for
the bound and one device-to-host read of the overflow flag: a query whose buffer overflowed is searched
again on the exact torch path, so results never depend on the buffer's size.
"""

import torch

from kernels.knn import dispatch
from kernels.knn import plan as planner
from kernels.knn import rows as knn_rows
from kernels.knn import schedules, torch_path, wide_select

FILTER_K = 8  # the filter keeps no lists: it is planned as the smallest lists' kernel (whatever fits those fits it)
MAX_BUFFER_BYTES = 8 << 30  # candidate buffers (8 bytes a slot) of one search: past it, the torch path


def filter_builder(p, metric, exclude_self, dtype):
    return "filter_kernel", (("dtype", dtype), ("exclude_self", exclude_self), ("metric", metric), ("params", p.params))


def select_builder(cap, metric, dtype, index_dtype):
    return "select_kernel", (("capacity", cap), ("dtype", dispatch.DTYPES[dtype]),
                             ("index_dtype", dispatch.INDEX_DTYPES[index_dtype]), ("metric", metric))


def seed_plan(b, q, m, d, k, sms):
    """(Plan, rows covered) of the seeding pass: the minima form over at most the first M / SAMPLE rows, with enough
    partial lists that their union holds SEED_ENTRIES_PER_K (k + 1) entries (the planner's own split, or more
    ranges of fewer tiles); (None, 0) when no sample is large enough."""
    rows = wide_select.sample_rows(m, k)
    if not rows:
        return None, 0
    p = planner.plan(b, q, rows, d, wide_select.SEED_K, layout="rows", sms=sms, rows=planner.SEED_ROWS, minima=True)
    inter, bn = p.kwargs["interleave"], p.kwargs["block_n"]
    need = -(-wide_select.SEED_ENTRIES_PER_K * (k + 1) // wide_select.SEED_K)
    if p.lists < need:
        tiles = rows // bn
        t = max(inter, tiles // -(-need // inter) // inter * inter)
        s = tiles // t
        if s * inter * wide_select.SEED_K < k + 1:
            return None, 0
        lists = s * inter
        p = planner.Plan(p.layout, p.params, s, t, lists, lists if lists == 1 else -(-lists // 32) * 32)
    return p, p.splits * p.tiles * bn


def plans(b, q, m, d, k, sms):
    """(seed plan or None, rows it covers, filter plan, buffer slots per query)."""
    fp = planner.plan(b, q, m, d, FILTER_K, layout="rows", sms=sms, seeded=True)
    sp, covered = seed_plan(b, q, m, d, k, sms)
    return sp, covered, fp, wide_select.capacity(k, None if sp is not None else m)


def kernels_for(b, q, m, d, k, metric="l2", exclude_self=False, dtype=torch.bfloat16, index_dtype=torch.int32,
                device_index=None):
    """The (builder, parameters) pairs of the kernels a wide-k search of these sizes runs (to build them ahead)."""
    rank_d, rank_dtype = dispatch.rank_shape(d, dtype)
    sp, _, fp, cap = plans(b, q, m, rank_d, k, planner.device_sms(device_index))
    out = [filter_builder(fp, metric, exclude_self, dispatch.DTYPES[rank_dtype]),
           select_builder(cap, metric, dtype, index_dtype)]
    if sp is not None:
        out.append(dispatch.score_builder(sp, metric, False, dispatch.DTYPES[rank_dtype]))
    return out


class WideCall:
    """The prepared kernels and buffers of wide-k searches of `db` for queries like q_rank (same address and shape)."""

    def __init__(self, q_rank, q_rows, db, k, exclude_self, index_dtype):
        b, nq, d = q_rank.shape
        m = db.shape[1]
        dev = q_rank.device
        self.device_index = dev.index
        self.k, self.metric, self.exclude_self = k, db.metric, exclude_self
        sp, self.sample, fp, cap = plans(b, nq, m, d, k, planner.device_sms(self.device_index))
        self.kth = k + 1 if exclude_self else k  # the seeding pass excludes no row: a query's own may be among them
        self.largest = schedules.largest(db.metric)
        worst = wide_select.worst(db.metric)
        self.bound = torch.full((b, nq), worst, dtype=torch.float32, device=dev)
        self.seed = None
        if sp is not None:
            self.seed = dispatch._Score(sp, q_rank, db.rank, db.col, wide_select.SEED_K, db.metric, False)
            self.slack = dispatch.RoundingSlack(db, q_rank)
            self._worst = torch.full((b, nq), worst, dtype=torch.float32, device=dev)
        self.cand_v = torch.empty((b, nq, cap), dtype=torch.float32, device=dev)
        self.cand_i = torch.empty((b, nq, cap), dtype=torch.int32, device=dev)
        self.count = torch.zeros((b, nq), dtype=torch.int32, device=dev)
        self.filter = dispatch.launcher(*filter_builder(fp, db.metric, exclude_self, dispatch.DTYPES[q_rank.dtype]))
        tensors = dict(q=q_rank, x=db.rank, cand_v=self.cand_v, cand_i=self.cand_i, count=self.count, bound=self.bound)
        if db.col is not None:
            tensors["col"] = db.col
        self.filter_prepared = self.filter.prepare(tensors, symbols={"S": fp.splits, "T": fp.tiles})
        self.select = dispatch.launcher(*select_builder(cap, db.metric, db.rows.dtype, index_dtype), late=("dist", "idx"))
        self.q_rows, self.db = q_rows, db
        self.cap = cap
        self.select_dist = torch.empty((b, nq, k), dtype=torch.float32, device=dev)
        self.select_idx = torch.empty((b, nq, k), dtype=index_dtype, device=dev)
        self.select_prepared = self.select.prepare(dict(q=q_rows, x=db.rows, cand_v=self.cand_v, cand_i=self.cand_i,
                                                        count=self.count, dist=self.select_dist, idx=self.select_idx))
        self.staged = None

    def _bound(self, q_rank):
        """bound = the k-th best of the seeding pass's lists (their union: distinct rows), loosened by the rounding
        bound and one ulp (the filter appends what beats it strictly)."""
        # The score kernel's own partial lists, not a fan-in's: a fan-in keeps 32 entries of each 32 lists, and the
        # union must hold k + 1 (on the H200 at B 3, Q 3, M 179629, k 127 it held 96: no bound, every row a
        # candidate, the overflow's torch path; knn_widek_h200.json).
        self.seed.launch.launch(self.seed.prepared, self.device_index)
        v = self.seed.part_v  # [B, P, Q, 32]
        b, p, nq, kk = v.shape
        union = v.permute(0, 2, 1, 3).reshape(b, nq, p * kk)
        kth = torch.topk(union, self.kth, dim=-1, largest=self.largest, sorted=False).values
        kth = kth.amin(-1) if self.largest else kth.amax(-1)
        self.slack.loosen(kth, q_rank, self.bound)
        torch.nextafter(self.bound, self._worst, out=self.bound)  # the filter appends scores that beat it strictly

    def run(self, q_rank, q3, dist, idx):
        if self.seed is not None:
            self._bound(q_rank)
        self.count.zero_()
        self.filter.launch(self.filter_prepared, self.device_index)
        self.select.launch(self.select_prepared, self.device_index, dist=dist, idx=idx)
        over = self.count > self.cap
        if bool(over.any()):  # rare: those queries again on the exact torch path
            d2, i2 = torch.empty_like(dist), torch.empty_like(idx)
            torch_path.search_into(knn_rows.rescoring_rows(q3), self.db, self.k, self.exclude_self, d2, i2)
            dist[over], idx[over] = d2[over], i2[over]
        return dist, idx


def search_into(q3, db, k, exclude_self, dist, idx):
    """Write the k best of database `db` for [B, Q, D] queries q3 into dist [B, Q, k] f32 and idx [B, Q, k]
    (on the exact torch path when the candidate buffers would pass MAX_BUFFER_BYTES)."""
    key = ("wide", q3.data_ptr(), tuple(q3.shape), q3.dtype, k, exclude_self, idx.dtype)
    call = db.calls.get(key)
    if call is None and q3.shape[0] * q3.shape[1] * wide_select.capacity(k) * 8 > MAX_BUFFER_BYTES:
        return torch_path.search_into(knn_rows.rescoring_rows(q3), db, k, exclude_self, dist, idx)
    if call is None:
        staged = None if knn_rows.in_place(q3) else knn_rows.Rows(q3, "q")
        q_rank, q_rows = (q3, q3) if staged is None else (staged.rank, staged.rows)
        if len(db.calls) >= dispatch.MAX_CALLS:
            db.calls.clear()
        call = WideCall(q_rank, q_rows, db, k, exclude_self, idx.dtype)
        call.staged = staged
        db.calls[key] = call
    elif call.staged is not None:
        call.staged.refill(q3)
    return call.run(q3 if call.staged is None else call.staged.rank, q3, dist, idx)
