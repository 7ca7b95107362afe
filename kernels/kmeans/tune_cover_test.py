"""tune_cover's plan (CPU): which entries it re-times, and with what."""

import os

from kernels.kmeans import dispatch, tune_cover, variants
from runtime.tuning_db import TuningDB


def _dbs():
    return {name: TuningDB.load(os.path.join(dispatch.TUNING_DIR, name)) for name in tune_cover.DATABASES}


def test_every_committed_entry_that_matters_has_tried_every_consumer_count():
    # The H200 cover run (benchmarks/results/kmeans_cover_h200.json) left nothing to plan.
    assert tune_cover.cover_plan(_dbs(), 0.05) == []


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


def test_what_an_entry_replaced_counts_as_tried():
    entry = {"times_ms": {"a": 1.0}, "earlier": {"times_ms": {"b": 2.0}, "earlier": {"times_ms": {"c": 3.0}}}}
    assert tune_cover.tried(entry) == {"a", "b", "c"}


def test_validation_takes_each_shapes_latest_figure_and_starts_with_those_flashlib_won():
    shapes = tune_cover.validation_shapes(set())
    assert shapes and all(e["speedup_vs_flashlib"] < 1.0 for _, e in shapes)
    # Of the 29 below 1.0x in the first two files, kmeans_cover_h200.json left 16; the blocks run re-measured them.
    assert len(shapes) == 16
    assert all(e["file"] == "kmeans_cover_blocks_h200.json" for _, e in shapes)
