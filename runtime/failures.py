"""Why a candidate kernel was rejected: reason kinds, failure signatures, exception triage.

Every rejection the harness reports carries one reason kind from KINDS, so the agent
learns from a stable vocabulary. Exceptions raised while a candidate runs are sorted
here into kinds, and into whether they poisoned the CUDA context (then the worker
process that saw them must die and be replaced).
"""

import dataclasses

# Value failures, found by the correctness oracle (runtime/check.py).
WRONG_RESULT = "wrong_result"  # outputs written, finite, and outside the contract's metric
UNWRITTEN_OUTPUT = "unwritten_output"  # some output element still holds the poison written before launch
NAN_OR_INF = "nan_or_inf"  # a NaN or Inf in an output: never acceptable
INPUT_MUTATED = "input_mutated"  # an input differs, bit for bit, from its copy taken before the call
SHAPE_GENERALIZATION = "shape_generalization"  # right at the tuned shape, wrong at another shape of the domain
STALE_RESULT = "stale_result"  # returns an earlier call's result for new inputs (caching)
SIDE_STREAM = "side_stream"  # writes its outputs on work not ordered after torch's current stream
# Process-level failures, found by the worker pool (runtime/pool.py).
TIMEOUT = "timeout"  # did not finish within the time limit; the worker was killed
ILLEGAL_ADDRESS = "illegal_address"  # CUDA reported an illegal memory access
CUDA_ERROR = "cuda_error"  # another CUDA error that poisons the context (launch failure, misaligned access, ...)
CRASH = "crash"  # the worker process died without reporting (signal, abort, exit)
EXCEPTION = "exception"  # a Python exception from the candidate or its launch code; the worker survives

KINDS = (
    WRONG_RESULT,
    UNWRITTEN_OUTPUT,
    NAN_OR_INF,
    INPUT_MUTATED,
    SHAPE_GENERALIZATION,
    STALE_RESULT,
    SIDE_STREAM,
    TIMEOUT,
    ILLEGAL_ADDRESS,
    CUDA_ERROR,
    CRASH,
    EXCEPTION,
)

MESSAGE_LIMIT = 2000  # characters kept of a failure message: enough to diagnose, small in a log


@dataclasses.dataclass(frozen=True)
class FailureSignature:
    """What the agent learns from one rejected candidate."""

    kind: str
    message: str
    ir_hash: str

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError("unknown failure kind %r (known: %s)" % (self.kind, ", ".join(KINDS)))

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(kind=d["kind"], message=d["message"], ir_hash=d["ir_hash"])


def truncate(text, limit=MESSAGE_LIMIT):
    """`text` cut to `limit` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 15] + " ...[truncated]"


# Driver error names (CUresult) that leave the context unusable: every later call fails.
_STICKY_DRIVER_ERRORS = {
    "CUDA_ERROR_ILLEGAL_ADDRESS": ILLEGAL_ADDRESS,
    "CUDA_ERROR_LAUNCH_FAILED": CUDA_ERROR,
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": CUDA_ERROR,
    "CUDA_ERROR_MISALIGNED_ADDRESS": CUDA_ERROR,
    "CUDA_ERROR_INVALID_ADDRESS_SPACE": CUDA_ERROR,
    "CUDA_ERROR_INVALID_PC": CUDA_ERROR,
    "CUDA_ERROR_HARDWARE_STACK_ERROR": CUDA_ERROR,
    "CUDA_ERROR_ASSERT": CUDA_ERROR,
    "CUDA_ERROR_LAUNCH_TIMEOUT": CUDA_ERROR,
    "CUDA_ERROR_ECC_UNCORRECTABLE": CUDA_ERROR,
    "CUDA_ERROR_CONTEXT_IS_DESTROYED": CUDA_ERROR,
}


def classify_exception(exc):
    """(kind, context_poisoned) for an exception raised while a candidate ran.

    Two sources: runtime.loader.CudaError (driver API, carries the CUresult name in
    `code`) and torch's RuntimeError/AcceleratorError ("CUDA error: <runtime text>").
    Any torch-reported CUDA error is treated as poisoning the context: after an
    asynchronous kernel fault the context cannot be trusted, and replacing a worker
    costs seconds, while trusting a broken one corrupts every later measurement.
    """
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code.startswith("CUDA_ERROR_"):
        kind = _STICKY_DRIVER_ERRORS.get(code)
        return (kind, True) if kind else (EXCEPTION, False)
    text = str(exc).lower()
    if "illegal memory access" in text or "illegal address" in text:
        return ILLEGAL_ADDRESS, True
    if "cuda error" in text or "cudaerror" in text or "device-side assert" in text:
        return CUDA_ERROR, True
    return EXCEPTION, False
