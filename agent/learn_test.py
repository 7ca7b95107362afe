"""The outer loop: a recurring failure becomes an accepted verifier rule through the gate; bad proposals are refused."""

import json
import os

import pytest

from agent.compiler_port import open_port
from agent import tactics
from agent.genome import Genome, materialize
from agent.learn import calibrate, gate, knowledge, outer
from agent.learn.signatures import failure
from agent.store import Store
from agent.testing import knowledge_store
from compiler import analysis
from compiler.ir.hashing import ir_hash
from compiler.ir.text import print_kernel

FIXED = {"d": 128, "dtype": "bf16"}
SHAPES = {"B": 1, "N": 65536, "K": 1024, "D": 128}
FAMILY = "kmeans_assign_sm90a"


@pytest.fixture(scope="module")
def port():
    with open_port("in-process") as p:
        yield p


def _kernel(rewrites=None, **params):
    p = dict({"block_k": 128, "stages": 3, "consumers": 2}, **params)
    return materialize(Genome(FAMILY, p, rewrites or {}), FIXED)


def _run(root, name, passing=(), failing=(), kind="illegal_address", measured=None):
    """A run database with passing candidates (fitness set) and failing ones (one runtime failure each)."""
    os.makedirs(os.path.join(root, name))
    s = Store(os.path.join(root, name, "agent.db"))
    s.start_run(name, {"name": "t"}, {"mode_line": "x"}, "measure", 0)
    for k in passing:
        cid = s.insert_candidate(ir_hash(k), print_kernel(k), None, None, "t", "search", 0)
        seconds = measured(k) if measured else 1e-5
        s.record(cid, "measured", seconds,
                 prediction={"predicted_s": analysis.analyze(k, SHAPES).predicted_seconds, "bottleneck": "-",
                             "calibration": "-", "report": "{}", "features": analysis.features(k, SHAPES)},
                 measurement={"median_s": seconds, "device_s": 1.0} if measured else None)
    for k in failing:
        cid = s.insert_candidate(ir_hash(k), print_kernel(k), None, None, "t", "search", 0)
        s.record(cid, "failed", failures=[failure("runtime", kind, "", "CUDA error: an illegal memory access was"
                                                  " encountered (case %d)" % cid, ir_hash(k))])
    return s


SWIZZLED = {"swizzle:sCols": {"region": "sCols", "mode": "64b"}}
PASSING = [_kernel(stages=s) for s in (2, 3, 4)] + [_kernel(block_k=64, stages=s) for s in (2, 3)]
FAILING = [_kernel(SWIZZLED, stages=s) for s in (2, 3, 4)]


def test_a_recurring_failure_becomes_an_accepted_rule(tmp_path, port):
    root, kb = str(tmp_path / "runs"), knowledge_store(tmp_path)
    _run(root, "a", PASSING, FAILING[:2])
    current = _run(root, "b", failing=FAILING[2:])
    results = outer.learn([root], kb, port, current, min_recurrence=3, log=lambda *_: None)
    [(kind, sig, verdict)] = [r for r in results if r[0] == "rule"]
    assert verdict.accepted, verdict.why
    assert sig == "runtime|illegal_address|-|cuda error: an illegal memory access was encountered (case #)"
    doc = kb.load(knowledge.RULES)
    assert doc["version"] == 2 and doc["changelog"][-1]["proposal"] == "CAKE-LEARNED-001"
    [rule] = doc["rules"]
    assert rule["id"] == "CAKE-LEARNED-001" and rule["severity"] == "error"
    # It generalizes: a fresh kernel with the failing pattern is rejected, the seed is not.
    fresh = _kernel(SWIZZLED, block_k=64)
    with open_port("in-process", outer.learned_rules(kb)["rules"]) as learned:
        assert "CAKE-LEARNED-001" in [d.id for d in learned.verify(fresh)]
        assert "CAKE-LEARNED-001" not in [d.id for d in learned.verify(_kernel())]
    assert len(doc["targets"]["CAKE-LEARNED-001"]) == 3
    for name in doc["targets"]["CAKE-LEARNED-001"]:
        assert open(kb.path(name)).readline() == "# expect: CAKE-LEARNED-001\n"
    [row] = [p for p in current.proposals() if p["kind"] == "rule"]
    assert row["status"] == "accepted" and row["knowledge_version"] == 2
    # Learned, not promoted: the base (the checkout's files) is untouched.
    assert knowledge.read(kb.base, knowledge.RULES)["rules"] == [] and not os.path.exists(os.path.join(kb.base, "gate"))
    assert all(kb.path(name).startswith(kb.learned) for name in doc["targets"]["CAKE-LEARNED-001"])
    # Learning again finds the cluster already caught: no second rule.
    again = outer.learn([root], kb, port, None, min_recurrence=3, log=lambda *_: None)
    assert not [r for r in again if r[0] == "rule"]


