"""Sanity tests of the predictions: the sm_90a GEMM, a copy, and the report's fields."""

import math

import pytest

from compiler.analysis import AnalysisError, analyze, calibration, features, roofline
from compiler.testing import analysis_kernels
from kernels.gemm.schedules import gemm_sm90a
from kernels.kmeans import schedules as kmeans

CUBE = {"M": 8192, "N": 8192, "K": 8192}


@pytest.fixture(scope="module")
def gemm():
    return gemm_sm90a()


@pytest.fixture(scope="module")
def gemm_report(gemm):
    return analyze(gemm, CUBE)


def test_gemm_8192_is_compute_bound_in_the_measured_range(gemm_report):
    r = gemm_report
    assert r.device == "sm_90a/H200"
    assert r.bottleneck == "wgmma"
    assert roofline.KIND[r.bottleneck] == "compute"
    assert 1.3e-3 < r.predicted_seconds < 2.2e-3
    # cuBLAS measured 692-790 TFLOP/s on this machine: the prediction lands near it.
    assert 600 < 2 * 8192**3 / r.predicted_seconds / 1e12 < 850


def test_gemm_counts_and_resources(gemm_report):
    r = gemm_report
    assert {q.name: q.value for q in r.flops} == {"wgmma": 2 * 8192**3}
    by_level = {q.name: q.value for q in r.bytes}
    # Every 128x256 block reads its A and B panels: (128 + 256) * K * 2 bytes.
    assert by_level["global_read"] == 2048 * (128 + 256) * 8192 * 2
    assert by_level["global_write"] == 8192 * 8192 * 2
    assert by_level["global_unique"] == 3 * 8192 * 8192 * 2
    assert by_level["global_unique"] < by_level["dram"] < by_level["l2"]
    assert (r.threads_per_block, r.registers_per_thread) == (384, 168)  # 128 x 40 + 256 x 232 registers
    assert r.shared_bytes_per_block == 4 * (128 + 256) * 64 * 2 + 8 * 8 + 1024  # ring + 8 mbarriers + base alignment
    assert (r.blocks_per_sm, r.occupancy_limiter) == (1, "shared")
    assert r.blocks == 2048 and r.waves == pytest.approx(2048 / 132)
    assert dict(r.shapes) == CUBE
    assert r.calibration == calibration.load().version


def test_doubling_k_doubles_the_gemm_time(gemm, gemm_report):
    doubled = analyze(gemm, {**CUBE, "K": 16384})
    assert doubled.predicted_seconds / gemm_report.predicted_seconds == pytest.approx(2.0, rel=0.05)


def test_every_stage_is_explained(gemm_report):
    names = [s.name for s in gemm_report.stages]
    assert names[:2] == ["launch", "fill"] and {"dram", "l2", "shared", "wgmma", "epilogue"} <= set(names)
    for s in gemm_report.stages:
        assert s.seconds > 0 and s.detail and 0 < s.utilization <= 1
    wgmma = next(s for s in gemm_report.stages if s.name == "wgmma")
    assert "989.4 TFLOP/s" in wgmma.detail and "eff 0.80" in wgmma.detail
    assert wgmma.utilization == pytest.approx(2 * 8192**3 / 989.4e12 / gemm_report.predicted_seconds)


def test_a_copy_is_memory_bound():
    r = analyze(analysis_kernels.copy_rows(), {"N": 1 << 24})
    assert r.bottleneck == "dram" and roofline.KIND[r.bottleneck] == "memory"
    moved = 2 * (1 << 24) * 64 * 4
    assert r.predicted_seconds == pytest.approx(moved / 4.22e12, rel=0.1)
    assert not r.flops


def test_the_device_changes_the_prediction(gemm):
    h100 = analyze(gemm, CUBE, device="H100-SXM")
    same = analyze(gemm, CUBE, device="sm_90a/H100-SXM")
    assert h100 == same and h100.device == "sm_90a/H100-SXM"
    copy = analysis_kernels.copy_rows()
    assert analyze(copy, {"N": 1 << 24}, device="H100-SXM").predicted_seconds > analyze(copy, {"N": 1 << 24}).predicted_seconds


