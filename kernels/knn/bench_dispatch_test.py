"""The dispatcher validation's plumbing without a GPU: the kernels it lists ahead, the tiny shape's forced splits,
the parallel checks (stand-ins) and what counts in the summary."""

import json
import time

import torch

from kernels.knn import bench, bench_dispatch, dispatch, widek
from kernels.knn import plan as planner


def test_tiny_plans_split_the_whole_database_and_no_more():
    m = bench_dispatch.TINY["M"]
    for name, p in bench_dispatch.tiny_plans().items():
        block = 64 * p.kwargs["consumers"] if p.layout == "cols" else p.kwargs["block_n"]
        assert p.splits * p.tiles * block >= m > (p.splits - 1) * p.tiles * block, name
        assert p.lists_padded == 1 if p.lists == 1 else p.lists_padded % 32 == 0 and p.lists_padded >= p.lists, name
    assert bench_dispatch.tiny_plans()["cols S32"].splits == planner.plan(1, 1, m, 64, 10).splits


def test_a_tuned_bucket_lists_the_variant_the_device_picks():
    # kernels/knn/tuning/h200.json's entry for this shape's bucket is cols+noseed.
    shape = {"B": 1, "Q": 1, "M": 1_000_000, "D": 128, "k": 10, "metric": "l2", "dtype": "bfloat16"}
    listed = bench.shape_kernels(shape, bench_dispatch.tuned_picker())
    assert listed == dispatch.kernels_for(1, 1, 1_000_000, 128, 10, "l2", dtype=torch.bfloat16, config="cols+noseed")


def test_wide_k_shapes_list_the_wide_k_kernels():
    shape = {"B": 2, "Q": 50, "M": 20000, "D": 64, "k": 40, "metric": "ip", "dtype": "float16"}
    assert bench.shape_kernels(shape) == widek.kernels_for(2, 50, 20000, 64, 40, "ip", dtype=torch.float16)


def test_checks_run_in_worker_processes_and_come_back_by_index():
    shapes = bench_dispatch.validation_shapes(6)
    checks = bench_dispatch.check_all(shapes, 2, time.time() + 120, dry=True, log=lambda msg: None)
    assert sorted(checks) == list(range(6))
    assert all(c == bench_dispatch._dry_check(s) for c, s in zip((checks[i] for i in range(6)), shapes))


def _entry(passed, ms, verified=True):
    return {"check": {"passed": passed}, "median_ms": ms, "verified": verified}


def test_a_speedup_counts_only_where_both_passed_and_their_timed_outputs_verified(tmp_path):
    shape = {"B": 1, "Q": 1, "M": 4096, "D": 64, "k": 10, "metric": "l2", "dtype": "bfloat16"}
    rows = [{"shape": dict(shape), "impls": {"cake": _entry(True, 0.1), "flashlib": _entry(True, 0.3)}},
            {"shape": dict(shape, Q=2), "impls": {"cake": _entry(True, 0.2), "flashlib": _entry(True, 0.1)}},
            {"shape": dict(shape, Q=3), "impls": {"cake": _entry(True, 0.1), "flashlib": _entry(False, 0.1)}},
            {"shape": dict(shape, Q=4), "impls": {"cake": _entry(True, 0.1, verified=False), "flashlib": _entry(True, 0.3)}},
            {"shape": dict(shape, Q=5, k=40), "impls": {"cake": _entry(True, 0.1)}}]
    shapes = [r["shape"] for r in rows] + [dict(shape, Q=6)]
    path = tmp_path / "out.json"
    bench_dispatch._write(str(path), rows, {}, shapes, {})
    out = json.loads(path.read_text())
    s = out["machine"]["summary"]["all"]
    assert (s["beside_flashlib"], s["below_1x"], s["min_speedup_vs_flashlib"]) == (2, 1, 0.5)
    assert abs(s["geomean_speedup_vs_flashlib"] - (3.0 * 0.5) ** 0.5) < 1e-9
    assert (s["shapes_drawn"], s["shapes_timed"], s["not_reached"], s["cake_timed_outputs_failed"]) == (6, 5, 1, 1)
    assert out["machine"]["summary"]["wide k (k > 32)"]["shapes_timed"] == 1
    assert [r["shape"]["Q"] for r in out["not_timed"]] == [6]


def test_a_resumed_run_keeps_the_earlier_rows_in_drawn_order():
    shapes = bench_dispatch.validation_shapes(4)
    kept = {bench_dispatch._key(s): {"shape": s, "run": 1} for s in (shapes[3], shapes[0])}
    fresh = [{"shape": shapes[2], "run": 2}]
    rows = bench_dispatch._in_drawn_order(shapes, kept, fresh)
    assert [(r["shape"], r["run"]) for r in rows] == [(shapes[0], 1), (shapes[2], 2), (shapes[3], 1)]
