"""The compiler service's per-request limits: input size, time per stage, memory.

Each limit is a server flag (main.py; defaults here), and exceeding one has its own
status (docs/service.md):

    program bytes    --max-program-bytes   INVALID_ARGUMENT: BadRequest on the program's field, ErrorInfo PROGRAM_TOO_LARGE
    parse seconds    --parse-seconds       RESOURCE_EXHAUSTED: ErrorInfo PARSE_TIME_LIMIT (and loading
                                           rules given as data: RULES_TIME_LIMIT)
    verify seconds   --verify-seconds      RESOURCE_EXHAUSTED: ErrorInfo VERIFY_TIME_LIMIT (each of the
                                           verification, the cost analysis, lowering and a refit of
                                           the cost model: VERIFY_, ANALYZE_, LOWER_, CALIBRATE_)
    nvcc seconds     --nvcc-seconds        RESOURCE_EXHAUSTED: ErrorInfo NVCC_TIME_LIMIT
    worker memory    --worker-memory-mb    RESOURCE_EXHAUSTED: ErrorInfo MEMORY_LIMIT

A stage's clock starts when the stage does (waiting for a worker or for an nvcc slot is
not counted), and a call's own deadline applies as well: whichever comes first ends
the work.
"""

import dataclasses

MIB = 1 << 20


@dataclasses.dataclass(frozen=True)
class Limits:
    # The largest Program (its serialized size; IR text counts its UTF-8 bytes).
    program_bytes: int = 4 * MIB
    # Parsing IR text, or decoding kernel bytes (or loading rules given as data).
    parse_seconds: float = 10.0
    # Verification; the cost analysis, lowering and a refit of the cost model get as long each.
    verify_seconds: float = 30.0
    # One nvcc run: a guard against a runaway, not a budget (the slowest corpus kernel, KNN top-k,
    # took 109 s cold on the 2-core development machine under a load average of 7).
    nvcc_seconds: float = 300.0
    # The address space of one worker process: what one request's parse, verification and lowering may use.
    worker_memory_bytes: int = 2048 * MIB

    def stage_seconds(self, stage):
        """The time limit of a worker stage ("parse", "rules", "verify", "analyze", "lower", "calibrate")."""
        return self.parse_seconds if stage in ("parse", "rules") else self.verify_seconds


# The flag that sets each stage's limit, for the messages that name it.
STAGE_FLAGS = {
    "parse": "--parse-seconds",
    "rules": "--parse-seconds",
    "verify": "--verify-seconds",
    "analyze": "--verify-seconds",
    "lower": "--verify-seconds",
    "calibrate": "--verify-seconds",
    "nvcc": "--nvcc-seconds",
}
