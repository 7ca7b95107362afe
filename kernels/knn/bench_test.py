"""The benchmark's command line: a run split over calls picks its rows by index, and a bad index is named."""

import pytest

from kernels.knn import bench


def test_rows_pick_shapes_in_the_order_given():
    shapes = bench.SETS["search"] + bench.SETS["sweep"]
    assert bench._selected(shapes, "") == shapes
    assert bench._selected(shapes, "2,0") == [shapes[2], shapes[0]]


@pytest.mark.parametrize("rows", ["20", "1,x", "-1"])
def test_a_row_outside_the_shapes_is_named(rows):
    with pytest.raises(ValueError, match="--rows takes indices 0..18 of the --ops shapes"):
        bench._selected(bench.SETS["search"] + bench.SETS["sweep"], rows)


def test_variants_are_built_only_where_they_are_timed():
    shapes = [bench.SEARCH] + bench.SWEEP
    assert bench._variant_shapes(shapes, False) == []
    assert bench._variant_shapes(shapes, True) == [bench.SEARCH]
