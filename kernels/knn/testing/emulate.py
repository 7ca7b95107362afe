"""CPU emulation of the KNN kernels' top-k algorithm, thread by thread, as the GPU runs it.

Mirrors cake/warp/topk.cuh (insert, merge_lanes, sort, threshold) and the unrolled
insertion compiler/lower/ops_topk.py prints (vote groups, per-list masks taken in
element order), over the wgmma fragment layouts of cake/warpgroup/fragments.cuh. It
takes a precomputed score matrix, so a test compares the algorithm (layouts, votes,
insertions, merges) with a brute-force ranking of the same scores. `old_rows_lists`
replays the schedule this replaced (insert and merge across the quad after every tile),
whose repeated merges duplicate entries.
"""

import math

from compiler.ir.topk import VOTE_GROUP

INT_MAX = 0x7FFFFFFF


def beats(largest, v, w):
    return v > w if largest else v < w


def reaches(largest, v, w):
    return v >= w if largest else v <= w


def before(largest, v, i, w, j):
    return beats(largest, v, w) or (v == w and i < j)


def worst(largest):
    return -math.inf if largest else math.inf


def insert(vals, idx, c, ci, largest):
    """cake::topk::insert: sorted insertion of a candidate with a larger index than every entry."""
    k = len(vals)
    above = [beats(largest, c, vals[s]) for s in range(k)]
    for s in range(k - 1, 0, -1):
        if above[s - 1]:
            vals[s], idx[s] = vals[s - 1], idx[s - 1]
        elif above[s]:
            vals[s], idx[s] = c, ci
    if above[0]:
        vals[0], idx[0] = c, ci


def _order(c, ci, a, b, largest):
    if before(largest, c[b], ci[b], c[a], ci[a]):
        c[a], c[b] = c[b], c[a]
        ci[a], ci[b] = ci[b], ci[a]


def _pow2(k):
    p = 1
    while p < k:
        p *= 2
    return p


def merged(a, ai, b, bi, largest):
    """cake::topk::merge_lanes for one partner step: the best K of two disjoint sorted lists."""
    k = len(a)
    p = _pow2(k)
    c, ci = [], []
    for s in range(p):
        r = p - 1 - s
        x = (a[s], ai[s]) if s < k else (worst(largest), INT_MAX)
        y = (b[r], bi[r]) if r < k else (worst(largest), INT_MAX)
        take_y = before(largest, y[0], y[1], x[0], x[1])
        c.append(y[0] if take_y else x[0])
        ci.append(y[1] if take_y else x[1])
    h = p // 2
    while h:
        for s in range(p):
            if not s & h:
                _order(c, ci, s, s | h, largest)
        h //= 2
    return c[:k], ci[:k]


def sort(vals, idx, largest):
    """cake::topk::sort: a bitonic sort of the list in before order."""
    k = len(vals)
    p = _pow2(k)
    c = list(vals) + [worst(largest)] * (p - k)
    ci = list(idx) + [INT_MAX] * (p - k)
    size = 2
    while size <= p:
        h = size // 2
        while h:
            for s in range(p):
                t = s ^ h
                if t > s:
                    if s & size:
                        _order(c, ci, t, s, largest)
                    else:
                        _order(c, ci, s, t, largest)
            h //= 2
        size *= 2
    return c[:k], ci[:k]


def merge_lanes(lists, first, last, largest):
    """Butterfly merge over lanes lane ^ m (m = first .. < last); lists[lane] = (vals, idx), replaced."""
    m = first
    while m < last:
        nxt = {}
        for lane, (v, i) in lists.items():
            ov, oi = lists[lane ^ m]
            nxt[lane] = merged(v, i, ov, oi, largest)
        lists.update(nxt)
        m *= 2


def _wgmma_elements(n, lane, warp):
    """(i, row, col) of the values thread (warp, lane) holds of a [64, n] WgmmaAcc."""
    out = []
    for i in range(n // 2):
        row = 16 * warp + lane // 4 + 8 * ((i & 3) >> 1)
        col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1)
        out.append((i, row, col))
    return out


