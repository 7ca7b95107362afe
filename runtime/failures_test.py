"""Failure kinds, signatures and the triage of exceptions."""

import pytest

from runtime import failures


class FakeCudaError(RuntimeError):
    """Shaped like runtime.loader.CudaError: the CUresult name in `code`."""

    def __init__(self, code):
        super().__init__("cuSomething failed: %s" % code)
        self.code = code


@pytest.mark.parametrize(
    "exc, kind, poisoned",
    [
        (FakeCudaError("CUDA_ERROR_ILLEGAL_ADDRESS"), failures.ILLEGAL_ADDRESS, True),
        (FakeCudaError("CUDA_ERROR_LAUNCH_FAILED"), failures.CUDA_ERROR, True),
        (FakeCudaError("CUDA_ERROR_MISALIGNED_ADDRESS"), failures.CUDA_ERROR, True),
        (FakeCudaError("CUDA_ERROR_INVALID_VALUE"), failures.EXCEPTION, False),
        (RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors ..."), failures.ILLEGAL_ADDRESS, True),
        (RuntimeError("CUDA error: unspecified launch failure"), failures.CUDA_ERROR, True),
        (RuntimeError("CUDA error: device-side assert triggered"), failures.CUDA_ERROR, True),
        (ValueError("A must be contiguous"), failures.EXCEPTION, False),
        (RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"), failures.EXCEPTION, False),
    ],
)
def test_classify_exception(exc, kind, poisoned):
    assert failures.classify_exception(exc) == (kind, poisoned)


def test_signature_round_trips_and_rejects_unknown_kinds():
    sig = failures.FailureSignature(failures.TIMEOUT, "no answer in 5 s", "abc123")
    assert failures.FailureSignature.from_dict(sig.to_dict()) == sig
    with pytest.raises(ValueError, match="unknown failure kind"):
        failures.FailureSignature("slow", "", "abc123")


def test_truncate_marks_the_cut():
    assert failures.truncate("x" * 10) == "x" * 10
    cut = failures.truncate("x" * 5000, limit=100)
    assert len(cut) == 100 and cut.endswith("[truncated]")
