"""The learned ranker and its dataset on CPU: features, rank correlation, fitting, export from a measured store."""

import json
import random

import pytest

from agent import testing
from agent.learn import dataset, eval_ranker, ranker


def test_spearman_averages_ties_and_needs_three_values():
    assert ranker.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert ranker.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert ranker.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(0.8660254)
    assert ranker.spearman([1, 2], [1, 2]) is None
    with pytest.raises(ValueError, match="3 values against 2"):
        ranker.spearman([1, 2, 3], [1, 2])


def test_summarize_counts_roles_ops_and_regions_into_fixed_names():
    ir = [("kernel", "kernel", {"kernel.threads": 384, "kernel.persistent": True, "kernel.name": "k"}),
          ("role", "kernel.roles[0]", {"role.kind": "producer", "role.warps": 4, "role.registers": 40}),
          ("role", "kernel.roles[1]", {"role.kind": "consumer", "role.warps": 4, "role.registers": 232}),
          ("role", "kernel.roles[2]", {"role.kind": "consumer", "role.warps": 4, "role.registers": 232}),
          ("region", "kernel.regions[0]", {"region.space": "shared", "region.bytes": 65536, "region.stages": 4,
                                           "region.swizzle_bytes": 128, "region.ring": True}),
          ("op", "kernel.roles[1].body[0].mma", {"op.kind": "mma", "op.mma_kind": "wgmma", "op.in_loop": True, "op.depth": 2})]
    f = ranker.summarize({"wgmma_s": 1e-4}, 2e-3, ir)
    assert f["ir.kernel.threads"] == 384 and f["ir.kernel.persistent"] == 1.0 and "ir.kernel.name" not in f
    assert f["ir.roles.consumer"] == 2 and f["ir.role_warps.consumer"] == 8 and f["ir.role_registers_max.consumer"] == 232
    assert f["ir.region_stages_max.shared"] == 4 and f["ir.rings"] == 1 and f["ir.mma.wgmma"] == 1
    assert f["ir.op_depth_max"] == 2 and f["cost.wgmma_s"] == 1e-4
    with pytest.raises(ValueError, match="predicted_s must be a positive time"):
        ranker.summarize({}, 0.0, ir)


def test_summarize_counts_mma_operand_tiles_swizzled_narrower_than_their_rows():
    def region(name, swizzle, inner):
        return ("region", "kernel.regions[%s]" % name, {"region.space": "shared", "region.name": name,
                                                         "region.swizzle_bytes": swizzle, "region.inner_bytes": inner})
    ir = [region("sA", 64, 128),    # an operand whose 128-byte row could take 128b: under-swizzled
          region("sB", 128, 256),   # an operand at the widest span: not
          region("sK", 64, 64),     # an operand whose row is 64 bytes: 64b is its widest
          region("sN", 0, 512),     # no swizzle, but no MMA reads it: not counted
          ("op", "kernel.roles[1].body[0].mma", {"op.kind": "mma", "op.mma_kind": "wgmma", "op.regions": ["sA", "sB", "sK", "acc"]})]
    assert ranker.summarize({}, 1e-3, ir)["ir.mma_operands_underswizzled"] == 1
    # the swizzle of sA hides behind sB's in the per-space maximum; the count sees it
    wide = [region("sA", 128, 128)] + ir[1:]
    assert ranker.summarize({}, 1e-3, wide)["ir.swizzle_bytes_max.shared"] == ranker.summarize({}, 1e-3, ir)["ir.swizzle_bytes_max.shared"]
    assert ranker.summarize({}, 1e-3, wide)["ir.mma_operands_underswizzled"] == 0


def _synthetic(n=60, seed=3):
    """Rows whose time falls with consumers and rises with stages, which the analytic prediction ignores."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        c, s = rng.choice([1, 2, 3, 4]), rng.choice([2, 3, 4, 5])
        t = 1e-3 * (1.0 + 1.0 / c + 0.05 * s) * rng.uniform(0.98, 1.02)
        rows.append({"task": "t", "run": "r", "ir_hash": "h%03d" % i, "device": "NVIDIA H200", "toolchain": "nvcc",
                     "measured_s": t, "predicted_s": 1e-3,
                     "features": {"ir.roles.consumer": float(c), "ir.region_stages_max.shared": float(s)}})
    return rows


def test_the_ranker_learns_what_the_analytic_model_cannot_see_on_held_out_rows():
    result = eval_ranker.evaluate(_synthetic())["t"]
    assert result["ranker_spearman"] > 0.9
    assert result["analytic_spearman"] == 0.0 and result["analytic_distinct_predictions"] == 1


def test_a_ranker_round_trips_as_text_and_refuses_too_little_data():
    rows = _synthetic()
    model = ranker.Ranker.fit(rows)
    again = ranker.Ranker.from_text(model.to_text())
    feats = [r["features"] for r in rows[:10]]
    assert again.predict(feats) == pytest.approx(model.predict(feats))
    with pytest.raises(ValueError, match="at least 12 measured rows, got 5"):
        ranker.Ranker.fit(rows[:5])
    bad = [dict(r) for r in rows]
    bad[3]["measured_s"] = 0.0
    with pytest.raises(ValueError, match="h003: measured_s must be a positive time"):
        ranker.Ranker.fit(bad)


def test_a_dataset_row_without_a_field_is_refused_by_name(tmp_path):
    rows = _synthetic(4)
    path = str(tmp_path / "d.jsonl")
    dataset.write(path, list(reversed(rows)))
    assert [r["ir_hash"] for r in dataset.read(path)] == sorted(r["ir_hash"] for r in rows)
    with open(path, "a") as f:
        f.write(json.dumps({"task": "t", "run": "r"}) + "\n")
    with pytest.raises(ValueError, match=r"d.jsonl:5: a dataset row needs ir_hash, device, toolchain"):
        dataset.read(path)


def test_every_measured_candidate_of_a_store_becomes_a_row(tmp_path):
    _, _, store, _ = testing.measured_run(tmp_path, evaluations=6)
    measured = store.db.execute("SELECT COUNT(*) FROM candidates WHERE status = 'measured'").fetchone()[0]
    assert measured >= 3
    port = testing.lowering_only_port()
    try:
        with pytest.raises(ValueError, match="has no toolchain recorded; pass toolchain="):
            dataset.from_store(store.path, port)
        rows = dataset.from_store(store.path, port, toolchain="nvcc test")
    finally:
        port.close()
    assert len(rows) == measured
    assert all(r["task"] == testing.small_task().name and r["toolchain"] == "nvcc test" and r["measured_s"] > 0
               for r in rows)
    assert all(r["features"]["ir.kernel.threads"] > 0 and "cost.log_predicted_s" in r["features"] for r in rows)