class _Thread:
    def __init__(self, slots, k, largest, starts=None):
        """Lists start at the worst score, or at each slot's seed in `starts`, with index -1."""
        self.v = [[worst(largest) if starts is None else starts[s]] * k for s in range(slots)]
        self.i = [[-1] * k for _ in range(slots)]


def _insert_tile(threads, elements, tile, base, slot_of, index_of, pos_of, k, largest, vote, limit, self_base,
                 share, stats=None):
    """One insertion TopK over a warpgroup's tile, thread by thread, as ops_topk.py prints it.

    threads: {(warp, lane): _Thread}; elements(warp, lane) -> [(i, row, col)]; tile[row][col] scores;
    share: (first, last) lanes sharing a list, or None.
    """
    thr = {}
    for (w, l), t in threads.items():
        thr[(w, l)] = [t.v[s][k - 1] for s in range(len(t.v))]
    if vote and share:
        # cake::topk::threshold: over the G sharing lanes, the best k-th entry and the worst entry
        # ceil(k / G) - 1, whichever is better.
        sharing = share[1] // share[0]
        part = -(-k // sharing) - 1
        better = max if largest else min
        worse = min if largest else max
        out = {}
        for (w, l), t in threads.items():
            group = [l ^ x for x in range(32) if _in_group(x, share)]
            vals = []
            for s in range(len(t.v)):
                kth = better(threads[(w, g)].v[s][k - 1] for g in group)
                spread = worse(threads[(w, g)].v[s][part] for g in group)
                vals.append(better(kth, spread))
            out[(w, l)] = vals
        thr = out
    n_elems = len(elements(0, 0))
    for g0 in range(0, n_elems, VOTE_GROUP):
        for w in sorted({w for w, _ in threads}):
            lanes = [l for ww, l in threads if ww == w]
            if vote:
                hit = any(
                    reaches(largest, tile[row][col], thr[(w, l)][slot_of(i)])
                    for l in lanes for i, row, col in elements(w, l)[g0 : g0 + VOTE_GROUP])
                if not hit:
                    if stats is not None:
                        stats["skipped"] = stats.get("skipped", 0) + 1
                    continue
            if stats is not None:
                stats["slow"] = stats.get("slow", 0) + 1
            for l in lanes:
                t = threads[(w, l)]
                group = elements(w, l)[g0 : g0 + VOTE_GROUP]
                for s in range(len(t.v)):
                    cands = []  # the mask: reaching the threshold (with a vote), else beating the last entry
                    for i, row, col in group:
                        if slot_of(i) != s:
                            continue
                        v, j = tile[row][col], base + index_of(row, col)
                        if reaches(largest, v, thr[(w, l)][s]) if vote else beats(largest, v, t.v[s][k - 1]):
                            cands.append((v, j, pos_of(row, col)))
                    for v, j, pos in cands:  # element order; the loop's tests against the list as it is now
                        if beats(largest, v, t.v[s][k - 1]) and j < limit and (self_base is None or j != self_base + pos):
                            insert(t.v[s], t.i[s], v, j, largest)


def _in_group(x, share):
    """Whether lane offset x (an xor distance) is spanned by the butterfly m = first, 2 first, ... < last."""
    m, mask = share[0], 0
    while m < share[1]:
        mask |= m
        m *= 2
    return x & ~mask == 0


def rows_lists(scores, k, block_n, row_groups=1, interleave=1, splits=1, tiles=None, largest=False, vote=True,
               exclude_self=False, stats=None, seed=None, minima=False):
    """Partial lists of knn_rows_sm90a for a score matrix (one problem): {(p, query): (vals, idx)}.

    scores[q][j] are the ranking scores; queries on the wgmma M side, 64 per warpgroup; `seed[q]`
    (when given) is where query q's lists start. `minima`: the seeding pass's form (each element
    keeps its column's best over the tiles, inserted once at the end of the range).
    """
    nq, m = len(scores), len(scores[0])
    n_tiles = -(-m // block_n)
    tiles = tiles or -(-(-(-n_tiles // splits)) // interleave) * interleave
    if minima and splits * tiles * block_n > m:
        raise ValueError("the minima form's ranges lie within the database")
    better = max if largest else min
    out = {}
    block_q = 64 * row_groups
    for q0 in range(0, nq, block_q):
        for si in range(splits):
            for wg in range(row_groups * interleave):
                group, cls = wg % row_groups, wg // row_groups
                rows0 = q0 + group * 64
                def starts(w, l):
                    if seed is None:
                        return None
                    rows = [rows0 + 16 * w + l // 4 + 8 * s for s in range(2)]
                    return [seed[r] if r < nq else worst(largest) for r in rows]

                threads = {(w, l): _Thread(2, k, largest, starts(w, l)) for w in range(4) for l in range(32)}
                bests = [[worst(largest)] * block_n for _ in range(64)]
                for jj in range(tiles // interleave):
                    j = jj * interleave + cls
                    col0 = (si * tiles + j) * block_n
                    tile = [[(scores[rows0 + r][col0 + c] if rows0 + r < nq and col0 + c < m else 0.0)
                             for c in range(block_n)] for r in range(64)]
                    if minima:
                        bests = [[better(b, v) for b, v in zip(br, tr)] for br, tr in zip(bests, tile)]
                        continue
                    _insert_tile(threads, lambda w, l: _wgmma_elements(block_n, l, w), tile, col0,
                                 lambda i: (i & 3) >> 1, lambda r, c: c, lambda r, c: r, k, largest, vote, m,
                                 rows0 if exclude_self else None, (1, 4), stats)
                if minima:  # a column's group is named by its row in the class's first tile of the range
                    _insert_tile(threads, lambda w, l: _wgmma_elements(block_n, l, w), bests, (si * tiles + cls) * block_n,
                                 lambda i: (i & 3) >> 1, lambda r, c: c, lambda r, c: r, k, largest, False, m, None,
                                 (1, 4), stats)
                for w in range(4):
                    for s in range(2):
                        lists = {l: (threads[(w, l)].v[s], threads[(w, l)].i[s]) for l in range(32)}
                        merge_lanes(lists, 1, 4, largest)
                        for l in range(0, 32, 4):
                            row = rows0 + 16 * w + l // 4 + 8 * s
                            if row < nq:
                                out[(si * interleave + cls, row)] = lists[l]
    return out


def minima_groups(splits, tiles, block_n, interleave=1):
    """(owners, groups) of the rows the minima form of knn_rows_sm90a scores: per row its partial list
    (range x interleave class) and its group (a column of the class's tiles, named by its first row)."""
    owners, groups = [], []
    for j in range(splits * tiles * block_n):
        si, tile, col = j // (tiles * block_n), j // block_n % tiles, j % block_n
        cls = tile % interleave
        owners.append(si * interleave + cls)
        groups.append((si * tiles + cls) * block_n + col)
    return owners, groups


def cols_lists(scores, k, block_q=16, consumers=2, splits=1, tiles=None, largest=False, vote=True,
               exclude_self=False):
    """Partial lists of knn_cols_sm90a (database rows on wgmma M, queries on N): {(p, query): (vals, idx)}."""
    nq, m = len(scores), len(scores[0])
    block_m = 64 * consumers
    n_tiles = -(-m // block_m)
    tiles = tiles or -(-n_tiles // splits)
    out = {}
    for q0 in range(0, nq, block_q):
        for si in range(splits):
            for wg in range(consumers):
                threads = {(w, l): _Thread(block_q // 4, k, largest) for w in range(4) for l in range(32)}
                for j in range(tiles):
                    row0 = (si * tiles + j) * block_m + wg * 64
                    tile = [[(scores[q0 + c][row0 + r] if q0 + c < nq and row0 + r < m else 0.0)
                             for c in range(block_q)] for r in range(64)]
                    _insert_tile(threads, lambda w, l: _wgmma_elements(block_q, l, w), tile, row0,
                                 lambda i: 2 * (i >> 2) + (i & 1), lambda r, c: r, lambda r, c: c, k, largest, vote,
                                 m, q0 if exclude_self else None, (4, 32))
                for w in range(4):
                    for s in range(block_q // 4):
                        lists = {l: (threads[(w, l)].v[s], threads[(w, l)].i[s]) for l in range(32)}
                        merge_lanes(lists, 4, 32, largest)
                        for l in range(4):
                            col = 8 * (s >> 1) + 2 * (l & 3) + (s & 1)
                            if q0 + col < nq:
                                out[((si * consumers + wg) * 4 + w, q0 + col)] = lists[l]
    return out


def merge_partials(partials, nq, n_lists, k, largest, exact=None):
    """knn_merge for one problem: per query, lane l takes partial list l and inserts lists l + 32, l + 64, ...
    (each round's candidates by a warp vote against the warp's threshold); a warp merge; then (with
    exact[q][j], the rescored values) rescoring and a sort. Returns {query: (vals, idx)}."""
    out = {}
    padded = -(-n_lists // 32) * 32
    empty = ([worst(largest)] * k, [-1] * k)
    better, worse = (max, min) if largest else (min, max)
    for qi in range(nq):
        lanes = {l: tuple(list(x) for x in partials.get((l, qi), empty)) for l in range(32)}
        for p0 in range(32, padded, 32):
            # cake::topk::threshold over the warp: the best k-th entry, or the worst entry ceil(k / 32) - 1.
            part = -(-k // 32) - 1
            thr = better(better(v[k - 1] for v, _ in lanes.values()), worse(v[part] for v, _ in lanes.values()))
            cands = {l: partials.get((p0 + l, qi), empty) for l in range(32)}
            for g0 in range(0, k, VOTE_GROUP):
                if not any(reaches(largest, c, thr) for cv, _ in cands.values() for c in cv[g0:g0 + VOTE_GROUP]):
                    continue  # the warp's vote: no lane holds a candidate of this group that reaches it
                for l, (cv, ci) in cands.items():
                    v, i = lanes[l]
                    for c, j in [(c, j) for c, j in zip(cv[g0:g0 + VOTE_GROUP], ci[g0:g0 + VOTE_GROUP])
                                 if reaches(largest, c, thr)]:
                        if beats(largest, c, v[k - 1]):
                            insert(v, i, c, j, largest)
        merge_lanes(lanes, 1, 32, largest)
        v, i = lanes[0]
        if exact is not None:
            v = [exact[qi][j] if 0 <= j < len(exact[qi]) else worst(largest) for j in i]
            v, i = sort(v, i, largest)
        out[qi] = (v, i)
    return out


def old_rows_lists(scores, k, block_n):
    """The replaced schedule, one warpgroup of 64 queries: after every tile each thread inserts its
    candidates and the quad merges by inserting the partners' entries (topk_allmerge), so entries the
    lanes already share are inserted again. Returns {query: idx list} of lane 0 of each quad."""
    nq, m = len(scores), len(scores[0])
    threads = {(w, l): _Thread(2, k, False) for w in range(4) for l in range(32)}
    for col0 in range(0, m, block_n):
        for (w, l), t in threads.items():
            for i, row, col in _wgmma_elements(block_n, l, w):
                if row < nq and col0 + col < m:
                    _old_insert(t.v[(i & 3) >> 1], t.i[(i & 3) >> 1], scores[row][col0 + col], col0 + col)
        for w in range(4):
            for s in range(2):
                for mask in (1, 2):
                    snap = {l: (list(threads[(w, l)].v[s]), list(threads[(w, l)].i[s])) for l in range(32)}
                    for l in range(32):
                        ov, oi = snap[l ^ mask]
                        for c, j in zip(ov, oi):
                            _old_insert(threads[(w, l)].v[s], threads[(w, l)].i[s], c, j)
    out = {}
    for w in range(4):
        for l in range(0, 32, 4):
            for s in range(2):
                row = 16 * w + l // 4 + 8 * s
                if row < nq:
                    out[row] = threads[(w, l)].i[s]
    return out


def _old_insert(vals, idx, v, i):
    """The replaced topk_insert (lexicographic shifting insertion, no duplicate check)."""
    k = len(vals)
    if not before(False, v, i, vals[k - 1], idx[k - 1]):
        return
    s = k - 1
    while s > 0 and before(False, v, i, vals[s - 1], idx[s - 1]):
        vals[s], idx[s] = vals[s - 1], idx[s - 1]
        s -= 1
    vals[s], idx[s] = v, i