def test_representative_shapes_when_none_are_given(gemm):
    r = analyze(gemm)
    assert dict(r.shapes) == {"M": 4096, "N": 4096, "K": 4096}
    assert r.predicted_seconds > 0


def test_persistent_kernels_count_tiles_and_fill_once():
    r = analyze(analysis_kernels.persistent_rows(blocks_per_sm=2), {"N": 1 << 20})
    tiles = (1 << 20) // 128
    assert r.blocks == tiles and r.waves == pytest.approx(tiles / (132 * 2))
    assert "1 fill(s)" in next(s.detail for s in r.stages if s.name == "fill")
    by_level = {q.name: q.value for q in r.bytes}
    assert by_level["global_read"] == by_level["global_write"] == (1 << 20) * 64 * 4


def test_sm80_mma_sync_uses_the_a100():
    r = analyze(analysis_kernels.mma_sync_loop(), CUBE)
    assert r.device == "sm_80/A100-SXM4-80GB"
    assert {q.name: q.value for q in r.flops} == {"mma_sync": 2 * 8192**3}
    assert "312 TFLOP/s" in next(s.detail for s in r.stages if s.name == "mma_sync")


def test_kmeans_assign_at_a_million_points_is_tensor_core_bound():
    shapes = {"B": 1, "N": 1 << 20, "K": 1024}  # D is specialized to 128
    r = analyze(kmeans.assign_sm90a(), shapes)
    flops = {q.name: q.value for q in r.flops}
    assert flops["wgmma"] == 2 * (1 << 20) * 1024 * 128
    assert 0 < flops["fp32"] < 0.05 * flops["wgmma"]  # distances and the running argmin
    assert r.bottleneck == "wgmma" and 0.3e-3 < r.predicted_seconds < 1e-3


def test_kmeans_update_pays_for_its_atomics():
    r = analyze(kmeans.update(), {"B": 1, "N": 1 << 20, "K": 1024})
    atomic = next(s for s in r.stages if s.name == "atomic")
    assert "warp-aggregated" in atomic.detail and atomic.seconds > 0


def test_calibration_constants_drive_the_prediction(gemm, gemm_report):
    cal = calibration.load()
    slower = cal.updated({"eff_wgmma": cal.constants["eff_wgmma"] / 2}, version="test-half")
    r = analyze(gemm, CUBE, calibration=slower)
    assert r.calibration == "test-half"
    assert r.predicted_seconds == pytest.approx(2 * gemm_report.predicted_seconds, rel=0.05)


def test_features_reproduce_the_report(gemm, gemm_report):
    f = features(gemm, CUBE)
    assert set(f) <= set(roofline.FEATURES)
    assert roofline.predict(f, calibration.load().constants).seconds == gemm_report.predicted_seconds
    assert f["specialized"] == 1.0 and f["fill_stages"] == 4.0


def test_missing_information_is_an_analysis_error(gemm):
    with pytest.raises(AnalysisError, match="unknown device 'B200' for target sm_90a"):
        analyze(gemm, device="B200")
    with pytest.raises(AnalysisError, match="not a sm_90a device"):
        analyze(gemm, device="sm_80/A100-SXM4-80GB")
    k = analysis_kernels.copy_rows()
    del k.launch.grid[:]
    with pytest.raises(AnalysisError, match="kernel.launch.grid: 0 dims"):
        analyze(k)
    k = analysis_kernels.copy_rows()
    k.launch.grid[0].sym = "G"
    with pytest.raises(AnalysisError, match="kernel.launch.grid\\[0\\]: unbound symbol 'G'"):
        analyze(k)
    k = analysis_kernels.copy_rows()
    k.target = 0
    with pytest.raises(AnalysisError, match="kernel.target: unspecified"):
        analyze(k)


def test_a_kernel_that_does_not_fit_is_an_analysis_error():
    k = gemm_sm90a(stages=6)  # 6 x 48 KB of ring: more than 227 KB
    with pytest.raises(AnalysisError, match="does not fit on one SM of sm_90a/H200: limited by shared"):
        analyze(k)


def test_prediction_is_finite_and_positive_for_samples():
    for make in (analysis_kernels.copy_rows, analysis_kernels.softmax_rows, analysis_kernels.persistent_rows):
        r = analyze(make())
        assert math.isfinite(r.predicted_seconds) and r.predicted_seconds > 0
