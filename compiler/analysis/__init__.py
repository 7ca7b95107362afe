"""Cost analysis: what a kernel will do on its target and how long it should take.

    report = analyze(kernel)                          # representative shapes, default device
    report = analyze(kernel, {"M": 8192, "N": 8192, "K": 8192}, device="H100-SXM")
    report.predicted_seconds, report.bottleneck, report.stages

`analyze` returns an analysis_pb2.CostReport or raises AnalysisError (a
ValueError) saying which required information is missing or out of range; it
raises nothing else on any Kernel proto. `features` gives the calibration-free
quantities the prediction is made from, to record beside measured times for
calibration.fit. Data: the target database (compiler/targets/targets.json, see
database.py there) and calibration.json (model constants, see calibration); the model
is described in docs/cost_model.md.
"""

from compiler.analysis import calibration as _calibration
from compiler.analysis import cost_model
from compiler.analysis.errors import AnalysisError

__all__ = ["AnalysisError", "analyze", "analyze_with_features", "calibration_from_data", "features"]


def _guarded(fn, *args):
    try:
        return fn(*args)
    except RecursionError:
        raise AnalysisError("kernel nests expressions or ops too deeply to analyze") from None


def analyze(kernel, shapes=None, device=None, calibration=None):
    """The CostReport of `kernel` at `shapes` (name -> int; missing symbols get representative
    values) on `device` (a device name or "target/name"; the target's default when None),
    under `calibration` (a calibration.Calibration; calibration.json when None)."""
    cal = calibration or _calibration.load()
    return _guarded(lambda: cost_model.report(cost_model.measure(kernel, shapes, device), cal))


def analyze_with_features(kernel, shapes=None, device=None, calibration=None):
    """(CostReport, features) of `kernel` (see analyze and features), from one measurement."""
    cal = calibration or _calibration.load()

    def both():
        measured = cost_model.measure(kernel, shapes, device)
        return cost_model.report(measured, cal), dict(measured.features)

    return _guarded(both)


def calibration_from_data(data):
    """A calibration (for analyze's `calibration`) from data in calibration.json's format; ValueError if malformed."""
    return _calibration.parse(data)


def features(kernel, shapes=None, device=None):
    """The pipeline features of `kernel` at `shapes` on `device` (see analyze), for calibration."""
    return dict(_guarded(lambda: cost_model.measure(kernel, shapes, device).features))
