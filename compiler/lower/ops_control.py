"""Printers for structured control flow: loop (serial and persistent) and branch."""

from cake.ir.v1 import ir_pb2

from compiler.lower.cexpr import ident, nonneg
from compiler.lower.context import LoweringError
from compiler.lower.op_printers import printer


@printer("loop")
def loop(em, op, path):
    if not op.var:
        raise LoweringError(path, "loop has no variable")
    var = ident(op.var)
    start = em.expr(op.start) if op.HasField("start") else "0"
    end = em.expr(op.end)
    step = em.expr(op.step) if op.HasField("step") else "1"
    positive = (not op.HasField("step")) or nonneg(op.step, em.scope)
    counts_up = positive and ((not op.HasField("start")) or nonneg(op.start, em.scope))
    saved = dict(em.scope)
    em.scope[op.var] = counts_up
    if op.unroll:
        em.w.line("#pragma unroll %d" % op.unroll)
    if op.kind == ir_pb2.LOOP_KIND_PERSISTENT:
        if not op.counter:
            raise LoweringError(path, "a persistent loop needs a counter variable")
        em.scope[op.counter] = True
        counter = ident(op.counter)
        header = "for (int %s = %s + int(blockIdx.x), %s = 0; %s < %s; %s += int(gridDim.x), ++%s)" % (
            var, start, counter, var, end, var, counter)
    else:
        header = "for (int %s = %s; %s < %s; %s += %s)" % (var, start, var, end, var, step)
    entry = None if em.inflight is None else list(em.inflight)
    with em.w.block(header):
        em.ops(op.body, path + ".body")
    if em.inflight != entry:
        em.inflight = None  # the in-flight wgmma groups differ between iterations
    em.scope = saved


@printer("branch")
def branch(em, op, path):
    entry = None if em.inflight is None else list(em.inflight)
    with em.w.block("if (%s)" % em.expr(op.cond)):
        em.ops(op.then_body, path + ".then_body")
    after_then = em.inflight
    em.inflight = None if entry is None else list(entry)
    if len(op.else_body):
        with em.w.block("else"):
            em.ops(op.else_body, path + ".else_body")
    if after_then != em.inflight:
        em.inflight = None  # the arms leave different wgmma groups in flight