def test_a_failure_that_does_not_recur_proposes_nothing(tmp_path, port):
    root, kb = str(tmp_path / "runs"), knowledge_store(tmp_path)
    _run(root, "a", PASSING, FAILING[:2])
    assert not [r for r in outer.learn([root], kb, port, min_recurrence=3, log=lambda *_: None) if r[0] == "rule"]


def test_a_rule_rejecting_known_good_programs_is_refused(tmp_path, port):
    bad = {"id": "CAKE-LEARNED-001", "severity": "error", "doc": "every 128-byte swizzle is wrong",
           "when": {"feature": "region.swizzle", "op": "==", "value": "128b"},
           "message": "region {region.name} is swizzled", "fix_hint": "do not"}
    verdict = gate.gate_rule(port, bad, [], [("f", FAILING[0])])
    assert not verdict.accepted
    assert verdict.why.startswith("rejects") and "kmeans_assign_sm90a" in verdict.details["rejected_good"]


def test_a_rule_missing_its_targets_or_malformed_is_refused(port):
    narrow = {"id": "CAKE-LEARNED-001", "severity": "error", "doc": "d",
              "when": {"feature": "region.swizzle", "op": "==", "value": "32b"}, "message": "m", "fix_hint": "f"}
    assert gate.gate_rule(port, narrow, [], [("f", FAILING[0])]).why == "does not reject 1 of the 1 programs it targets"
    broken = dict(narrow, when={"feature": "region.colour", "op": "==", "value": 1})
    why = gate.gate_rule(port, broken, [], [("f", FAILING[0])]).why
    assert why.startswith("malformed rule: extra_rules_json holds no valid rules: rule CAKE-LEARNED-001") and \
        "region.colour" in why


def test_recalibration_is_accepted_when_held_out_error_drops(tmp_path, port):
    root, kb = str(tmp_path / "runs"), knowledge_store(tmp_path)
    kernels = [_kernel(block_k=b, stages=s, consumers=c) for b in (64, 128) for s in (2, 3, 4) for c in (1, 2)]
    # "Measured" times: the wgmma stage runs at 60% of the model's efficiency.
    def slow_mma(k):
        f = analysis.features(k, SHAPES)
        return 4e-6 + f["wgmma_s"] / 0.48 + f["fp32_s"] / 0.6
    store = _run(root, "a", kernels, measured=slow_mma)
    results = outer.learn([root], kb, port, store, log=lambda *_: None)
    [(_, sig, verdict)] = [r for r in results if r[0] == "calibration"]
    assert verdict.accepted, verdict.why
    assert verdict.details["after"] < verdict.details["before"]
    doc = kb.load(knowledge.CALIBRATION)
    assert doc["version"] == 1 and doc["calibration"]["version"] == "agent-1"
    with open_port("in-process", calibration=calibrate.current_data(kb)) as calibrated:
        report = calibrated.analyze(kernels[0], SHAPES, None).report
    assert report.calibration == "agent-1"
    assert abs(report.predicted_seconds / slow_mma(kernels[0]) - 1) < abs(
        analysis.analyze(kernels[0], SHAPES).predicted_seconds / slow_mma(kernels[0]) - 1)


def test_recalibration_that_does_not_help_is_refused(tmp_path, port):
    kernels = [_kernel(block_k=b, stages=s, consumers=c) for b in (64, 128) for s in (2, 3, 4) for c in (1, 2)]
    exact = [(analysis.features(k, SHAPES), analysis.analyze(k, SHAPES).predicted_seconds) for k in kernels]
    refit = calibrate.propose(port, exact, calibrate.current_data(knowledge.PACKAGE_DIR), "agent-1")
    verdict = gate.gate_calibration(refit.error_before, refit.error_after)
    assert not verdict.accepted and "not lower" in verdict.why


