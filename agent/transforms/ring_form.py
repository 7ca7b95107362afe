"""The single-role TMA ring: the one shape `loads_to_tma` writes and the transformations that build on it read.

A compute role that fills its own stage ring (producer and only consumer of one pipeline):

    if (thread == 0) { mbarrier_init ...; fence mbarrier_init }       the prologue
    block_sync
    ...
    if (thread == 0) { expect_tx RF[0]; tma_load(src, R, RF[0]) }    a resident tile R, one-shot barrier RF
    loop V_fill in 0 .. S - 1 {                                        prefetch (S > 1 only)
      if (V_fill < E) { if (thread == 0) { ISSUE(V_fill) } } }
    mbarrier_wait RF[0] phase 0
    loop V in 0 .. E {
      if (thread == 0 && V + (S - 1) < E) { ISSUE(V + (S - 1)) }       (S = 1: if (thread == 0) { ISSUE(V) })
      mbarrier_wait full@round(V)
      ... compute: the ring's regions at stage V % S ...
      fence proxy_async                                                its generic reads done before the refill
      mbarrier_arrive empty@round(V)                                   every thread, after its last read
    }

ISSUE(r) = wait empty@round(r); expect_tx full@round(r) BYTES; tma_load(src(r), region@(r % S), full@round(r)) ...
Thread 0 refills the slot the previous round released: the one whose every thread has
arrived on `empty`, so a refill never overtakes a read; S - 1 rounds are in flight. The
fence orders the compute's generic-proxy reads of the stage (ldmatrix, ld.shared) before
the TMA refill, an async-proxy write (CAKE-DATA-011); a ring without it is matched too.

`build_role_ring` writes the shape from a description (`Stream`, `Resident`) and
`match` reads it back (`SingleRoleRing`), so `split_producer`, `ring_depth` and
`tma_to_loads` edit rings they can recognise exactly.
"""

import dataclasses

from cake.ir.v1 import ir_pb2

from agent.ir_edit import (
    NotApplicable,
    add,
    const,
    copy_message,
    equal,
    less,
    logical_and,
    mod,
    region_bytes,
    replace_expr,
    substitute,
    sym,
)

ISSUER = equal(sym("thread"), const(0))
ROUND = "__round"  # the placeholder round of an ISSUE template


@dataclasses.dataclass
class Stream:
    """A tile loaded every round: its source as a function of the round symbol ROUND, and its region."""

    src: object  # ir_pb2.GlobalRef with ROUND in its coords
    region: str


@dataclasses.dataclass
class Resident:
    """A tile loaded once before the loop: its source, its region and its one-shot barrier."""

    src: object  # ir_pb2.GlobalRef
    region: str
    barrier: str


def issue_ops(streams, regions, full, empty, stages, round_expr):
    """The ops of ISSUE(round_expr): wait for the slot, expect the bytes, one TMA load per stream."""
    nbytes = sum(region_bytes(regions[s.region]) for s in streams)
    ops = [
        ir_pb2.Op(mbarrier_wait=ir_pb2.MbarrierWait(barrier=ir_pb2.BarrierRef(barrier=empty, round=copy_message(round_expr)))),
        ir_pb2.Op(mbarrier_expect_tx=ir_pb2.MbarrierExpectTx(
            barrier=ir_pb2.BarrierRef(barrier=full, round=copy_message(round_expr)), bytes=nbytes)),
    ]
    for s in streams:
        src = copy_message(s.src)
        substitute(src, {ROUND: round_expr})
        ops.append(ir_pb2.Op(tma_load=ir_pb2.TmaLoad(
            src=src, dst=ir_pb2.TileRef(region=s.region, stage=mod(copy_message(round_expr), const(stages))),
            barrier=ir_pb2.BarrierRef(barrier=full, round=copy_message(round_expr)))))
    return ops


