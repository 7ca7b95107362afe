"""Printers for synchronization: mbarrier init/arrive/expect_tx/wait, named barriers, fences.

Ring slots and wait parities of a BarrierRef's `round` follow compiler/ir/phases.py
(the one derivation, which the verifier checks against): slot = round % count, and a
wait waits parity (round / count + lag) % 2, lag being 1 on a pipeline's `empty`
barrier (a fresh slot counts as released).
"""

from compiler.ir import phases
from compiler.lower.context import LoweringError
from compiler.lower.op_printers import printer


def barrier_pointer(em, ref, path):
    """C++ pointer to the mbarrier a BarrierRef names (its slot derived from index or round)."""
    if ref.barrier not in em.ctx.mbarriers:
        raise LoweringError(path, "unknown mbarrier %r" % ref.barrier)
    _, decl = em.ctx.mbarriers[ref.barrier]
    count = max(1, decl.count)
    which = ref.WhichOneof("slot")
    if which == "index":
        return "(bar_%s + %s)" % (ref.barrier, em.expr(ref.index))
    if which == "round":
        return "(bar_%s + (%s) %% %d)" % (ref.barrier, em.expr(ref.round), count) if count > 1 else "bar_%s" % ref.barrier
    return "bar_%s" % ref.barrier


def wait_parity(em, ref, phase, path):
    """C++ parity a wait uses: explicit, or derived from the ring round."""
    if phase is not None:
        return "(%s) & 1" % em.expr(phase)
    if ref.WhichOneof("slot") != "round":
        raise LoweringError(path, "a wait on a barrier addressed by index needs an explicit phase")
    count, lag = phases.ring_terms(em.ctx.kernel, ref.barrier)
    return "((%s) / %d + %d) & 1" % (em.expr(ref.round), count, lag)


@printer("mbarrier_init")
def mbarrier_init(em, op, path):
    if op.barrier not in em.ctx.mbarriers:
        raise LoweringError(path, "unknown mbarrier %r" % op.barrier)
    _, decl = em.ctx.mbarriers[op.barrier]
    em.w.line("for (int i = 0; i < %d; ++i) cake::mbarrier::init(bar_%s + i, %d);" % (max(1, decl.count), op.barrier, decl.arrivals))


@printer("mbarrier_arrive")
def mbarrier_arrive(em, op, path):
    em.w.line("cake::mbarrier::arrive(%s);" % barrier_pointer(em, op.barrier, path))


@printer("mbarrier_expect_tx")
def mbarrier_expect_tx(em, op, path):
    em.w.line("cake::mbarrier::arrive_expect_tx(%s, %du);" % (barrier_pointer(em, op.barrier, path), op.bytes))


@printer("mbarrier_wait")
def mbarrier_wait(em, op, path):
    phase = op.phase if op.HasField("phase") else None
    em.w.line(
        "cake::mbarrier::wait(%s, %s);" % (barrier_pointer(em, op.barrier, path), wait_parity(em, op.barrier, phase, path))
    )


def _named(em, op, path):
    """(hardware id expression, participating threads) of a named-barrier op."""
    if op.barrier not in em.ctx.named_barriers:
        raise LoweringError(path, "unknown named barrier %r" % op.barrier)
    hw_id, decl = em.ctx.named_barriers[op.barrier]
    if op.HasField("index"):
        return "%d + (%s)" % (hw_id, em.expr(op.index)), decl.arrivals
    return str(hw_id), decl.arrivals


@printer("named_barrier_sync")
def named_barrier_sync(em, op, path):
    em.w.line("cake::block::named_sync(%s, %d);" % _named(em, op, path))


@printer("named_barrier_arrive")
def named_barrier_arrive(em, op, path):
    em.w.line("cake::block::named_arrive(%s, %d);" % _named(em, op, path))


_FENCES = {
    1: "cake::fence_proxy_async();",
    2: "cake::mbarrier::fence_init();",
    3: "cake::fence_acq_rel_gpu();",
}


@printer("fence")
def fence(em, op, path):
    if op.kind not in _FENCES:
        raise LoweringError(path, "fence kind not set")
    em.w.line(_FENCES[op.kind])


@printer("block_sync")
def block_sync(em, op, path):
    em.w.line("cake::block::sync();")
