"""The cheat suite: which kernel commits which cheat, and the reason the harness must give.

Each entry names a binding in runtime/testing/cheat_bindings.py; `request` turns it
into an evaluation request for the worker pool (runtime/evaluate.py).
"""

import dataclasses
import hashlib
import os

from runtime import evaluate, failures

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cheats", "gemv_cheats.cu")
CONTRACT = "runtime.testing.gemv_contract:contract"


@dataclasses.dataclass(frozen=True)
class Cheat:
    name: str  # the binding's name in cheat_bindings
    expected: object  # the failure kind the harness must report; None for the honest kernel
    what: str

    @property
    def binding(self):
        return "runtime.testing.cheat_bindings:" + self.name


CHEATS = (
    Cheat("honest", None, "computes y = A @ x on the current stream"),
    Cheat("cached", failures.STALE_RESULT, "returns its first result forever"),
    Cheat("writes_nothing", failures.UNWRITTEN_OUTPUT, "writes nothing"),
    Cheat("zeros", failures.WRONG_RESULT, "returns zeros"),
    Cheat("tuned_shape_only", failures.SHAPE_GENERALIZATION, "drops the n % 128 tail: right only at the tuned n"),
    Cheat("side_stream", failures.SIDE_STREAM, "launches on its own stream so the caller's stream misses it"),
    Cheat("mutates_input", failures.INPUT_MUTATED, "zeroes A's rows after reading them"),
    Cheat("nan_on_large", failures.NAN_OR_INF, "writes NaN for rows with any |a| > 1e3"),
    Cheat("illegal_address", failures.ILLEGAL_ADDRESS, "stores through a pointer into the unmapped first page"),
    Cheat("hang", failures.TIMEOUT, "spins on a flag nobody sets"),
)
BY_NAME = {c.name: c for c in CHEATS}


def ir_hash(cheat):
    """The candidate's identity: its source and kernel (these kernels have no CAKE IR)."""
    with open(SOURCE, "rb") as f:
        return hashlib.sha256(f.read() + b"\0" + cheat.name.encode()).hexdigest()[:16]


def request(cheat, cubin, timing=None, seed=None):
    """An EvalRequest evaluating `cheat` from the suite's compiled `cubin`."""
    return evaluate.EvalRequest(
        ir_hash=ir_hash(cheat),
        cubin=cubin,
        binding=cheat.binding,
        contract=CONTRACT,
        timing=timing,
        seed=seed,
        label=cheat.name,
    )
