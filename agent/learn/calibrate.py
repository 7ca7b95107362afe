"""Cost-model recalibration proposals: constants refitted from measured against predicted times.

The measurements of every run (features recorded at prediction time, measured
medians) are split deterministically into a fitting set and a held-out quarter; the
compiler service refits the constants on the first (Calibrate, through the agent's
compiler port: the formula and the fit are the compiler's, compiler/analysis) and
reports the prediction error on the held-out set before and after, which the gate
compares. An accepted calibration becomes the next version of calibration.json (the
compiler's own calibration format under "calibration", beside the version and
changelog every knowledge file has) in the learned store, which the agent's compiler
port applies.
"""

import hashlib
import json

from agent.learn import knowledge

MIN_PAIRS = 8
HELD_OUT_EVERY = 4


def current_data(source):
    """The agent's refitted calibration as data (what the compiler port sends), None when it has none
    (the compiler's own applies)."""
    return knowledge.of(source).load(knowledge.CALIBRATION).get("calibration")


def next_version(kb):
    """The name the next accepted calibration of `kb` gets."""
    return "agent-%d" % (kb.load(knowledge.CALIBRATION)["version"] + 1)


def split(pairs):
    """(fitting, held-out) halves of (features, seconds) pairs, by a hash of each pair."""
    def key(pair):
        return hashlib.sha256(json.dumps(pair, sort_keys=True).encode()).hexdigest()

    ordered = sorted(pairs, key=key)
    held = ordered[::HELD_OUT_EVERY]
    fit = [p for i, p in enumerate(ordered) if i % HELD_OUT_EVERY]
    return fit, held


def propose(port, pairs, base, version):
    """The compiler port's Refit of the constants of `base` (a calibration as data, None for the compiler's
    own) to the fitting part of (features, seconds) `pairs`, judged on the held-out part and named `version`;
    None with too few pairs. Refused when the service refuses the pairs."""
    if len(pairs) < MIN_PAIRS:
        return None
    fit_set, held = split(pairs)
    return port.calibrate(fit_set, held, base, version)


def write(kb, refit, summary, evidence):
    """Record a Refit's calibration as the next version of calibration.json in `kb`'s learned store."""
    return kb.accept(knowledge.CALIBRATION, {"set": {"calibration": refit.calibration}}, summary, evidence=evidence)
