"""What an evaluator says about one compiled candidate."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Measured:
    """A passed-and-timed candidate (passed, median_s) or a rejected one (failure kind and message)."""

    passed: bool
    median_s: float = None
    p10_s: float = None
    p90_s: float = None
    device_s: float = 0.0  # GPU work this evaluation cost (its worker's elapsed time)
    kind: str = ""  # a runtime.failures kind when not passed
    message: str = ""
    detail: dict = dataclasses.field(default_factory=dict)
    record: dict = None  # the worker pool's record of the evaluation, when a pool ran it (for evaluations.jsonl)
