"""The oracle's logic on CPU: torch stand-ins for the honest kernel and each value cheat.

The real CUDA cheats run in runtime/cheats_gpu_test.py; these prove that each
cheat's behaviour maps to the right reason kind without a GPU. (The side-stream
cheat needs streams and is covered only on the GPU.)
"""

import dataclasses

import pytest
import torch

from runtime import check, failures
from runtime.testing import gemv_contract

# The cheat suite's contract on a smaller domain (CPU time); the tuned n stays a multiple of 128.
CONTRACT = dataclasses.replace(
    gemv_contract.contract(),
    shapes=({"m": 256, "n": 512}, {"m": 1, "n": 1}, {"m": 7, "n": 33}, {"m": 100, "n": 1000}),
)


def honest(outputs, inputs):
    (y,), (a, x) = outputs, inputs
    torch.mv(a, x, out=y)


def zeros(outputs, inputs):
    outputs[0].zero_()


def writes_nothing(outputs, inputs):
    pass


def writes_half(outputs, inputs):
    (y,), (a, x) = outputs, inputs
    half = y.shape[0] // 2 or 1
    y[:half] = a[:half] @ x


def tuned_shape_only(outputs, inputs):
    (y,), (a, x) = outputs, inputs
    n = a.shape[1] // 128 * 128  # drops the tail, exact when n is a multiple of 128
    y.copy_(a[:, :n] @ x[:n])


def mutates_input(outputs, inputs):
    honest(outputs, inputs)
    inputs[0][0, 0] += 1.0


def nan_on_large(outputs, inputs):
    honest(outputs, inputs)
    outputs[0][(inputs[0].abs() > 1e3).any(dim=1)] = float("nan")


def inf_on_large(outputs, inputs):
    honest(outputs, inputs)
    outputs[0][(inputs[0].abs() > 1e3).any(dim=1)] = float("inf")


def make_cached():
    cache = {}

    def cached(outputs, inputs):
        (y,), (a, x) = outputs, inputs
        if "y" not in cache:
            cache["y"] = a @ x
        y.copy_(cache["y"][: y.shape[0]])

    return cached


def off_by_a_bit(outputs, inputs):
    honest(outputs, inputs)
    outputs[0].mul_(1.001)


@pytest.mark.parametrize(
    "launch, kind",
    [
        (zeros, failures.WRONG_RESULT),
        (off_by_a_bit, failures.WRONG_RESULT),
        (writes_nothing, failures.UNWRITTEN_OUTPUT),
        (writes_half, failures.UNWRITTEN_OUTPUT),
        (tuned_shape_only, failures.SHAPE_GENERALIZATION),
        (mutates_input, failures.INPUT_MUTATED),
        (nan_on_large, failures.NAN_OR_INF),
        (inf_on_large, failures.NAN_OR_INF),
        (make_cached(), failures.STALE_RESULT),
    ],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_cheat_rejected_with_its_reason(launch, kind):
    result = check.check_kernel(CONTRACT, launch, device="cpu")
    assert not result.passed
    assert result.kind == kind, result.message
    assert result.cases[-1].kind == kind and not result.cases[-1].passed


def test_honest_kernel_passes_every_case():
    result = check.check_kernel(CONTRACT, honest, device="cpu")
    assert result.passed, result.message
    assert result.kind is None
    assert len(result.cases) == len(CONTRACT.shapes) * len(CONTRACT.distributions)
    assert {tuple(sorted(c.shape.items())) for c in result.cases} == {tuple(sorted(s.items())) for s in CONTRACT.shapes}


def test_fresh_inputs_every_check_and_replayable_seed():
    a = check.check_kernel(CONTRACT, honest, device="cpu")
    b = check.check_kernel(CONTRACT, honest, device="cpu")
    assert a.seed != b.seed
    replay = check.check_kernel(CONTRACT, nan_on_large, device="cpu", seed=a.seed)
    assert replay.seed == a.seed and replay.cases[0].seed == a.seed


def test_plan_runs_every_distribution_at_the_tuned_shape_first():
    cases = check.plan(CONTRACT)
    n = len(CONTRACT.distributions)
    assert [s for s, _ in cases[:n]] == [CONTRACT.tuned_shape] * n
    assert [d for _, d in cases[:n]] == list(CONTRACT.distributions)


def test_messages_name_the_case_and_the_shape():
    result = check.check_kernel(CONTRACT, tuned_shape_only, device="cpu", seed=7)
    assert "correct at the tuned shape m=256 n=512" in result.message
    assert "seed" in result.message and result.cases[-1].shape != CONTRACT.tuned_shape


def test_shape_failure_message_keeps_underlying_kind():
    result = check.check_kernel(CONTRACT, tuned_shape_only, device="cpu")
    assert failures.WRONG_RESULT in result.message


def test_result_serialises():
    import json

    result = check.check_kernel(CONTRACT, zeros, device="cpu")
    d = json.loads(json.dumps(result.to_dict()))
    assert d["kind"] == failures.WRONG_RESULT and d["cases"][0]["distribution"] == "normal"


def test_exceptions_from_the_kernel_propagate():
    def raises(outputs, inputs):
        raise ValueError("bad launch")

    with pytest.raises(ValueError, match="bad launch"):
        check.check_kernel(CONTRACT, raises, device="cpu")
