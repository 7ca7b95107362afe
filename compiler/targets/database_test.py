"""Tests of the target database: the data file's figures, defaults, inheritance and errors."""

import dataclasses
import json

import pytest

from compiler import targets
from compiler.targets import database


def test_every_compiler_target_has_devices_and_a_default():
    assert database.target_names() == sorted(targets.TARGETS)
    assert database.device_for("sm_80").name == "A100-SXM4-80GB"
    assert database.device_for("sm_90a").name == "H200"  # our benchmark machine
    assert database.device_for("sm_100a").name == "B200"
    assert database.device_names("sm_90a") == ["H100-SXM", "H200"]


def test_datasheet_figures():
    h100 = database.device_for("sm_90a", "H100-SXM")
    assert (h100.sms, h100.sm_clock_ghz, h100.hbm_bandwidth_tbps) == (132, 1.98, 3.35)
    assert h100.peak_tera_per_s["wgmma_bf16"] == pytest.approx(989, abs=1)
    a100 = database.device_for("sm_80")
    assert (a100.sms, a100.sm_clock_ghz, a100.shared_per_block_bytes) == (108, 1.41, 166912)
    assert a100.peak_tera_per_s["mma_sync_bf16"] == 312
    assert a100.l2_bytes == 40 * 1024 * 1024
    b200 = database.device_for("sm_100a")
    assert (b200.sms, b200.hbm_bandwidth_tbps, b200.shared_per_sm_bytes) == (148, 8.0, 228 * 1024)
    assert b200.peak_tera_per_s["tcgen05_bf16"] == 2250


def test_h200_inherits_the_h100_sm_and_overrides_memory():
    h100, h200 = database.device_for("sm_90a", "H100-SXM"), database.device_for("sm_90a", "H200")
    assert h200.sms == h100.sms and h200.peak_tera_per_s == h100.peak_tera_per_s
    assert (h200.memory_gb, h200.hbm_bandwidth_tbps, h200.hbm_reachable_tbps) == (141, 4.8, 4.22)
    assert h200.measured_gemm_bf16_tflops == (692, 790)
    assert h100.measured_gemm_bf16_tflops is None
    assert "measured" in h200.sources["hbm_reachable_tbps"]
    assert h200.key == "sm_90a/H200"


def test_every_figure_has_a_source():
    for target in database.target_names():
        for name in database.device_names(target):
            dev = database.device_for(target, name)
            scalars = [f.name for f in dataclasses.fields(database.Limits)] + ["sms", "hbm_bandwidth_tbps"]
            for key in scalars:
                assert dev.sources[key]
            for key in dev.peak_tera_per_s:
                assert dev.sources["peak_tera_per_s." + key]


def test_target_facts_are_data_with_sources():
    sm90a = database.target_facts("sm_90a")
    assert (sm90a.arch, sm90a.compute_capability) == ("90a", (9, 0))
    assert "wgmma" in sm90a.features and "wgmma" not in database.target_facts("sm_100a").features
    assert targets.TARGETS["sm_90a"].features == sm90a.features  # compiler.targets builds from the data
    assert set(sm90a.sources) == {"compute_capability", "setmaxnreg", "role_register_overhead"}
    assert database.target_facts("sm_80").setmaxnreg is None
    assert set(targets.FEATURES) == set(database.load().features)


def test_malformed_target_facts_are_refused():
    undescribed = _raw()
    undescribed["targets"]["sm_80"]["features"].append("warp_magic")
    with pytest.raises(ValueError, match="warp_magic"):
        database.parse(undescribed)
    no_budgets = _raw()
    del no_budgets["targets"]["sm_90a"]["setmaxnreg"]
    with pytest.raises(ValueError, match="setmaxnreg"):
        database.parse(no_budgets)


def test_unknown_target_or_device_lists_the_valid_ones():
    with pytest.raises(ValueError, match="sm_100a, sm_80, sm_90a"):
        database.device_for("sm_70")
    with pytest.raises(ValueError, match="H100-SXM, H200"):
        database.device_for("sm_90a", "A100-SXM4-80GB")


def test_limits_for_the_verifier():
    lim = database.limits("sm_90a")
    assert lim == database.Limits(
        shared_per_block_bytes=232448,
        shared_per_sm_bytes=233472,
        shared_reserved_per_block_bytes=1024,
        registers_per_sm=65536,
        registers_per_thread_max=255,
        register_allocation_unit=256,
        threads_per_block_max=1024,
        threads_per_sm_max=2048,
        blocks_per_sm_max=32,
        cluster_size_max=8,
        named_barriers_max=16,
        tensor_memory_bytes_per_sm=0,
    )
    assert database.limits("sm_80").cluster_size_max == 1
    assert database.limits("sm_100a").tensor_memory_bytes_per_sm == 256 * 1024


def test_device_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        database.device_for("sm_90a").sms = 1
    with pytest.raises(TypeError):
        database.device_for("sm_90a").peak_tera_per_s["wgmma_bf16"] = 1


def test_derived_rates():
    h200 = database.device_for("sm_90a")
    assert h200.hbm_reachable_bytes_per_s == pytest.approx(4.22e12)
    assert h200.peak_per_s("wgmma_bf16") == pytest.approx(989.4e12)
    assert h200.peak_per_s("tcgen05_bf16") is None
    assert h200.shared_bytes_per_s == pytest.approx(128 * 1.98e9 * 132)
    assert h200.latency_s("global") == pytest.approx(650 / 1.98e9)
    assert h200.latency_s("tcgen05_issue") == 0


def _raw():
    with open(database.TARGETS_JSON) as f:
        return json.load(f)


def test_malformed_data_is_refused():
    missing = _raw()
    del missing["targets"]["sm_80"]["devices"]["A100-SXM4-80GB"]["sms"]
    with pytest.raises(ValueError, match="missing figures \\['sms'\\]"):
        database.parse(missing)
    unsourced = _raw()
    unsourced["targets"]["sm_80"]["devices"]["A100-SXM4-80GB"]["sms"] = {"value": 108, "source": ""}
    with pytest.raises(ValueError, match="sm_80/A100-SXM4-80GB.sms"):
        database.parse(unsourced)
    typo = _raw()
    typo["targets"]["sm_90a"]["devices"]["H200"]["smz"] = {"value": 1, "source": "x"}
    with pytest.raises(ValueError, match="unknown figures \\['smz'\\]"):
        database.parse(typo)
    bad_base = _raw()
    bad_base["targets"]["sm_90a"]["devices"]["H200"]["base"] = "H300"
    with pytest.raises(ValueError, match="base 'H300'"):
        database.parse(bad_base)