def resident_issue(res, regions):
    """if (thread == 0) { expect_tx RF[0] bytes; tma_load(src, R, RF[0]) }."""
    nbytes = region_bytes(regions[res.region])
    ref = ir_pb2.BarrierRef(barrier=res.barrier, index=const(0))
    return ir_pb2.Op(branch=ir_pb2.Branch(cond=copy_message(ISSUER), then_body=[
        ir_pb2.Op(mbarrier_expect_tx=ir_pb2.MbarrierExpectTx(barrier=copy_message(ref), bytes=nbytes)),
        ir_pb2.Op(tma_load=ir_pb2.TmaLoad(src=copy_message(res.src), dst=ir_pb2.TileRef(region=res.region),
                                          barrier=copy_message(ref))),
    ]))


def resident_wait(res):
    return ir_pb2.Op(mbarrier_wait=ir_pb2.MbarrierWait(
        barrier=ir_pb2.BarrierRef(barrier=res.barrier, index=const(0)), phase=const(0)))


def fill_loop(var, end, streams, regions, full, empty, stages):
    """loop var in 0 .. stages - 1 { if (var < end) { if (thread == 0) { ISSUE(var) } } }; None for one stage."""
    if stages == 1:
        return None
    inner = ir_pb2.Op(branch=ir_pb2.Branch(cond=copy_message(ISSUER),
                                           then_body=issue_ops(streams, regions, full, empty, stages, sym(var))))
    guard = ir_pb2.Op(branch=ir_pb2.Branch(cond=less(sym(var), copy_message(end)), then_body=[inner]))
    return ir_pb2.Op(loop=ir_pb2.Loop(var=var, start=const(0), end=const(stages - 1), body=[guard]))


def refill(var, end, streams, regions, full, empty, stages):
    """The in-loop refill of round var + (stages - 1), issued by thread 0."""
    lag = stages - 1
    if lag == 0:
        return ir_pb2.Op(branch=ir_pb2.Branch(cond=copy_message(ISSUER), then_body=issue_ops(
            streams, regions, full, empty, stages, sym(var))))
    ahead = add(sym(var), const(lag))
    cond = logical_and(copy_message(ISSUER), less(copy_message(ahead), copy_message(end)))
    return ir_pb2.Op(branch=ir_pb2.Branch(cond=cond, then_body=issue_ops(streams, regions, full, empty, stages, ahead)))


def release(empty, var):
    """The round's release: fence proxy_async (its generic reads of the stage before the TMA refill), then
    every thread's arrive on `empty`."""
    return [ir_pb2.Op(fence=ir_pb2.Fence(kind=ir_pb2.FENCE_KIND_PROXY_ASYNC)),
            ir_pb2.Op(mbarrier_arrive=ir_pb2.MbarrierArrive(barrier=ir_pb2.BarrierRef(barrier=empty, round=sym(var))))]


def _release_length(body):
    """How many ops of the loop body end with the release: 2 with its fence, 1 without."""
    if len(body) > 1 and body[-2].WhichOneof("kind") == "fence" and body[-2].fence.kind == ir_pb2.FENCE_KIND_PROXY_ASYNC:
        return 2
    return 1


def init_prologue(barriers):
    """if (thread == 0) { mbarrier_init each; fence mbarrier_init }, then block_sync."""
    inits = [ir_pb2.Op(mbarrier_init=ir_pb2.MbarrierInit(barrier=b)) for b in barriers]
    inits.append(ir_pb2.Op(fence=ir_pb2.Fence(kind=ir_pb2.FENCE_KIND_MBARRIER_INIT)))
    return [ir_pb2.Op(branch=ir_pb2.Branch(cond=copy_message(ISSUER), then_body=inits)),
            ir_pb2.Op(block_sync=ir_pb2.BlockSync())]


@dataclasses.dataclass
class SingleRoleRing:
    """A matched single-role ring: where its parts sit in the role's body."""

    role: object  # ir_pb2.Role (of the kernel matched)
    pipeline: object  # ir_pb2.Pipeline
    loop_index: int  # of the ring's loop V in role.body
    fill_index: object  # of the prefetch loop, or None (one stage)
    lag: int  # rounds issued ahead: stages - 1
    streams: list  # [Stream] with ROUND in their sources
    residents: list  # [(index in role.body of the resident issue, Resident)]

    @property
    def loop(self):
        return self.role.body[self.loop_index].loop

    @property
    def compute(self):
        """The loop's compute ops: after the refill and the wait, before the release."""
        body = self.loop.body
        return body[2:len(body) - _release_length(body)]


