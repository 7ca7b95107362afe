"""Tests of the calibration file and of refitting its constants from measurements."""

import random

import pytest

from compiler.analysis import calibration, roofline

# Constants a synthetic "device" really has, away from the defaults.
TRUE = {"eff_wgmma": 0.62, "eff_dram": 0.85, "launch_scale": 1.6, "overlap_specialized": 0.75, "l2_miss_fraction": 0.25}


def _synthetic(n, seed, noise=0.0):
    """(features, measured seconds) pairs timed with TRUE constants, spanning all regimes."""
    rng = random.Random(seed)
    true = {**calibration.load().constants, **TRUE}
    out = []
    for _ in range(n):
        scale = 10 ** rng.uniform(-6, -2)
        features = {
            "launch_s": 4e-6,
            "latency_s": 3e-7,
            "cycle_s": 5e-10,
            "fill_stages": rng.choice([1, 2, 4]),
            "fill_waves": rng.choice([1, 4, 16]),
            "quant": rng.uniform(1, 1.3),
            "wgmma_s": scale * rng.uniform(0, 1),
            "dram_read_unique_s": scale * rng.uniform(0, 0.5),
            "dram_read_reuse_s": scale * rng.uniform(0, 3),
            "dram_write_s": scale * rng.uniform(0, 0.2),
            "l2_s": scale * rng.uniform(0, 0.5),
            "specialized": rng.choice([0, 1]),
        }
        seconds = roofline.predict(features, true).seconds * (1 + rng.gauss(0, noise))
        out.append((features, seconds))
    return out


def test_default_file_loads_with_a_version_and_bounds():
    cal = calibration.load()
    assert cal.version == "v1-default"
    for name, value in cal.constants.items():
        lo, hi = cal.bounds[name]
        assert 0 < lo <= value <= hi and cal.docs[name]
    # Every constant the formula reads is in the file.
    roofline.predict({name: 1.0 for name in roofline.FEATURES}, cal.constants)


def test_fit_recovers_known_constants():
    fitted = calibration.fit(_synthetic(60, seed=1), keys=sorted(TRUE))
    for name, value in TRUE.items():
        assert fitted[name] == pytest.approx(value, rel=0.02), name
    assert calibration.prediction_error(_synthetic(20, seed=2), fitted) < 1e-3


def test_fit_lowers_held_out_error_with_noisy_measurements():
    train, held_out = _synthetic(80, seed=3, noise=0.03), _synthetic(40, seed=4, noise=0.03)
    default = calibration.load().constants
    fitted = calibration.fit(train)  # every constant free: the unconstrained ones stay put
    assert calibration.prediction_error(held_out, fitted) < 0.5 * calibration.prediction_error(held_out, default)
    assert calibration.prediction_error(held_out, fitted) < 0.06


def test_fit_keeps_constants_within_bounds():
    cal = calibration.load()
    # Measurements 100x slower than any efficiency <= 1 can explain: the fit stops at the bound.
    slow = [(features, seconds * 100) for features, seconds in _synthetic(10, seed=5)]
    fitted = calibration.fit(slow, keys=["eff_wgmma", "eff_dram", "eff_l2", "launch_scale"])
    for name, value in fitted.items():
        lo, hi = cal.bounds[name]
        assert lo <= value <= hi


def test_fit_refuses_non_positive_times():
    with pytest.raises(ValueError, match="positive"):
        calibration.fit([({"launch_s": 1e-6}, 0.0)])


def test_save_and_load_round_trip(tmp_path):
    cal = calibration.load()
    new = cal.updated({"eff_wgmma": 0.7, "eff_dram": 5.0}, version="h200-test")
    assert new.constants["eff_dram"] == cal.bounds["eff_dram"][1]  # clipped to its bound
    path = str(tmp_path / "calibration.json")
    calibration.save(new, path)
    again = calibration.load(path)
    assert again == new
    assert again.version == "h200-test" and again.constants["eff_wgmma"] == 0.7
    with pytest.raises(ValueError, match="unknown calibration constants: nope"):
        cal.updated({"nope": 1.0}, version="x")


def test_malformed_file_is_refused():
    with pytest.raises(ValueError, match="eff_x"):
        calibration.parse({"version": "v", "constants": {"eff_x": {"value": 2.0, "min": 0.1, "max": 1.0, "doc": ""}}})
    with pytest.raises(ValueError, match="no version"):
        calibration.parse({"constants": {}})
    with pytest.raises(ValueError, match="an object with a version and its constants"):
        calibration.parse({"version": "v", "constants": ["eff_wgmma"]})


def test_refit_names_the_refitted_calibration_and_judges_both_on_held_out_pairs():
    train, held_out = _synthetic(40, seed=6), _synthetic(20, seed=7)
    cal = calibration.load()
    r = calibration.refit(train, held_out, cal, "h200-refit")
    assert r.calibration.version == "h200-refit" and r.calibration.bounds == cal.bounds
    assert r.error_before == calibration.prediction_error(held_out, cal.constants)
    assert r.error_after == calibration.prediction_error(held_out, r.calibration.constants) < r.error_before / 5
    assert calibration.refit(train).calibration.version == cal.version + "+refit"


def test_a_measurement_unfit_to_refit_from_says_why():
    constants = calibration.load().constants
    features, seconds = _synthetic(1, seed=8)[0]
    assert calibration.measurement_problem(features, seconds, constants) is None
    for f, s, why in [(features, 0.0, "positive"), (features, True, "positive"), (features, float("nan"), "positive"),
                      (dict(features, warp_s=1.0), seconds, "unknown features warp_s"),
                      (dict(features, wgmma_s=-1.0), seconds, "wgmma_s must be finite and non-negative"),
                      ({}, seconds, "predict no time")]:
        assert why in calibration.measurement_problem(f, s, constants)
