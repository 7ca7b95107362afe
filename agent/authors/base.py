"""The author interface: given a parent candidate and what the compiler said about it, propose children.

An author's `propose(parent, ctx)` returns Proposals (possibly none). The search
author applies tactics; the LLM author rewrites the IR text. The loop dedupes,
records and assesses whatever comes back, so every author is judged the same way.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Proposal:
    kernel: object  # ir_pb2.Kernel
    genome: object  # genome.Genome, or None for IR written directly
    tactic: str  # the move's name, credited with the child's outcome
    author: str


@dataclasses.dataclass(frozen=True)
class Parent:
    """A candidate to build on, with the compiler's view of it."""

    id: int
    kernel: object
    genome: object
    ir_text: str
    fitness_s: float
    diagnostics: list  # its diagnostics as stored (dicts: severity, diag_id, path, message, fix_hint)
    report: object  # analysis_pb2.CostReport or None


@dataclasses.dataclass
class Context:
    rng: object  # random.Random
    is_new: object  # kernel -> bool: not seen in this run
