"""Tuning databases: lookups by bucket, round trips as sorted JSON, and the device/toolchain preference."""

from runtime.tuning_db import TuningDB, select


def test_round_trip_keeps_entries_and_how_it_was_made(tmp_path):
    db = TuningDB("op", "NVIDIA H200", "nvcc 13.0", made={"by": "test", "how": "timed"})
    db.remember("D1/K2/R3", "v_fast", {"B": 1, "N": 5}, {"v_fast": 0.1, "v_slow": 0.2}, "runtime timer")
    path = str(tmp_path / "h200.json")
    db.save(path)
    back = TuningDB.load(path)
    assert back.lookup("D1/K2/R3") == "v_fast" and back.lookup("D9/K9/R9") is None
    assert back.made == {"by": "test", "how": "timed"}
    assert back.entries["D1/K2/R3"]["times_ms"] == {"v_fast": 0.1, "v_slow": 0.2}


def test_select_ignores_other_devices_and_prefers_the_toolchain(tmp_path):
    paths = []
    for name, device, toolchain in (("a", "NVIDIA H200", "old"), ("b", "NVIDIA H200", "new"), ("c", "NVIDIA B200", "new")):
        db = TuningDB("op", device, toolchain)
        db.save(str(tmp_path / (name + ".json")))
        paths.append(str(tmp_path / (name + ".json")))
    chosen = select(paths + [str(tmp_path / "missing.json")], "op", "NVIDIA H200", "new")
    assert [db.toolchain for db in chosen] == ["new", "old"]
    assert select(paths, "other_op", "NVIDIA H200", "new") == []
