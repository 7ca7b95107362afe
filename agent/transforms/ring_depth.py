"""Deepen or shrink a stage ring (the streamed ring, or the resident tile's ring of one after `persistent`).

Precondition: a pipeline whose regions every op addresses either by a stage `E % S`
(S the ring's depth) or, for a ring of one stage, by no stage at all, in a role that
reaches each such access after a wait on the ring's `full` barrier by round (or, for a
TMA load into the ring, through its own barrier's round); a new depth of at least one; a
ring its own role fills and reads is in the single-role shape (its refills run a
distance ahead that the depth bounds).

Rewrite: the ring's regions and its full and empty barrier arrays get the new depth,
every stage `E % S` becomes `E % S'` and an unstaged access of a one-stage ring the
stage `R % S'` of the round R it belongs to. A ring in the single-role shape
(agent/transforms/ring_form.py) also gets its prefetch distance, S' - 1 rounds, and its
prefetch loop rebuilt. Slots and wait parities derive from rounds (compiler/ir/phases.py),
so every round still meets its own data: round r lives in slot r % S' and is refilled
only after its release, as before; only how many rounds are in flight changes.
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import NotApplicable, const, copy_kernel, copy_message, declared_names, fresh_name, mod, tile_refs
from agent.transforms import ring_form


def _pipeline(kernel, name):
    for p in kernel.pipelines:
        if name is None or p.name == name:
            return p
    raise NotApplicable("no pipeline %r" % name if name else "no pipeline")


def _restage(ops, p, new, current):
    """Give every access of p's regions under `ops` its stage in a ring of `new`; the round last waited for."""
    regions = set(p.regions)
    for op in ops:
        kind = op.WhichOneof("kind")
        if kind == "loop":
            current = _restage(op.loop.body, p, new, current)
            continue
        if kind == "branch":
            _restage(op.branch.then_body, p, new, current)
            _restage(op.branch.else_body, p, new, current)
            continue
        if kind == "mbarrier_wait" and op.mbarrier_wait.barrier.barrier == p.full:
            ref = op.mbarrier_wait.barrier
            if ref.WhichOneof("slot") == "round":
                current = ref.round
        own = op.tma_load.barrier.round if kind == "tma_load" and op.tma_load.barrier.barrier == p.full and \
            op.tma_load.barrier.WhichOneof("slot") == "round" else None
        for ref in tile_refs(op):
            if ref.region not in regions:
                continue
            stage = ref.stage if ref.HasField("stage") else None
            if stage is not None and stage.WhichOneof("kind") == "binary" and stage.binary.op == ir_pb2.BINARY_OP_MOD \
                    and stage.binary.rhs == const(p.stages):
                stage.binary.rhs.CopyFrom(const(new))
                continue
            if p.stages == 1 and (stage is None or stage == const(0)):
                rnd = own if own is not None else current
                if rnd is None:
                    raise NotApplicable("an access of %r belongs to no round of ring %r" % (ref.region, p.name))
                ref.stage.CopyFrom(mod(copy_message(rnd), const(new)))
                continue
            raise NotApplicable("an access of %r has a stage other than `round %% %d`" % (ref.region, p.stages))
    return current


def precondition(kernel, pipeline=None, stages=2):
    """The pipeline ring_depth would change; NotApplicable with the reason otherwise."""
    p = _pipeline(kernel, pipeline)
    stages = int(stages)
    if stages < 1:
        raise NotApplicable("a ring has at least one stage")
    if stages == p.stages:
        raise NotApplicable("ring %r has %d stages already" % (p.name, stages))
    if p.producer in p.consumers:
        ring_form.match(kernel, p)  # its prefetch distance follows the depth: only the shape ring_form knows
    probe = copy_kernel(kernel)
    q = _pipeline(probe, p.name)
    for role in probe.roles:
        _restage(role.body, q, stages, None)
    return p


def ring_depth(kernel, pipeline=None, stages=2):
    """The kernel with ring `pipeline` (default: the first) `stages` deep (see the module docstring)."""
    stages = int(stages)
    precondition(kernel, pipeline, stages)
    out = copy_kernel(kernel)
    p = _pipeline(out, pipeline)
    single = ring_form.match(out, p) if p.producer in p.consumers else None
    for role in out.roles:
        _restage(role.body, p, stages, None)
    if single is not None:
        _new_prefetch(out, single, stages)
    for region in out.regions:
        if region.name in p.regions:
            region.stages = stages
    for b in out.barriers:
        if b.name in (p.full, p.empty):
            b.count = stages
    p.stages = stages
    return out


def _new_prefetch(kernel, m, stages):
    """Rebuild a single-role ring's prefetch loop and refill for `stages` (S - 1 rounds ahead)."""
    regions = {r.name: r for r in kernel.regions}
    p, loop, body = m.pipeline, m.loop, m.role.body
    end = copy_message(loop.end)
    loop.body[0].CopyFrom(ring_form.refill(loop.var, end, m.streams, regions, p.full, p.empty, stages))
    fill_var = body[m.fill_index].loop.var if m.fill_index is not None else \
        fresh_name(declared_names(kernel), loop.var + "_fill")
    fill = ring_form.fill_loop(fill_var, end, m.streams, regions, p.full, p.empty, stages)
    at = m.fill_index
    if at is not None and fill is not None:
        body[at].CopyFrom(fill)
    elif at is not None:
        del body[at]
    elif fill is not None:
        first_wait = next((i for i, o in enumerate(body) if o.WhichOneof("kind") == "mbarrier_wait"), m.loop_index)
        body.insert(min(first_wait, m.loop_index), fill)
