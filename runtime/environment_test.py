"""Parsing of nvidia-smi's answers for the measurement record."""

from runtime import environment

SMI = """00000000:18:00.0, NVIDIA H200, 570.124.06, 1980, 1980, 3201, 3201, 34, 118.52, P0
00000000:2A:00.0, NVIDIA H200, 570.124.06, 345, 1980, 3201, 3201, 31, [N/A], P8
"""


def test_parse_smi_rows_and_missing_values():
    rows = environment.parse_smi(SMI)
    assert len(rows) == 2
    assert rows[0]["name"] == "NVIDIA H200" and rows[0]["clocks.sm"] == 1980.0 and rows[0]["pstate"] == "P0"
    assert rows[1]["power.draw"] is None
    assert environment.parse_smi("garbage line\n") == []


def test_bus_ids_match_across_formats():
    assert environment.same_bus_id("00000000:2A:00.0", "0000:2a:00.0")
    assert environment.same_bus_id("2a:00.0", "00000000:2A:00.0")
    assert not environment.same_bus_id("00000000:2A:00.0", "0000:18:00.0")


def test_smi_record_without_nvidia_smi(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "nvidia-smi unavailable" in environment.smi_record("0000:18:00.0")["smi_error"]


def test_smi_record_picks_the_device_by_bus_id(monkeypatch, tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % SMI)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % tmp_path)
    record = environment.smi_record("0000:2a:00.0")
    assert record["sm_clock_mhz"] == 345.0 and record["sm_clock_max_mhz"] == 1980.0
    assert record["driver_version"] == "570.124.06" and record["power_w"] is None
    assert "no GPU at 0000:99:00.0" in environment.smi_record("0000:99:00.0")["smi_error"]


def test_the_commit_measured_is_cake_commit_when_set(monkeypatch):
    monkeypatch.setenv("CAKE_COMMIT", "0123abc")
    assert environment.cake_commit() == "0123abc"


def test_the_commit_measured_is_the_checkouts_head_otherwise(monkeypatch):
    monkeypatch.delenv("CAKE_COMMIT", raising=False)
    monkeypatch.setattr(environment, "ROOT", "/nonexistent")
    assert environment.cake_commit() == "unknown"
