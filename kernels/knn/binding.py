"""How a compiled KNN score kernel is launched by the oracle and the timer (worker side): the search it is part of.

A score kernel (schedules.py's contract: partial top-k lists per query and database
range) is one launch of a search; `search(runner, options)` returns launch(outputs,
inputs) that runs the whole search, as `knn` does: it splits the database into S ranges
of T tiles (`symbols`, from the rows of the tiles the kernel loads: options["tile_rows"],
agent/ir_edit.tile_rows), launches the candidate into a workspace of partial lists,
then the merge kernel (schedules.merge: combine, rescore exactly in f32, sort) into
(dist, idx). The squared norms of the database rows (`col`) are kept per database
tensor (`Norms`), as KnnIndex keeps them (and as the CAKE search row of bench.py times
it); a database written in place or a new one gets new norms.

`symbols(shapes, tile_rows)` is also what the agent's cost model analyzes a candidate
at (the contract file's `symbols`), so both see the same launch.
"""

import math
import weakref

# Blocks a search aims for: four per SM of the H200's 132, so ranges balance over the SMs.
TARGET_BLOCKS = 4 * 132
LISTS_PER_RANGE = 1  # what the score kernels of the naive family write (their contract's P >= S)


def _ceil(a, b):
    return -(-a // b)


def symbols(shapes, tile_rows):
    """{"S", "T", "P", "MP"}: ranges, tiles per range, workspace lists (whole warps for the merge) and col's
    length for a search of `shapes` (B, Q, M) by a kernel whose tiles hold tile_rows["q"] queries and
    tile_rows["x"] database rows."""
    block_n, block_q = tile_rows.get("x") or 64, tile_rows.get("q") or 64
    b, nq, m = shapes["B"], shapes["Q"], shapes["M"]
    tiles = _ceil(m, block_n)
    query_blocks = b * _ceil(nq, block_q)
    s = max(1, min(tiles, _ceil(TARGET_BLOCKS, query_blocks)))
    t = _ceil(tiles, s)
    s = _ceil(tiles, t)
    return {"S": s, "T": t, "P": 32 * _ceil(s * LISTS_PER_RANGE, 32), "MP": 4 * _ceil(m, 4)}


class Norms:
    """||x||^2 per database row, padded to MP with zeros, kept while the same tensor holds the same data.

    The last KEEP databases are kept (the timer alternates input sets: keeping one recomputed the norms of a
    10M-row database, 5 ms, on every call), and the squares are summed a chunk of rows at a time, never
    widening the whole database to f32 at once.
    """

    KEEP = 4
    ROWS_PER_CHUNK = 1 << 20

    def __init__(self):
        self._kept = {}  # id(x) -> (weakref to x, x._version, col), oldest first

    def __call__(self, x, mp):
        import torch

        key = id(x)
        kept = self._kept.pop(key, None)
        if kept is None or kept[0]() is not x or kept[1] != x._version or kept[2].shape[1] != mp:
            col = torch.zeros((x.shape[0], mp), dtype=torch.float32, device=x.device)
            for j in range(0, x.shape[1], self.ROWS_PER_CHUNK):
                xf = x[:, j : j + self.ROWS_PER_CHUNK].float()
                col[:, j : j + xf.shape[1]] = torch.linalg.vecdot(xf, xf, dim=-1)
            kept = (weakref.ref(x), x._version, col)
        self._kept[key] = kept  # the most recent last
        while len(self._kept) > self.KEEP:
            self._kept.pop(next(iter(self._kept)))
        return kept[2]


def search(runner, options):
    import torch

    from kernels.knn import dispatch
    from runtime.compiled import CompiledKernelRunner

    tiles = options.get("tile_rows") or {}
    k = next(s.value for s in runner.md.symbols if s.name == "k")
    norms = Norms()
    merges = {}

    def launch(outputs, inputs):
        q, x = inputs
        b, nq, _ = q.shape
        sym = symbols({"B": b, "Q": nq, "M": x.shape[1]}, tiles)
        part_v, part_i = dispatch.workspace(b, sym["S"] * LISTS_PER_RANGE, sym["P"], nq, k, math.inf, q.device)
        runner(q=q, x=x, col=norms(x, sym["MP"]), part_v=part_v, part_i=part_i, symbols={"S": sym["S"], "T": sym["T"]})
        key = (q.dtype, outputs[1].dtype)
        if key not in merges:
            merges[key] = CompiledKernelRunner(dispatch.compiled(*dispatch.merge_builder(k, "l2", *key)))
        merges[key](q=q, x=x, part_v=part_v, part_i=part_i, dist=outputs[0], idx=outputs[1])

    return launch


def peers():
    """name -> launch(outputs, inputs): flashlib's flash_knn and the CAKE KNN search (kernels/knn/api.py), each made
    for the shape of its first call (bench.py's implementations)."""
    from kernels.knn import bench

    def lazy(make):
        made = {}

        def launch(outputs, inputs):
            q, x = inputs
            shape = {"B": q.shape[0], "Q": q.shape[1], "M": x.shape[1], "D": q.shape[2], "k": outputs[0].shape[-1],
                     "metric": "l2", "self": q is x}
            key = tuple(sorted(shape.items()))
            if key not in made:
                made[key] = make(shape)
            made[key](outputs, inputs)

        return launch

    out = {"cake-tuned": lazy(bench.cake_impl)}
    try:
        import flashlib.primitives.knn  # noqa: F401
    except ImportError as e:
        print("flashlib unavailable:", e)
    else:
        out["flashlib"] = lazy(bench.flashlib_impl)
    return out
