"""The rows the KNN kernels read: queries and database rows padded or split for the tensor cores, and norms.

- `ranking_rows`: what the score kernels multiply (bf16/f16 rows padded to a multiple of 8
  features; float32 rows as the three-term bf16 split [th, th, tl] / [th, tl, th] of
  t = th + tl, so q.x ~ qh.xh + qh.xl + ql.xh).
- `Database`: a database as the kernels read it: ranking rows, rescoring rows, the per-row
  column vector (||x||^2 for l2, 1 / ||x|| for cosine), the sample a seeding pass scores and
  the largest ranking-row norm. `refresh(x)` recomputes everything derived from x in place
  (same buffers, so launches prepared on them stay valid): what `knn()` does on every call
  with a database it has seen, so repeated calls reuse their prepared launches but never
  stale norms.
"""

import torch


def padded(t, width, out=None):
    """t with its feature dim zero-padded to `width` (t itself when it already is that wide and no `out`
    is given; else written into `out`, whose padding stays zero)."""
    t = t.contiguous()
    if out is None:
        if t.shape[-1] == width:
            return t
        out = t.new_zeros((*t.shape[:-1], width))
    out[..., : t.shape[-1]] = t
    return out


def ranking_rows(t, split_role, out=None):
    """The bf16/f16 rows the score kernel multiplies: t padded to 8 features, or for float32 the
    three-term split [th, th, tl] (queries) / [th, tl, th] (database) of t = th + tl (into `out` when given)."""
    d = t.shape[-1]
    if t.dtype != torch.float32:
        return padded(t, -(-d // 8) * 8, out)
    if out is None:
        out = torch.zeros((*t.shape[:-1], -(-3 * d // 8) * 8), dtype=torch.bfloat16, device=t.device)
    hi = t.to(torch.bfloat16)
    parts = (0, 1) if split_role == "q" else (0, 2)
    for p in parts:
        out[..., p * d : (p + 1) * d] = hi
    out[..., (2 if split_role == "q" else 1) * d : (3 if split_role == "q" else 2) * d] = t - hi.float()
    return out


def rescoring_rows(t, out=None):
    """The rows the merge kernel rescores from: t (16-bit) or float32, padded to a multiple of 8 features."""
    return padded(t, -(-t.shape[-1] // 8) * 8, out)


def in_place(t):
    """Whether the kernels read t itself (16-bit, features a multiple of 8, contiguous): no copy per call."""
    return t.dtype != torch.float32 and t.shape[-1] % 8 == 0 and t.is_contiguous()


class Rows:
    """Ranking and rescoring rows of a tensor, in buffers kept between calls (t itself when read in place)."""

    def __init__(self, t, split_role):
        self.role = split_role
        self.rank = ranking_rows(t, split_role)
        self.rows = self.rank if t.dtype != torch.float32 else rescoring_rows(t)
        self.owned = not in_place(t)

    def refill(self, t):
        """Write t's rows into the buffers (the tensors the kernels read stay where they are)."""
        if self.owned:
            ranking_rows(t, self.role, self.rank)
            if self.rows is not self.rank:
                rescoring_rows(t, self.rows)
        else:
            self.rank = self.rows = t


def _fill_column_vector(out, x, metric):
    m = x.shape[1]
    norm = torch.linalg.vector_norm(x, dim=-1, dtype=torch.float32)  # f32 accumulation, no f32 copy of x
    if metric == "l2":
        out[:, :m] = norm.square()
    else:
        out[:, :m] = torch.where(norm > 0, 1.0 / norm.clamp_min(1e-30), torch.zeros_like(norm))


def column_vector(x, metric):
    """Per database row: ||x||^2 (l2) or 1 / ||x|| (cosine), fp32, rows padded to a multiple of 4 (None for ip)."""
    if metric == "ip":
        return None
    out = torch.zeros((x.shape[0], -(-x.shape[1] // 4) * 4), dtype=torch.float32, device=x.device)
    _fill_column_vector(out, x, metric)
    return out


class Database:
    """A database's rows as the kernels read them: ranking rows, rescoring rows, the column vector, and
    (made on first use) the sample a seeding pass scores and the largest ranking-row norm.

    `calls` holds the prepared launches of searches of this database (kernels/knn/dispatch.py),
    so they live exactly as long as the database does; `fast` the API's per-call paths onto them
    (kernels/knn/api.py), dropped with them (`forget`).
    """

    def __init__(self, x3, metric):
        r = Rows(x3, "x")
        self._set(metric, x3.dtype, tuple(x3.shape), r.rank, r.rows, column_vector(x3, metric), None)
        self._rows = r

    @classmethod
    def of(cls, metric, dtype, shape, rank, rows, col, max_norm):
        """A database from tensors prepared earlier (what KnnIndex keeps and passes to its op)."""
        db = cls.__new__(cls)
        db._set(metric, dtype, shape, rank, rows, col, max_norm)
        db._rows = None
        return db

    def _set(self, metric, dtype, shape, rank, rows, col, max_norm):
        self.metric, self.dtype, self.shape = metric, dtype, shape
        self.rank, self.rows, self.col = rank, rows, col
        self._sample = {}
        self._max_norm = max_norm
        self.calls = {}
        self.fast = {}

    def forget(self):
        """Drop the prepared searches and the per-call paths onto them (they are prepared again on next use)."""
        self.calls.clear()
        self.fast.clear()

    def bind(self, x3):
        """Read the rows of x3 (at the address and shape this database was made for) from now on."""
        if not self._rows.owned:
            self.rank = self.rows = x3

    def refresh(self, x3):
        """Recompute what derives from x3 into the same buffers (the rows when they are copies, the norms)."""
        self._rows.refill(x3)
        self.rank, self.rows = self._rows.rank, self._rows.rows
        if self.col is not None:
            _fill_column_vector(self.col, x3, self.metric)
        for rows, (rank, col) in self._sample.items():  # copies (views of the caller's rows were dropped)
            if rank.data_ptr() != self.rank.data_ptr():  # a view of our own rows needs nothing
                rank.copy_(self.rank[:, :rows])
                if col is not None:
                    col.copy_(self.col[:, : col.shape[1]])
        if self._max_norm is not None:
            self._max_norm.copy_(self._compute_max_norm())

    def release(self):
        """Drop the references to the caller's rows (a cached database keeps only what it made itself)."""
        if self._rows.owned:
            return
        x = self.rank
        self.rank = self.rows = None
        self._sample = {r: s for r, s in self._sample.items() if s[0].untyped_storage().data_ptr()
                        != x.untyped_storage().data_ptr()}

    def sample(self, rows):
        """The first `rows` database rows (rank, col) as the score kernel reads them (no copy for one problem)."""
        got = self._sample.get(rows)
        if got is None:
            rank = self.rank[:, :rows].contiguous()
            col = None if self.col is None else self.col[:, : -(-rows // 4) * 4].contiguous()
            got = self._sample[rows] = (rank, col)
        return got

    def _compute_max_norm(self):
        if self.metric == "l2" and self.dtype != torch.float32:
            return self.col.max().clamp_min(0).sqrt().reshape(1)
        return torch.linalg.vector_norm(self.rank, dim=-1, dtype=torch.float32).max().reshape(1)

    def max_norm(self):
        """The largest norm of a ranking row (bounds the rounding of any ranking score)."""
        if self._max_norm is None:
            self._max_norm = self._compute_max_norm()
        return self._max_norm
