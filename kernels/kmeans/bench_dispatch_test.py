"""bench_dispatch on CPU: the off-tile draw, the refit pick's name, and merging a re-measured run into a result."""

import json

from kernels.kmeans import bench_dispatch, dispatch


def _row(shape, cake, flashlib, set_="kernel path, untuned"):
    ok = {"check": {"passed": True}}
    return {"shape": shape, "set": set_, "speedup_vs_flashlib": flashlib / cake,
            "impls": {"cake": dict(ok, median_ms=cake), "flashlib": dict(ok, median_ms=flashlib)}}


def _result(commit, rows):
    return {"machine": {"cake_commit": commit, "date": commit + "-date"}, "how": {}, "host_us": {"run": commit},
            "summary": bench_dispatch.summarize(rows), "assign": rows}


def test_merge_replaces_the_rows_measured_again_and_says_which_run_measured_each(tmp_path):
    a, b = {"B": 1, "N": 2048, "K": 8, "D": 300, "dtype": "bf16"}, {"B": 2, "N": 4096, "K": 9, "D": 64, "dtype": "f16"}
    base = _result("c1", [_row(a, 2.0, 1.0, "off-tile D, drawn"), _row(b, 1.0, 3.0)])
    newer = _result("c2", [_row(a, 0.5, 1.0, "off-tile D, drawn")])
    for name, data in (("base.json", base), ("newer.json", newer)):
        (tmp_path / name).write_text(json.dumps(data))
    out = bench_dispatch.merge(str(tmp_path / "base.json"), str(tmp_path / "newer.json"), str(tmp_path / "out.json"))
    assert [r["measured_in"]["commit"] for r in out["assign"]] == ["c2", "c1"]
    assert out["summary"]["below_1x"] == 0 and out["summary"]["shapes_compared"] == 2
    assert out["summary"]["by_set"]["off-tile D, drawn"]["min_speedup_vs_flashlib"] == 2.0
    assert out["host_us"] == {"run": "c2"} and [r["commit"] for r in out["runs"]] == ["c1", "c2"]
    assert json.loads((tmp_path / "out.json").read_text())["summary"] == out["summary"]
    base["assign"][0]["variant"] = newer["assign"][0]["variant"] = "d384_k128_c4_s4_dk64"  # the same pick: kept
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    out = bench_dispatch.merge(str(tmp_path / "base.json"), str(tmp_path / "newer.json"), str(tmp_path / "o2.json"), True)
    assert [r["measured_in"]["commit"] for r in out["assign"]] == ["c1", "c1"] and out["runs"][-1]["rows_taken"] == 0


def test_off_tile_shapes_keep_d_as_drawn_and_lie_in_the_domain():
    shapes = bench_dispatch.off_tile_shapes(20, [])
    assert len(shapes) == 20 and all(s["D"] % 8 or s["D"] > 256 for s in shapes)
    assert all(dispatch.DOMAIN.outside(s) is None and bench_dispatch.in_caps(s) for s in shapes)


def test_a_refit_picks_replaced_winner_is_read_from_its_how():
    assert bench_dispatch.refit_from("tuned (h200.json; fits N 1170 K 14 over d16_k32_c4_s4_x2_r4)") == "d16_k32_c4_s4_x2_r4"
    assert bench_dispatch.refit_from("tuned neighbour (h200.json; fits N 5 K 6 over d16_k32_c4_s4_x2, D0/K1/R4)") \
        == "d16_k32_c4_s4_x2"
    assert bench_dispatch.refit_from("tuned (h200.json)") is None
