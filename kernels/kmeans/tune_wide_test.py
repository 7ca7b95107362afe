"""tune_wide's plan (CPU): the 256-wide tile's buckets, shapes inside them with D off the tile, every variant."""

import os

from kernels.kmeans import bench_dispatch, dispatch, tune_narrow, tune_wide, variants
from runtime.tuning_db import TuningDB


def test_each_bucket_is_tuned_at_shapes_inside_it_off_the_tile_on_every_variant_of_the_tile():
    dbs = {name: TuningDB.load(os.path.join(dispatch.TUNING_DIR, name)) for name in tune_narrow.DATABASES}
    items = tune_wide.plan(dbs)
    assert [key for key, *_ in items][0] == "D4/K2/R5"  # the bucket of the 0.957x row first
    for key, owner, shapes, cands in items:
        assert owner is not None and shapes and all(bench_dispatch.in_caps(s) for s in shapes)
        for s in shapes:
            assert dispatch.bucket_key(s["B"], s["N"], s["K"], s["D"]) == key and s["D"] in tune_wide.OFF_TILE_D
        assert set(cands) == set(variants.candidates(256)) and len(cands) >= 8
