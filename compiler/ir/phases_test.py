"""Ring slots and wait parities follow the Pipeline comment of ir.proto, as value and as IR expression."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir import phases
from compiler.ir.builder import KernelBuilder
from compiler.ir.expr import evaluate


def ring(stages=2):
    """Just the declarations of a `stages`-deep ring: what the derivation reads."""
    k = KernelBuilder("ring", target="sm_90a")
    s = k.shared("s", "f32", [64], stages=stages)
    full = k.mbarrier("full", arrivals=1, count=stages, tx_bytes=256)
    empty = k.mbarrier("empty", arrivals=32, count=stages)
    k.pipeline("ring", stages, full, empty, [s], producer="load", consumers=["use"])
    return k.build()


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_full_waits_parity_of_its_fill_and_empty_one_phase_behind(stages):
    k = ring(stages=stages)
    for r in range(4 * stages + 3):
        assert phases.wait_parity(k, r, "full") == (r // stages) % 2
        assert phases.wait_parity(k, r, "empty") == (r // stages + 1) % 2
        assert phases.ring_slot(r, stages) == r % stages
        for name in ("full", "empty"):
            expr = phases.wait_parity_expr(k, ir_pb2.Expr(sym="r"), name)
            assert evaluate(expr, {"r": r}) == phases.wait_parity(k, r, name)


def test_a_fresh_slot_counts_as_released():
    depth, lag = phases.ring_terms(ring(stages=3), "empty")
    assert (depth, lag) == (3, 1)
    assert phases.wait_completion(0, depth, lag) == -1  # passes on a fresh barrier (phase 0 in progress)
    assert phases.contribution_phase(4, depth) == 1


def test_unknown_barrier_has_depth_one_and_no_lag():
    assert phases.ring_terms(ring(), "nope") == (1, 0)
