"""tune_cover's plan (CPU): which entries it re-times, and with what."""

import os

from kernels.kmeans import dispatch, tune_cover, variants
from runtime.tuning_db import TuningDB


def _dbs():
    return {name: TuningDB.load(os.path.join(dispatch.TUNING_DIR, name)) for name in tune_cover.DATABASES}


def test_every_planned_entry_starts_with_its_winner_and_adds_only_untried_consumer_counts():
    dbs = _dbs()
    plan = tune_cover.cover_plan(dbs, 0.05)
    assert plan
    for name, key, shape, cands in plan:
        entry = dbs[name].entries[key]
        assert cands[0].name == entry["variant"]
        tried = {variants.BY_NAME[n].consumers for n in entry["times_ms"]}
        added = [v.consumers for v in cands[1:]]
        assert added and len(set(added)) == len(added) and not set(added) & tried
        assert all(v.d == cands[0].d and v in variants.VARIANTS for v in cands)


def test_the_winner_moves_along_consumers_only_when_that_variant_exists():
    winner = variants.BY_NAME["d16_k128_c2_s4_x2"]
    v = tune_cover.along_consumers(winner, 4, {"B": 1, "N": 1 << 21, "K": 128, "D": 16})
    assert (v.d, v.block_k, v.consumers) == (16, 128, 4)


def test_entries_under_min_ms_or_fully_covered_are_left_alone():
    dbs = {"x.json": TuningDB("kmeans_assign", "dev", "t", entries={
        "fast": {"variant": "d16_k32_c1_s4_x2", "shape": {"B": 1, "N": 4096, "K": 8, "D": 16},
                 "times_ms": {"d16_k32_c1_s4_x2": 0.004}},
        "covered": {"variant": "d16_k32_c4_s4_x2", "shape": {"B": 1, "N": 1 << 22, "K": 8, "D": 16},
                    "times_ms": {"d16_k32_c1_s4_x2": 0.9, "d16_k32_c2_s4_x2": 0.5, "d16_k32_c4_s4_x2": 0.3}},
        "open": {"variant": "d16_k32_c2_s4_x2", "shape": {"B": 1, "N": 1 << 22, "K": 8, "D": 16},
                 "times_ms": {"d16_k32_c2_s4_x2": 0.5}}})}
    plan = tune_cover.cover_plan(dbs, 0.05)
    assert [key for _, key, _, _ in plan] == ["open"]
    assert [v.consumers for v in plan[0][3]] == [2, 1, 4]


def test_validation_starts_with_every_shape_flashlib_won():
    shapes = tune_cover.validation_shapes(set())
    assert shapes and all(e["speedup_vs_flashlib"] < 1.0 for _, e in shapes)
    assert len(shapes) == 29  # 24 of kmeans_dispatch_h200.json, 5 of kmeans_rest_h200.json
