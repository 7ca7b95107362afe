"""Cost-model recalibration proposals: constants refitted from measured against predicted times.

The measurements of every run (features recorded at prediction time, measured
medians) are split deterministically into a fitting set and a held-out quarter;
compiler.analysis.calibration.fit refits the constants on the first, and the gate
compares calibration.prediction_error on the held-out set before and after. An
accepted calibration becomes the next version of calibration.json (the compiler's own
calibration format under "calibration", beside the version and changelog every
knowledge file has) in the learned store, which the agent's compiler port applies.
"""

import hashlib
import json

from compiler.analysis import calibration as cal_mod

from agent.learn import knowledge

MIN_PAIRS = 8
HELD_OUT_EVERY = 4


def current(source):
    """The agent's calibration (calibration.json of `source`, a Knowledge or a directory) or the compiler's default."""
    data = current_data(source)
    return cal_mod.parse(data) if data is not None else cal_mod.load()


def current_data(source):
    """The agent's refitted calibration as data (what the compiler port sends), None when it has none."""
    return knowledge.of(source).load(knowledge.CALIBRATION).get("calibration")


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


def write(kb, base, fitted, summary, evidence):
    """Record the refitted calibration as the next version of calibration.json in `kb`'s learned store."""
    name = "agent-%d" % (kb.load(knowledge.CALIBRATION)["version"] + 1)
    patch = {"set": {"calibration": base.updated(fitted, version=name).to_json()}}
    return kb.accept(knowledge.CALIBRATION, patch, summary, evidence=evidence)
