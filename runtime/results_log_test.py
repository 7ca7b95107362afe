"""The durable results file."""

from runtime import results_log


def test_append_and_read_back(tmp_path):
    path = str(tmp_path / "results.jsonl")
    assert results_log.read(path) == []
    results_log.append(path, {"ir_hash": "a", "passed": True})
    results_log.append(path, {"ir_hash": "b", "value": b"bytes"})
    assert results_log.read(path) == [{"ir_hash": "a", "passed": True}, {"ir_hash": "b", "value": "b'bytes'"}]


def test_a_cut_short_line_loses_nothing_else(tmp_path):
    path = tmp_path / "results.jsonl"
    results_log.append(str(path), {"n": 1})
    with open(path, "a") as f:
        f.write('{"n": 2, "trunc')  # a crash mid-write
    assert results_log.read(str(path)) == [{"n": 1}]
    results_log.append(str(path), {"n": 3})
    assert results_log.read(str(path)) == [{"n": 1}, {"n": 3}]
