"""The parent side of an evaluation: jobs cross the process boundary, records become verdicts."""

import pickle

from runtime import evaluate, failures
from runtime.timing import TimingConfig

REQUEST = evaluate.EvalRequest(
    ir_hash="0123abcd",
    cubin=b"\x7fELF fake",
    binding="runtime.testing.cheat_bindings:honest",
    contract="runtime.testing.gemv_contract:contract",
    timing=TimingConfig(reps=5),
    label="honest",
)


def test_job_pickles_and_names_the_candidate():
    job = evaluate.job(REQUEST, time_limit_s=5)
    back = pickle.loads(pickle.dumps(job))
    assert back == job and back.task == evaluate.TASK and back.ir_hash == "0123abcd" and back.label == "honest"


def test_outcome_of_a_pool_failure():
    record = {"ok": False, "result": None, "failure": {"kind": failures.TIMEOUT, "message": "no answer", "ir_hash": "0123abcd"}}
    ev = evaluate.outcome(record)
    assert not ev.passed and ev.failure == failures.FailureSignature(failures.TIMEOUT, "no answer", "0123abcd")
    assert ev.check is None and ev.record is record


def test_outcome_of_a_rejected_and_an_admitted_kernel():
    rejected = {
        "ok": True,
        "failure": None,
        "result": {
            "passed": False,
            "failure": {"kind": failures.STALE_RESULT, "message": "case 1 ...", "ir_hash": "0123abcd"},
            "check": {"passed": False},
            "timing": None,
        },
    }
    ev = evaluate.outcome(rejected)
    assert not ev.passed and ev.failure.kind == failures.STALE_RESULT and ev.check == {"passed": False}
    admitted = {"ok": True, "failure": None, "result": {"passed": True, "failure": None, "check": {}, "timing": {"median_ms": 0.01}}}
    ev = evaluate.outcome(admitted)
    assert ev.passed and ev.failure is None and ev.timing["median_ms"] == 0.01
