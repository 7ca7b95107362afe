"""Runs side by side: where each reached the reference's best, absolutely and against the tuned kernel beside it."""

import json

import pytest

from agent.learn import curves


def _summary(run, bests, peer_ms, task="t"):
    return {"run": run, "task": {"name": task}, "evaluations": len(bests),
            "best": {"median_ms": min(bests), "lineage": ["seed"]}, "peers": {curves.PEER: {"median_ms": peer_ms}},
            "curve": [{"evaluation": i + 1, "best_ms": min(bests[: i + 1])} for i in range(len(bests))]}


def test_reached_is_the_first_evaluation_within_the_tolerance():
    points = [(1, 2.0), (2, 1.01), (3, 1.004), (4, 1.0)]
    assert curves.reached(points, 1.0) == 3  # 1.004 is within 0.5% of 1.0, 1.01 is not
    assert curves.reached(points, 0.9) is None


def test_a_second_run_is_judged_absolutely_and_against_its_own_tuned_kernel():
    first = _summary("a", [8.0, 2.0, 1.2, 1.1, 1.0, 1.0, 1.0, 1.0], peer_ms=1.0)
    # A slower machine (its tuned kernel 5% slower): never 1.0 ms, but the first's ratio to its peer at evaluation 3.
    second = _summary("b", [8.4, 1.26, 1.05, 1.05], peer_ms=1.05)
    rows, ref_at = curves.compare({"first": first, "second": second}, "first")
    assert ref_at == 5
    assert rows["second"]["reached_reference"] == {"absolute": None, "against_the_tuned_kernel": 3}
    assert rows["second"]["within_half"] == {"absolute": False, "against_the_tuned_kernel": False}  # 3 > 5 / 2
    assert "within_half" not in rows["first"] and rows["first"]["curve"][-1] == [8, 1.0]


def test_runs_of_several_tasks_or_an_unknown_reference_are_refused():
    with pytest.raises(ValueError, match="several tasks"):
        curves.compare({"a": _summary("a", [1.0], 1.0), "b": _summary("b", [1.0], 1.0, task="u")}, "a")
    with pytest.raises(ValueError, match="--reference c is not one of the runs"):
        curves.compare({"a": _summary("a", [1.0], 1.0)}, "c")


def test_the_command_writes_both_curves_and_refuses_a_malformed_run(tmp_path):
    for name, bests in (("a", [3.0, 1.0]), ("b", [3.0, 2.0, 1.0])):
        (tmp_path / ("%s.json" % name)).write_text(json.dumps(_summary(name, bests, 1.0)))
    out = tmp_path / "out.json"
    assert curves.main(["--run", "a=%s" % (tmp_path / "a.json"), "--run", "b=%s" % (tmp_path / "b.json"),
                        "--reference", "a", "--note", "b=with a's knowledge", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["reference_reached_at"] == 2 and doc["runs"]["b"]["reached_reference"]["absolute"] == 3
    assert doc["runs"]["b"]["note"] == "with a's knowledge" and doc["runs"]["b"]["within_half"]["absolute"] is False
    with pytest.raises(SystemExit, match="--run takes NAME=VALUE"):
        curves.main(["--run", "a.json", "--reference", "a", "--out", str(out)])