def test_measurements_the_compiler_refuses_are_a_refused_proposal(tmp_path, port):
    root, kb = str(tmp_path / "runs"), knowledge_store(tmp_path)
    kernels = [_kernel(block_k=b, stages=s, consumers=c) for b in (64, 128) for s in (2, 3, 4) for c in (1, 2)]
    store = _run(root, "a", kernels, measured=lambda k: 1e-5)
    store.db.execute("UPDATE predictions SET features = json_set(features, '$.warp_drive_s', 1.0)")
    store.db.commit()
    [(_, sig, verdict)] = [r for r in outer.learn([root], kb, port, store, log=lambda *_: None)
                           if r[0] == "calibration"]
    assert not verdict.accepted
    assert verdict.why.startswith("the compiler refused the refit: samples[0] cannot be fitted")
    assert "warp_drive_s" in verdict.why and kb.load(knowledge.CALIBRATION)["version"] == 0


def test_tactic_weights_follow_outcomes_with_enough_evidence(tmp_path, port):
    root, kb = str(tmp_path / "runs"), knowledge_store(tmp_path)
    s = _run(root, "a")
    for _ in range(10):
        s.add_reward("defer_lane_reduction", 1.0)
        s.add_reward("split_reduction_2", -0.5)
    s.add_reward("stages_up", 1.0)  # one outcome: not enough to move a weight
    results = outer.learn([root], kb, port, s, log=lambda *_: None)
    [(_, sig, verdict)] = [r for r in results if r[0] == "weights"]
    assert verdict.accepted, verdict.why
    assert sig == "weights|t/measure|1 runs"
    doc = kb.load(knowledge.TACTICS)
    learned = doc["context_weights"]["t/measure"]  # the run's task has no family: its name stands in
    assert learned["defer_lane_reduction"] == 2.0 and learned["split_reduction_2"] < 0.3
    assert "stages_up" not in learned  # one outcome; the listed priors stay as they were
    assert doc["tactics"] == knowledge.read(knowledge.PACKAGE_DIR, knowledge.TACTICS)["tactics"]
    base = knowledge.read(knowledge.PACKAGE_DIR, knowledge.TACTICS)
    assert doc["learned_from"] == base.get("learned_from", []) + ["a"] and doc["version"] == base["version"] + 1
    # The same runs' evidence never counts twice.
    assert not [r for r in outer.learn([root], kb, port, None, log=lambda *_: None) if r[0] == "weights"]
    assert not gate.gate_weights({"stages_up": (1.0, 2.0)}, {"stages_up": 1}).accepted


def test_learned_rules_are_data_the_verifier_loads(tmp_path, port):
    kb = knowledge_store(tmp_path)
    assert outer.learned_rules(kb)["rules"] == []
    data = json.load(open(os.path.join(kb.base, knowledge.RULES)))
    assert data["rules"] == [] and data["version"] >= 1
    assert not [d for d in port.verify(_kernel(), extra_rules=outer.learned_rules(kb)["rules"]) if d.severity == 1]


def test_tactic_weights_are_learned_per_family_and_mode(tmp_path, port):
    root, kb = str(tmp_path / "runs"), knowledge_store(tmp_path)
    family = "kmeans_assign_naive"
    for name, mode, reward in (("gpu", "measure", 1.0), ("cpu", "cost_model", -1.0)):
        os.makedirs(os.path.join(root, name))
        s = Store(os.path.join(root, name, "agent.db"))
        s.start_run(name, {"name": "t", "family": family}, {"mode_line": "x"}, mode, 0)
        for _ in range(10):
            s.add_reward("defer_lane_reduction", reward)
        s.close()
    results = [r for r in outer.learn([root], kb, port, None, log=lambda *_: None) if r[0] == "weights"]
    assert sorted(sig for _, sig, _ in results) == ["weights|%s/cost_model|1 runs" % family,
                                                    "weights|%s/measure|1 runs" % family]
    # Each context's weight moves from what the checkout held for it (a measured run's weights, learned before,
    # or the listed prior).
    before = {mode: tactics.load(knowledge.PACKAGE_DIR, family, mode)[0]["defer_lane_reduction"].weight
              for mode in ("measure", "cost_model")}
    gpu = tactics.load(kb, family, "measure")[0]["defer_lane_reduction"].weight
    cpu = tactics.load(kb, family, "cost_model")[0]["defer_lane_reduction"].weight
    assert (gpu, cpu) == (pytest.approx(before["measure"] * 2.0), pytest.approx(before["cost_model"] / 2.0))
