"""Ring slots and mbarrier wait parities: THE derivation (IR semantics), shared by the verifier and lowering.

A BarrierRef by `round` r names slot r % depth of its barrier array, depth being
the array's count (which equals its pipeline's stages; the verifier's
CAKE-PIPE-001 checks). Each slot completes phases 0, 1, 2, ...; round r is the
(r / depth)-th use of its slot. try_wait.parity(p) succeeds once the phase with
parity p that was current or immediately preceding has completed, so:

- a wait by round on any barrier other than a pipeline's `empty` waits for
  completion n = r / depth, parity n % 2 (the producer's fill of round r);
- a wait by round on a pipeline's `empty` barrier waits for completion
  n = r / depth - 1, parity (r / depth + 1) % 2: the consumers' release of
  round r - depth. For r < depth that is completion -1, which a fresh barrier
  reports as done: a fresh slot counts as released.

Arrivals, expect_tx and TMA bytes addressed by round r contribute to
completion r / depth of their slot.

The verifier evaluates these on values; lowering prints them as C++ from
`ring_terms` (slot `(round) % depth`, parity `((round) / depth + lag) & 1`).
"""

from cake.ir.v1 import ir_pb2

OP = ir_pb2.BinaryOp


def ring_terms(kernel, barrier_name):
    """(depth, lag) of a barrier array: waits by round r wait for completion r / depth - lag.

    depth is the array's count (1 when unset or the name is unknown); lag is 1 for a
    pipeline's `empty` array (a fresh slot counts as released), else 0.
    """
    depth, lag = 1, 0  # (loops over slices: the verifier's model asks this of every barrier reference)
    for b in kernel.barriers[:]:
        if b.name == barrier_name:
            depth = max(1, b.count)
            break
    for p in kernel.pipelines[:]:
        if p.empty == barrier_name:
            lag = 1
            break
    return depth, lag


def ring_slot(round_value, depth):
    """The slot of ring round `round_value` in an array of `depth` barriers or stages."""
    return round_value % depth


def contribution_phase(round_value, depth):
    """The completion index an arrival (or expect_tx, or TMA bytes) of round `round_value` belongs to."""
    return round_value // depth


def wait_completion(round_value, depth, lag):
    """The completion index a wait by round `round_value` waits for (-1: the fresh, already-released state)."""
    return round_value // depth - lag


def wait_parity(kernel, round_value, barrier_name):
    """The parity (0 or 1) a wait by round `round_value` on barrier array `barrier_name` waits on."""
    depth, lag = ring_terms(kernel, barrier_name)
    return wait_completion(round_value, depth, lag) % 2


def wait_parity_expr(kernel, round_expr, barrier_name):
    """The same parity as an IR expression of the round: (round / depth + lag) % 2."""
    depth, lag = ring_terms(kernel, barrier_name)

    def binary(op, lhs, rhs):
        return ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=op, lhs=lhs, rhs=rhs))

    n = binary(OP.BINARY_OP_DIV, round_expr, ir_pb2.Expr(int=depth))
    if lag:
        n = binary(OP.BINARY_OP_ADD, n, ir_pb2.Expr(int=lag))
    return binary(OP.BINARY_OP_MOD, n, ir_pb2.Expr(int=2))
