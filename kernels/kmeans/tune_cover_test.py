"""tune_cover's plan (CPU): which entries it re-times, and with what."""

import os

from kernels.kmeans import dispatch, tune_cover, variants
from runtime.tuning_db import TuningDB


def _dbs():
    return {name: TuningDB.load(os.path.join(dispatch.TUNING_DIR, name)) for name in tune_cover.DATABASES}


def test_every_planned_entry_starts_with_its_winner_and_adds_only_untried_values():
    dbs = _dbs()
    plan = tune_cover.cover_plan(dbs, 0.05)
    assert plan
    for name, key, shape, cands in plan:
        entry = dbs[name].entries[key]
        assert cands[0].name == entry["variant"]
        timed = [variants.BY_NAME[n] for n in tune_cover.tried(entry)]
        assert len(set(cands)) == len(cands) and all(v in variants.VARIANTS for v in cands)
        for v in cands[1:]:
            assert v.d == cands[0].d
            assert any(getattr(v, axis) not in {getattr(t, axis) for t in timed} for axis in tune_cover.AXES)


def test_the_winner_moves_along_one_axis_when_that_variant_exists():
    shape = {"B": 1, "N": 1 << 21, "K": 128, "D": 16}
    (v,) = tune_cover.along(variants.BY_NAME["d16_k128_c2_s4_x2"], "consumers", 4, shape)
    assert (v.d, v.block_k, v.consumers, v.blocks) == (16, 128, 4, 1)
    (v,) = tune_cover.along(variants.BY_NAME["d16_k32_c2_s4_x2"], "blocks", 3, shape)
    assert v.name == "d16_k32_c2_s4_x2_b3"


def test_four_consumers_have_no_second_block_so_the_blocks_axis_takes_the_tile_variants_that_have_one():
    shape = {"B": 2, "N": 1 << 24, "K": 7, "D": 16}
    names = [v.name for v in tune_cover.along(variants.BY_NAME["d16_k32_c4_s4_x2"], "blocks", 2, shape)]
    assert names == ["d16_k32_c2_s4_x2_b2"]
    assert tune_cover.along(variants.BY_NAME["d16_k128_c4_s4_x2"], "blocks", 2, shape) == []


def test_what_an_entry_replaced_counts_as_tried():
    entry = {"times_ms": {"a": 1.0}, "earlier": {"times_ms": {"b": 2.0}, "earlier": {"times_ms": {"c": 3.0}}}}
    assert tune_cover.tried(entry) == {"a", "b", "c"}


def test_entries_under_min_ms_or_fully_covered_are_left_alone():
    timed = ["d16_k32_c1_s4_x2", "d16_k32_c2_s4_x2", "d16_k32_c4_s4_x2", "d16_k32_c2_s4_x2_b2", "d16_k32_c2_s4_x2_b3",
             "d16_k32_c1_s4_x2_b4"]
    dbs = {"x.json": TuningDB("kmeans_assign", "dev", "t", entries={
        "fast": {"variant": "d16_k32_c1_s4_x2", "shape": {"B": 1, "N": 4096, "K": 8, "D": 16},
                 "times_ms": {"d16_k32_c1_s4_x2": 0.004}},
        "covered": {"variant": "d16_k32_c4_s4_x2", "shape": {"B": 1, "N": 1 << 22, "K": 8, "D": 16},
                    "times_ms": {n: 0.3 for n in timed}},
        "open": {"variant": "d16_k32_c2_s4_x2", "shape": {"B": 1, "N": 1 << 22, "K": 8, "D": 16},
                 "times_ms": {"d16_k32_c2_s4_x2": 0.5}}})}
    plan = tune_cover.cover_plan(dbs, 0.05)
    assert [key for _, key, _, _ in plan] == ["open"]
    assert [v.name for v in plan[0][3]] == ["d16_k32_c2_s4_x2", "d16_k32_c1_s4_x2", "d16_k32_c4_s4_x2",
                                            "d16_k32_c2_s4_x2_b2", "d16_k32_c2_s4_x2_b3", "d16_k32_c1_s4_x2_b4"]


def test_validation_takes_each_shapes_latest_figure_and_starts_with_those_flashlib_won():
    shapes = tune_cover.validation_shapes(set())
    assert shapes and all(e["speedup_vs_flashlib"] < 1.0 for _, e in shapes)
    assert len(shapes) == 16  # of the 29 below 1.0x in the first two files, kmeans_cover_h200.json left 16
    assert all(e["file"] == "kmeans_cover_h200.json" for _, e in shapes)
