"""Calibration constants of the cost model: load, save, and refit from measurements.

    cal = load()                                   # calibration.json beside this file
    new = fit(measurements, cal)                   # measurements: [(features, seconds), ...]
    save(cal.updated(new, version="h200-2025-06-01"), path)
    r = refit(measurements, held_out, cal, "v2")   # the refitted Calibration, errors before and after

A measurement pairs the features model.features() gives for a kernel (at its
shapes, on its device) with the kernel's measured time. `fit` minimizes the sum of
squared log errors log(predicted / measured) over the constants, in log space
(constants stay positive) within each constant's [min, max], by damped
Gauss-Newton (Levenberg-Marquardt) with finite-difference derivatives: numpy
only, and robust to the formula's max/min kinks.
"""

import collections
import dataclasses
import functools
import json
import math
import numbers
import os
import types

import numpy as np

from compiler.analysis import roofline

CALIBRATION_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibration.json")


@dataclasses.dataclass(frozen=True)
class Calibration:
    """A version string and named constants, each with its bounds and meaning."""

    version: str
    constants: types.MappingProxyType  # name -> value
    bounds: types.MappingProxyType  # name -> (min, max)
    docs: types.MappingProxyType  # name -> what it means
    about: str = ""

    def updated(self, constants, version):
        """A copy with some constants replaced (each clipped to its bounds) and a new version."""
        unknown = set(constants) - set(self.constants)
        if unknown:
            raise ValueError("unknown calibration constants: %s" % ", ".join(sorted(unknown)))
        merged = dict(self.constants)
        for name, value in constants.items():
            lo, hi = self.bounds[name]
            merged[name] = min(max(float(value), lo), hi)
        return dataclasses.replace(self, version=version, constants=types.MappingProxyType(merged))

    def to_json(self):
        return {
            "version": self.version,
            "about": self.about,
            "constants": {
                name: {"value": value, "min": self.bounds[name][0], "max": self.bounds[name][1], "doc": self.docs[name]}
                for name, value in self.constants.items()
            },
        }


def parse(data):
    """A Calibration from a calibration file's parsed JSON; ValueError when malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("constants"), dict):
        raise ValueError("a calibration is an object with a version and its constants (calibration.json's format)")
    constants, bounds, docs = {}, {}, {}
    for name, entry in data["constants"].items():
        if not isinstance(entry, dict):
            raise ValueError("calibration constant %s: expected value, min, max and doc" % name)
        if set(entry) != {"value", "min", "max", "doc"}:
            raise ValueError("calibration constant %s: expected value, min, max and doc" % name)
        lo, hi, value = float(entry["min"]), float(entry["max"]), float(entry["value"])
        if not 0 < lo <= value <= hi:
            raise ValueError("calibration constant %s: need 0 < min <= value <= max" % name)
        constants[name], bounds[name], docs[name] = value, (lo, hi), entry["doc"]
    if not data.get("version"):
        raise ValueError("calibration file has no version")
    return Calibration(
        version=data["version"],
        constants=types.MappingProxyType(constants),
        bounds=types.MappingProxyType(bounds),
        docs=types.MappingProxyType(docs),
        about=data.get("about", ""),
    )


@functools.lru_cache(maxsize=None)
def load(path=CALIBRATION_JSON):
    """The Calibration in a file (cached per path: files are replaced, not edited in place)."""
    with open(path) as f:
        return parse(json.load(f))


def save(calibration, path):
    """Write a Calibration as a calibration file (atomically: readers never see half a file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(calibration.to_json(), f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    load.cache_clear()


def _log_errors(measurements, constants):
    return np.array(
        [math.log(roofline.predict(features, constants).seconds / seconds) for features, seconds in measurements]
    )


def prediction_error(measurements, constants):
    """Root-mean-square of log(predicted / measured) over (features, measured_seconds) pairs."""
    errors = _log_errors(measurements, constants)
    return float(np.sqrt(np.mean(errors**2)))


def fit(measurements, calibration=None, keys=None, iterations=100):
    """Constants (a full name -> value dict) fitted to (features, measured_seconds) pairs.

    Starts from `calibration` (the default file when None) and fits `keys` (all
    constants when None); the others stay fixed. Constants the measurements do not
    constrain keep their starting values.
    """
    calibration = calibration or load()
    keys = list(calibration.constants) if keys is None else list(keys)
    for seconds in (s for _, s in measurements):
        if not seconds > 0:
            raise ValueError("measured times must be positive, got %r" % seconds)
    lo = np.log([calibration.bounds[k][0] for k in keys])
    hi = np.log([calibration.bounds[k][1] for k in keys])
    base = dict(calibration.constants)

    def constants_at(theta):
        return {**base, **{k: math.exp(t) for k, t in zip(keys, theta)}}

    def residuals(theta):
        return _log_errors(measurements, constants_at(theta))

    theta = np.clip(np.log([base[k] for k in keys]), lo, hi)
    r = residuals(theta)
    damping, step = 1e-3, 1e-5
    for _ in range(iterations):
        jac = np.empty((len(r), len(keys)))
        for j in range(len(keys)):
            probe = theta.copy()
            # Step inward at the upper bound so the probe stays feasible.
            h = -step if probe[j] + step > hi[j] else step
            probe[j] += h
            jac[:, j] = (residuals(probe) - r) / h
        jtj, jtr = jac.T @ jac, jac.T @ r
        improved = converged = False
        while damping < 1e12:
            lhs = jtj + damping * (np.diag(np.diag(jtj)) + 1e-12 * np.eye(len(keys)))
            candidate = np.clip(theta - np.linalg.solve(lhs, jtr), lo, hi)
            r_new = residuals(candidate)
            if r_new @ r_new < r @ r:
                # Converged when a step gains almost nothing.
                converged = r @ r - r_new @ r_new <= 1e-12 * (r @ r)
                theta, r, damping, improved = candidate, r_new, max(damping / 10, 1e-9), True
                break
            damping *= 10
        if not improved or converged or r @ r < 1e-24:
            break
    return constants_at(theta)


def measurement_problem(features, seconds, constants):
    """What makes one (features, measured seconds) pair unfit to refit from, or None: a time that is not
    a positive number, a feature roofline.FEATURES does not name, or a value that is not finite and
    non-negative, or features that predict no time at all under `constants`."""
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real) or not (
            math.isfinite(seconds) and seconds > 0):
        return "measured time must be a positive number of seconds, not %r" % (seconds,)
    unknown = sorted(set(features) - set(roofline.FEATURES))
    if unknown:
        return "unknown features %s (docs/cost_model.md lists them)" % ", ".join(unknown)
    bad = sorted(n for n, v in features.items() if not (math.isfinite(v) and v >= 0))
    if bad:
        return "features %s must be finite and non-negative" % ", ".join(bad)
    if not roofline.predict(features, constants).seconds > 0:
        return "the features predict no time at all (launch_s and every other feature are 0)"
    return None


Refit = collections.namedtuple("Refit", "calibration error_before error_after")


def refit(measurements, held_out=(), calibration=None, version=None):
    """Refit(the Calibration refitted to (features, seconds) pairs and named `version` (the starting
    one's + "+refit" when None), prediction_error on `held_out` (the measurements when empty) under the
    starting constants, and under the refitted ones). Starts from `calibration` (the default file when None)."""
    calibration = calibration or load()
    judged = list(held_out) or list(measurements)
    fitted = calibration.updated(fit(measurements, calibration), version or calibration.version + "+refit")
    return Refit(fitted, prediction_error(judged, calibration.constants), prediction_error(judged, fitted.constants))