def _issue_template(ops, full, empty, round_expr):
    """[Stream] of an ISSUE block whose round is `round_expr`, or None when the block is not one."""
    if len(ops) < 3:
        return None
    wait, expect = ops[0], ops[1]
    if wait.WhichOneof("kind") != "mbarrier_wait" or wait.mbarrier_wait.barrier.barrier != empty:
        return None
    if expect.WhichOneof("kind") != "mbarrier_expect_tx" or expect.mbarrier_expect_tx.barrier.barrier != full:
        return None
    if wait.mbarrier_wait.barrier.round != round_expr:
        return None
    streams = []
    for op in ops[2:]:
        if op.WhichOneof("kind") != "tma_load" or op.tma_load.barrier.barrier != full:
            return None
        src = copy_message(op.tma_load.src)
        replace_expr(src, round_expr, sym(ROUND))
        streams.append(Stream(src, op.tma_load.dst.region))
    return streams


def match(kernel, pipeline):
    """The SingleRoleRing of `pipeline` in `kernel`; NotApplicable (why) when it is not in the single-role shape."""
    if len(pipeline.consumers) != 1 or pipeline.consumers[0] != pipeline.producer:
        raise NotApplicable("ring %r has a producer role of its own" % pipeline.name)
    role = next((r for r in kernel.roles if r.name == pipeline.producer), None)
    if role is None:
        raise NotApplicable("ring %r names no role" % pipeline.name)
    body = role.body
    loop_index = None
    for i, op in enumerate(body):
        if op.WhichOneof("kind") == "loop" and any(
                o.WhichOneof("kind") == "mbarrier_wait" and o.mbarrier_wait.barrier.barrier == pipeline.full
                for o in op.loop.body):
            loop_index = i
            break
    if loop_index is None:
        raise NotApplicable("ring %r: no loop of its role waits on %r" % (pipeline.name, pipeline.full))
    loop = body[loop_index].loop
    v = sym(loop.var)
    lag = pipeline.stages - 1
    if not loop.body or loop.body[0].WhichOneof("kind") != "branch":
        raise NotApplicable("ring %r: its loop does not start with the refill" % pipeline.name)
    ahead = v if lag == 0 else add(v, const(lag))
    streams = _issue_template(list(loop.body[0].branch.then_body), pipeline.full, pipeline.empty, ahead)
    last = loop.body[-1]
    if streams is None or last.WhichOneof("kind") != "mbarrier_arrive" or last.mbarrier_arrive.barrier.barrier != \
            pipeline.empty or last.mbarrier_arrive.barrier.round != v:
        raise NotApplicable("ring %r is not in the single-role shape (refill first, release last)" % pipeline.name)
    fill_index = None
    if lag:
        for i in range(loop_index):
            op = body[i]
            if op.WhichOneof("kind") == "loop" and op.loop.end == const(lag) and len(op.loop.body) == 1:
                fill_index = i
        if fill_index is None:
            raise NotApplicable("ring %r: no prefetch loop before its loop" % pipeline.name)
    residents = []
    for i in range(loop_index):
        op = body[i]
        if op.WhichOneof("kind") != "branch" or op.branch.cond != ISSUER or len(op.branch.then_body) != 2:
            continue
        expect, load = op.branch.then_body
        if expect.WhichOneof("kind") == "mbarrier_expect_tx" and load.WhichOneof("kind") == "tma_load":
            residents.append((i, Resident(copy_message(load.tma_load.src), load.tma_load.dst.region,
                                          load.tma_load.barrier.barrier)))
    return SingleRoleRing(role, pipeline, loop_index, fill_index, lag, streams, residents)


def single_role_rings(kernel):
    """Every pipeline of `kernel` in the single-role shape, matched."""
    out = []
    for p in kernel.pipelines:
        try:
            out.append(match(kernel, p))
        except NotApplicable:
            continue
    return out
