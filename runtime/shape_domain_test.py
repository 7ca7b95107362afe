"""Shape domains as data: ranges and limits decide membership, buckets tile the range, corners are awkward."""

import json
import random

import pytest

from runtime.shape_domain import Domain

DOMAIN = {
    "op": "probe",
    "symbols": {"B": {"min": 1, "max": 8}, "N": {"min": 1024, "max": 1 << 20}, "K": {"min": 2, "max": 4096}},
    "dtypes": ["bf16"],
    "limits": [{"product": ["B", "N"], "max": 1 << 21, "why": "memory"}],
    "buckets": {"K": [16, 256, 4096], "B*N": [1 << 14, 1 << 21]},
    "cells": [{"name": "a real cell", "shape": {"B": 2, "N": 5000, "K": 100}, "source": "test"}],
}


def _load(tmp_path, data):
    path = tmp_path / "domain.json"
    path.write_text(json.dumps(data))
    return Domain.load(str(path))


def test_ranges_and_limits_decide_membership(tmp_path):
    dom = _load(tmp_path, DOMAIN)
    assert dom.outside({"B": 2, "N": 5000, "K": 100}) is None
    assert "K = 1 is outside [2, 4096]" in dom.outside({"B": 2, "N": 5000, "K": 1})
    assert "B*N = 4194304 is above 2097152 (memory)" in dom.outside({"B": 4, "N": 1 << 20, "K": 2})
    assert "dtype f32" in dom.outside({"B": 1, "N": 2048, "K": 2, "dtype": "f32"})


def test_buckets_cover_the_range_without_gaps(tmp_path):
    dom = _load(tmp_path, DOMAIN)
    assert dom.value_range("B*N") == (1024, 1 << 21)  # the limit caps the product's range
    ranges = [dom.bucket_range("K", i) for i in range(3)]
    assert ranges == [(2, 16), (17, 256), (257, 4096)]
    for k in (2, 16, 17, 256, 257, 4096):
        low, high = dom.bucket_range("K", dom.bucket_index("K", k))
        assert low <= k <= high


def test_corners_hold_the_ends_and_powers_of_two_plus_minus_one(tmp_path):
    dom = _load(tmp_path, DOMAIN)
    corners = dom.corners("K", 1)
    assert {17, 31, 32, 33, 63, 64, 65, 255, 256} <= set(corners)
    assert all(17 <= c <= 256 for c in corners)


def test_cells_outside_the_domain_and_bad_edges_are_refused(tmp_path):
    bad_cell = dict(DOMAIN, cells=[{"name": "too big", "shape": {"B": 1, "N": 1 << 22, "K": 2}}])
    with pytest.raises(ValueError, match="cell 'too big' is outside the domain: N = 4194304"):
        _load(tmp_path, bad_cell)
    short = dict(DOMAIN, buckets={"K": [16, 256]})
    with pytest.raises(ValueError, match="bucket edges of K must ascend and reach its max 4096"):
        _load(tmp_path, short)


def test_samples_are_inside_the_domain_and_pass_the_filter(tmp_path):
    dom = _load(tmp_path, DOMAIN)
    shapes = dom.sample(random.Random(1), 200, accept=lambda s: s["K"] % 2 == 1)
    assert len(shapes) == 200
    assert all(dom.outside(s) is None and s["K"] % 2 == 1 for s in shapes)
    assert len({s["K"] for s in shapes}) > 50  # spread out, not one value
