"""tune_narrow's plan (CPU): the buckets it tunes, the shapes inside them, the candidates and the winner rule."""

import os

from kernels.kmeans import dispatch, tune_narrow, variants
from runtime.tuning_db import TuningDB


def _dbs():
    return {name: TuningDB.load(os.path.join(dispatch.TUNING_DIR, name)) for name in tune_narrow.DATABASES}


def test_the_two_shapes_lie_inside_their_bucket_off_its_edges():
    for di, ki, ri in ((0, 3, 6), (1, 0, 7), (0, 2, 4), (1, 3, 7)):
        shapes = tune_narrow.bucket_shapes(di, ki, ri)
        assert len(shapes) == 2 and shapes[0]["K"] < shapes[1]["K"]
        for s in shapes:
            assert dispatch.bucket_key(s["B"], s["N"], s["K"], s["D"]) == "D%d/K%d/R%d" % (di, ki, ri)


def test_a_tile_fits_k_by_padded_centroids_and_passes():
    assert tune_narrow.fitted([32, 64, 96, 128], 92) == 96
    assert tune_narrow.fitted([32, 64], 92) == 32  # three passes of 32 (96 + 48) beat two of 64 (128 + 32)
    assert tune_narrow.fitted([32, 64, 128], 3) == 32


def test_every_planned_candidate_is_on_the_buckets_feature_tile_and_the_entry_comes_first():
    items = tune_narrow.plan(_dbs())
    assert len(items) == 32  # every D tile 16/32 x K <= 256 x B*N 2^18..2^26
    for key, owner, shapes, cands in items:
        assert all(v.d == variants.d_tile(shapes[0]["D"]) for v in cands), key
        assert len(set(cands)) == len(cands)
        assert cands[0].name == _dbs()[owner].lookup(key)


def test_the_winner_is_best_over_the_shapes_every_candidate_was_timed_at():
    best, score = tune_narrow.winner([{"a": 1.0, "b": 1.1, "c": 0.5}, {"a": 2.0, "b": 1.0}])
    assert best == "b" and set(score) == {"a", "b"}  # c missed the second shape
    assert tune_narrow.winner([{}]) == (None, None)


def test_the_committed_narrow_entries_name_small_d_variants_and_keep_what_they_replaced():
    dbs = _dbs()
    narrow = [(k, e) for db in dbs.values() for k, e in db.entries.items() if "times_ms_by_shape" in e]
    assert len(narrow) >= 28
    for key, entry in narrow:
        assert entry["variant"] in variants.BY_NAME and "earlier" in entry, key
