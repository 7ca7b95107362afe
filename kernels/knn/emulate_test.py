"""The KNN kernels' top-k algorithm, emulated thread by thread on the CPU, against brute force.

kernels/knn/testing/emulate.py mirrors the device code (per-thread insertion with warp votes,
bitonic merges across the lanes sharing a list, the merge kernel's lanes and warp merge); these
tests feed it score matrices with and without exact ties and compare every partial list and the
final lists with a brute-force ranking by (score, index). The replaced schedule's merge after
every tile is replayed to show the duplicates it produced (the regression this guards).
"""

import random

import pytest

from kernels.knn.testing import emulate


def _scores(nq, m, ties, rng):
    if ties:  # a coarse grid: many exactly equal scores, ranked by the smaller index
        return [[round(rng.gauss(0, 1) * 4) / 4 for _ in range(m)] for _ in range(nq)]
    return [[rng.gauss(0, 1) for _ in range(m)] for _ in range(nq)]


def _best(row, cols, k, largest, skip=None):
    cols = [j for j in cols if j != skip]
    return sorted(cols, key=lambda j: (-row[j] if largest else row[j], j))[:k]


def _owned(lists):
    return {key: [j for j in idx if j >= 0] for key, (_, idx) in lists.items()}


@pytest.mark.parametrize("row_groups, interleave, block_n, ties, largest", [
    (1, 1, 64, False, False), (2, 1, 64, True, False), (1, 2, 128, False, True), (2, 2, 64, True, True),
])
def test_rows_partial_lists_are_exact(row_groups, interleave, block_n, ties, largest):
    rng = random.Random(row_groups * 7 + interleave * 3 + block_n + ties)
    nq, m, k, splits = 70, 450, 6, 2
    scores = _scores(nq, m, ties, rng)
    n_tiles = -(-m // block_n)
    tiles = -(-(-(-n_tiles // splits)) // interleave) * interleave
    got = _owned(emulate.rows_lists(scores, k, block_n, row_groups, interleave, splits, tiles, largest))
    for (p, qi), idx in got.items():
        s, c = divmod(p, interleave)
        cols = [j for j in range(m) if (j // block_n) // tiles == s and ((j // block_n) % tiles) % interleave == c]
        assert idx == _best(scores[qi], cols, k, largest), (p, qi)
    assert len(got) == nq * splits * interleave


def test_rows_exclude_self_skips_the_query_itself():
    rng = random.Random(5)
    scores = _scores(64, 64, False, rng)
    for i in range(64):
        scores[i][i] = -10.0  # each query's best row is itself
    got = _owned(emulate.rows_lists(scores, 3, 64, exclude_self=True))
    for (_, qi), idx in got.items():
        assert idx == _best(scores[qi], range(64), 3, False, skip=qi)


def test_votes_skip_tiles_that_cannot_beat_the_lists():
    rng = random.Random(6)
    scores = [[j + rng.random() * 0.1 for j in range(2048)] for _ in range(64)]  # later rows never improve
    stats = {}
    emulate.rows_lists(scores, 4, 128, stats=stats)
    # After the first tile no later score beats a list: nearly every group is skipped by the vote.
    assert stats["skipped"] > 0.9 * (stats["skipped"] + stats["slow"])


@pytest.mark.parametrize("consumers, ties, largest", [(1, False, False), (2, True, True)])
def test_cols_lists_and_the_merge_kernel_give_the_exact_answer(consumers, ties, largest):
    rng = random.Random(consumers + 10 * ties)
    nq, m, k, splits = 13, 700, 5, 2
    scores = _scores(nq, m, ties, rng)
    block_m = 64 * consumers
    tiles = -(-(-(-m // block_m)) // splits)
    lists = emulate.cols_lists(scores, k, 16, consumers, splits, tiles, largest)
    for (p, qi), idx in _owned(lists).items():
        w, warp = divmod(p, 4)
        s, wg = divmod(w, consumers)
        cols = [j for j in range(m)
                if (j // block_m) // tiles == s and (j % block_m) // 64 == wg and (j % 64) // 16 == warp]
        assert idx == _best(scores[qi], cols, k, largest), (p, qi)
    final = emulate.merge_partials(lists, nq, splits * consumers * 4, k, largest, exact=scores)
    for qi in range(nq):
        assert final[qi][1] == _best(scores[qi], range(m), k, largest)


@pytest.mark.parametrize("largest", [False, True])
def test_seeded_lists_keep_only_what_beats_the_seed_and_the_merge_stays_exact(largest):
    # The API seeds each query with (a loosened) k-th best score over a sample: nothing worse can win.
    rng = random.Random(11 + largest)
    nq, m, k = 40, 2000, 5
    scores = _scores(nq, m, True, rng)
    sample = 400
    seed = []
    for qi in range(nq):
        kth = _best(scores[qi], range(sample), k, largest)[-1]
        seed.append(scores[qi][kth] + (-1e-6 if largest else 1e-6))
    stats = {}
    lists = emulate.rows_lists(scores, k, 64, splits=4, largest=largest, seed=seed, stats=stats)
    for (_, qi), (vals, idx) in lists.items():
        assert all(emulate.beats(largest, v, seed[qi]) for v, j in zip(vals, idx) if j >= 0)
        assert all(v == seed[qi] for v, j in zip(vals, idx) if j < 0)
    final = emulate.merge_partials(lists, nq, 4, k, largest, exact=scores)
    for qi in range(nq):
        assert final[qi][1] == _best(scores[qi], range(m), k, largest)


def test_merge_sorts_rescored_lists_with_ties_to_the_smaller_index():
    vals, idx = emulate.sort([3.0, 1.0, 1.0, 2.0, 1.0], [9, 7, 2, 4, 5], largest=False)
    assert idx == [2, 5, 7, 4, 9] and vals == [1.0, 1.0, 1.0, 2.0, 3.0]


def test_bitonic_merge_of_disjoint_lists_keeps_the_best_k():
    a, ai = [1.0, 2.0, 5.0], [0, 3, 6]
    b, bi = [1.0, 3.0, 4.0], [1, 4, 5]
    assert emulate.merged(a, ai, b, bi, largest=False) == ([1.0, 1.0, 2.0], [0, 1, 3])


def test_the_replaced_merge_after_every_tile_duplicates_entries():
    # Regression: the old schedule merged each quad's lists by insertion after every tile, so the
    # entries the lanes already shared came back once per merge (M = 1024, k = 16, 8 tiles).
    rng = random.Random(7)
    scores = _scores(64, 1024, False, rng)
    old = emulate.old_rows_lists(scores, 16, 128)
    assert max(max(idx.count(j) for j in idx) for idx in old.values()) == 16
    new = _owned(emulate.rows_lists(scores, 16, 128))
    assert all(len(set(idx)) == len(idx) == 16 for idx in new.values())
    assert all(idx == _best(scores[qi], range(1024), 16, False) for (_, qi), idx in new.items())


@pytest.mark.parametrize("largest", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_minima_lists_are_the_group_bests_and_bound_every_kth_score(largest, ties):
    # The seeding pass's minima form: each element keeps its column's best over a range's tiles of its class,
    # inserted once; the lists are the k best group bests (the contract's reference), and the merged k-th of
    # those bounds each query's k-th score over the rows scored (every entry is reached by a row of its own).
    import torch

    from kernels.knn import reference

    rng = random.Random(21 + 2 * largest + ties)
    nq, m, k, splits, tiles, block_n, interleave = 70, 1100, 6, 3, 4, 64, 2
    scores = _scores(nq, m, ties, rng)
    lists = emulate.rows_lists(scores, k, block_n, row_groups=2, interleave=interleave, splits=splits, tiles=tiles,
                               largest=largest, minima=True)
    owners, groups = emulate.minima_groups(splits, tiles, block_n, interleave)
    covered = len(owners)
    s = torch.tensor([row[:covered] for row in scores], dtype=torch.float64)[None]
    want_v, want_i = reference.group_best_lists_of(s, torch.tensor(owners), torch.tensor(groups), k, largest)
    for p in range(splits * interleave):
        for qi in range(nq):
            vals, idx = lists[(p, qi)]
            assert idx == want_i[0, p, qi].tolist() and vals == want_v[0, p, qi].tolist(), (p, qi)
    for qi in range(nq):
        merged = sorted((v for p in range(splits * interleave) for v in lists[(p, qi)][0]), reverse=largest)
        kth = sorted(scores[qi][:covered], reverse=largest)[k - 1]
        assert emulate.reaches(largest, kth, merged[k - 1])
    with pytest.raises(ValueError, match="within the database"):
        emulate.rows_lists(scores, k, block_n, splits=splits, tiles=8, largest=largest, minima=True)
