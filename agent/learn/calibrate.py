"""Cost-model recalibration proposals: constants refitted from measured against predicted times.

The measurements of every run (features recorded at prediction time, measured
medians) are split deterministically into a fitting set and a held-out quarter;
compiler.analysis.calibration.fit refits the constants on the first, and the gate
compares calibration.prediction_error on the held-out set before and after. An
accepted calibration is written to knowledge/calibration.json (the compiler's own
calibration format under "calibration", beside the version and changelog every
knowledge file has), which the agent's compiler port applies.
"""

import hashlib
import json
import os

from compiler.analysis import calibration as cal_mod

from agent.learn import knowledge

MIN_PAIRS = 8
HELD_OUT_EVERY = 4


def current(directory):
    """The agent's calibration (knowledge/calibration.json) or the compiler's default."""
    if os.path.exists(os.path.join(directory, knowledge.CALIBRATION)):
        return cal_mod.parse(knowledge.load(directory, knowledge.CALIBRATION)["calibration"])
    return cal_mod.load()


def split(pairs):
    """(fitting, held-out) halves of (features, seconds) pairs, by a hash of each pair."""
    def key(pair):
        return hashlib.sha256(json.dumps(pair, sort_keys=True).encode()).hexdigest()

    ordered = sorted(pairs, key=key)
    held = ordered[::HELD_OUT_EVERY]
    fit = [p for i, p in enumerate(ordered) if i % HELD_OUT_EVERY]
    return fit, held


def propose(pairs, base):
    """(fitted constants, error before, error after) on held-out pairs, or None with too few pairs."""
    if len(pairs) < MIN_PAIRS:
        return None
    fit_set, held = split(pairs)
    fitted = cal_mod.fit(fit_set, base)
    return fitted, cal_mod.prediction_error(held, base.constants), cal_mod.prediction_error(held, fitted)


def write(directory, base, fitted, summary, evidence):
    """Save the refitted calibration as the next version of knowledge/calibration.json."""
    doc = knowledge.load(directory, knowledge.CALIBRATION)
    name = "agent-%d" % (doc["version"] + 1)
    doc = {**doc, "calibration": base.updated(fitted, version=name).to_json()}
    return knowledge.save(directory, knowledge.CALIBRATION, doc, summary, evidence=evidence)
