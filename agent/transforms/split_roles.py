"""Split a compute role that fills its own TMA ring into a producer warpgroup and a consumer role.

Precondition: a single-role kernel whose compute role fills a ring in the single-role
shape (agent/transforms/ring_form.py: thread 0 initialises the barriers and refills
slots S - 1 rounds ahead; every thread waits for its round and releases it), its
barrier set-up in the prologue `if (thread == 0) { mbarrier_init ...; fence }; block_sync`.

Rewrite: a new producer warpgroup (first in the block, so the consumer keeps its warps'
builtins) initialises the barriers, meets the block at bar.sync 0, and with one elected
thread of its first warp issues the resident tiles, then every round in order:
wait for the slot to be released, expect the bytes, load. The compute role becomes the
ring's consumer: it keeps its waits and releases and loses the prefetch and refills.
Every round still lands in its slot before its readers wait for it and is refilled
only after all of them released it, so what the consumer computes is unchanged; the
loads now run ahead by as many rounds as the ring holds instead of S - 1, issued by a
warp that does nothing else.

With `stages`, the role may instead still load its tiles itself (plain or cp.async
loads, loads_to_tma's precondition): the split then puts an S-stage ring between the
producer and the consumer, as loads_to_tma(stages) and the split in one move (a move the
search takes as one step: the ring alone is seldom faster than the loads it replaces,
the split over it is). A kernel whose role already fills a ring refuses `stages`.
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import (
    NotApplicable,
    const,
    copy_kernel,
    copy_message,
    declared_names,
    equal,
    fresh_name,
    logical_and,
    sym,
)
from agent.transforms import ring_form, tma_ring

PRODUCER = "load"


def _prologue(role):
    """Whether the role starts with `if (thread == 0) { mbarrier_init ...; fence }; block_sync`."""
    body = role.body
    if len(body) < 2 or body[0].WhichOneof("kind") != "branch" or body[1].WhichOneof("kind") != "block_sync":
        return False
    if body[0].branch.cond != ring_form.ISSUER or body[0].branch.else_body:
        return False
    return all(o.WhichOneof("kind") in ("mbarrier_init", "fence") for o in body[0].branch.then_body)


def _ringed(kernel, stages):
    """The kernel whose ring the split splits: itself, or with `stages` its loads as an S-stage TMA ring."""
    if stages is None:
        return kernel
    if kernel.pipelines:
        raise NotApplicable("the role fills a ring already: split it without `stages`")
    return tma_ring.loads_to_tma(kernel, stages)


def precondition(kernel, pipeline=None, stages=None):
    """The matched SingleRoleRing split_producer would split; NotApplicable with the reason otherwise."""
    kernel = _ringed(kernel, stages)
    if len(kernel.roles) != 1:
        raise NotApplicable("the block has %d roles already" % len(kernel.roles))
    rings = [m for m in ring_form.single_role_rings(kernel) if pipeline is None or m.pipeline.name == pipeline]
    if not rings:
        raise NotApplicable("no ring in the single-role shape" + ("" if pipeline is None else " named %r" % pipeline))
    if len(kernel.pipelines) != 1:
        raise NotApplicable("the role fills %d rings" % len(kernel.pipelines))
    m = rings[0]
    if m.role.kind != ir_pb2.ROLE_KIND_COMPUTE:
        raise NotApplicable("role %r is not a compute role" % m.role.name)
    if not _prologue(m.role):
        raise NotApplicable("role %r does not initialise its barriers in a prologue" % m.role.name)
    return m


def split_producer(kernel, pipeline=None, stages=None):
    """The kernel with its single-role ring (or, with `stages`, a new S-stage ring) filled by a new producer
    warpgroup (see the module docstring)."""
    out = copy_kernel(_ringed(kernel, stages))
    m = precondition(out, pipeline)
    role, p, loop = m.role, m.pipeline, m.loop
    regions = {r.name: r for r in out.regions}
    name = fresh_name(declared_names(out), PRODUCER)
    issue = []
    for _, res in m.residents:
        issue += list(ring_form.resident_issue(res, regions).branch.then_body)
    rounds = ir_pb2.Loop(var=loop.var, start=const(0), end=copy_message(loop.end),
                         body=ring_form.issue_ops(m.streams, regions, p.full, p.empty, p.stages, sym(loop.var)))
    issue.append(ir_pb2.Op(loop=rounds))
    leader = logical_and(equal(sym("warp"), const(0)), sym("elected"))
    producer = ir_pb2.Role(name=name, kind=ir_pb2.ROLE_KIND_PRODUCER, warpgroups=1)
    producer.body.extend([copy_message(role.body[0]), ir_pb2.Op(block_sync=ir_pb2.BlockSync()),
                          ir_pb2.Op(branch=ir_pb2.Branch(cond=leader, then_body=issue))])
    gone = {i for i, _ in m.residents} | {0} | ({m.fill_index} if m.fill_index is not None else set())
    body = []
    for i, op in enumerate(role.body):
        if i in gone:
            continue
        op = copy_message(op)
        if i == m.loop_index:
            del op.loop.body[0]  # the refill
        body.append(op)
    del role.body[:]
    role.body.extend(body)
    role.kind = ir_pb2.ROLE_KIND_CONSUMER
    consumer = copy_message(role)
    del out.roles[:]
    out.roles.extend([producer, consumer])
    p.producer = name
    return out
