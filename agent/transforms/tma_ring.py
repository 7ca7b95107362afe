"""Plain or cp.async loads become a TMA + mbarrier ring of S stages in the role that issued them; and back.

`loads_to_tma(kernel, stages)`. Precondition: a single-role kernel on a target with TMA
whose compute role loads global tiles into whole shared regions in one of two shapes:
- plain: the body of a serial loop V over 0 .. E starts with copies global -> shared
  (tiles indexed by V), then a block_sync (the tiles are in), the compute, and a final
  block_sync (every thread is done before the next round overwrites them); copies
  before the loop load resident tiles;
- cp.async: kernels/gemm/idioms.cp_async_ring (a prefetch loop, then per round the
  cp.async waits, a block_sync and the refill), with resident cp.async loads before it.
Nothing else writes shared memory. Rewrite: the single-role ring of agent/transforms/
ring_form.py: thread 0 issues TMA loads S - 1 rounds ahead into an S-stage ring (full
and empty mbarriers, one pipeline), every thread waits for its round's `full` and
arrives on `empty` after its last read; resident tiles get one-shot mbarriers.
What each thread computes is unchanged: the same tiles land at the same places before
their readers read them, and no slot is refilled before every thread released it (after a
fence.proxy.async: the compute reads the stages through the generic proxy).

`tma_to_loads(kernel)`: the inverse for a ring in that single-role shape, back to plain
copies between two block_syncs per round (S = 1: the ring's regions become unstaged).
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import (
    NotApplicable,
    const,
    copy_kernel,
    copy_message,
    declared_names,
    fresh_name,
    mod,
    region_bytes,
    substitute,
    sym,
    target_has,
    tile_refs,
    walk_ops,
    written_tiles,
)
from agent.transforms import ring_form
from agent.transforms.ring_form import ROUND, Resident, Stream
from compiler.ir.roles import role_threads


def _shared(kernel):
    return {r.name: r for r in kernel.regions if r.space == ir_pb2.MEMORY_SPACE_SHARED}


def _load(op, shared):
    """(GlobalRef, region) of a whole-tile global -> shared load (copy or cp.async), else None."""
    kind = op.WhichOneof("kind")
    if kind == "copy" and op.copy.WhichOneof("src") == "src_global" and op.copy.WhichOneof("dst") == "dst_tile":
        src, dst = op.copy.src_global, op.copy.dst_tile
    elif kind == "cp_async":
        src, dst = op.cp_async.src, op.cp_async.dst
    else:
        return None
    if dst.region not in shared or dst.window:
        return None
    return src, dst.region


def _is(op, kind):
    return op.WhichOneof("kind") == kind


def _plain(role, shared):
    """(loop index, [Stream], compute ops, resident (index, src, region)) of the plain shape, or None."""
    body = role.body
    for i, op in enumerate(body):
        if not _is(op, "loop") or op.loop.kind != ir_pb2.LOOP_KIND_SERIAL_UNSPECIFIED:
            continue
        ops = list(op.loop.body)
        n = 0
        while n < len(ops) and _load(ops[n], shared) is not None and _is(ops[n], "copy"):
            n += 1
        if not n or n + 2 > len(ops) or not _is(ops[n], "block_sync") or not _is(ops[-1], "block_sync"):
            continue
        streams = []
        for load in ops[:n]:
            src, region = _load(load, shared)
            src = copy_message(src)
            substitute(src, {op.loop.var: sym(ROUND)})
            streams.append(Stream(src, region))
        residents = [(j, _load(o, shared)) for j, o in enumerate(body[:i]) if _load(o, shared) is not None
                     and _is(o, "copy")]
        return i, streams, ops[n + 1:-1], [(j, src, region) for j, (src, region) in residents]
    return None


def _cp_async(role, shared):
    """The same description of the cp_async_ring shape, or None."""
    body = role.body
    for i in range(1, len(body)):
        fill, loop = body[i - 1], body[i]
        if not (_is(fill, "loop") and _is(loop, "loop") and len(fill.loop.body) == 1 and _is(fill.loop.body[0], "branch")):
            continue
        issue = list(fill.loop.body[0].branch.then_body)
        if not issue or any(not _is(o, "cp_async") for o in issue):
            continue
        ops = list(loop.loop.body)
        if len(ops) < 3 or not _is(ops[1], "block_sync") or not _is(ops[2], "branch"):
            continue
        if not (_is(ops[0], "cp_async_wait") or (_is(ops[0], "branch") and all(
                _is(o, "cp_async_wait") for o in list(ops[0].branch.then_body) + list(ops[0].branch.else_body)))):
            continue
        streams = []
        for o in issue:
            src = copy_message(o.cp_async.src)
            substitute(src, {fill.loop.var: sym(ROUND)})
            streams.append(Stream(src, o.cp_async.dst.region))
        residents = [(j, _load(o, shared)) for j, o in enumerate(body[:i - 1]) if _load(o, shared) is not None
                     and _is(o, "cp_async")]
        return i, streams, ops[3:], [(j, src, region) for j, (src, region) in residents], i - 1
    return None


def _role(kernel, name):
    if len(kernel.roles) != 1:
        raise NotApplicable("the block has %d roles: block_sync is shared with the others" % len(kernel.roles))
    role = kernel.roles[0]
    if name is not None and role.name != name:
        raise NotApplicable("no role %r" % name)
    if role.kind != ir_pb2.ROLE_KIND_COMPUTE:
        raise NotApplicable("role %r is not a compute role" % role.name)
    return role


def precondition(kernel, stages=2, role=None):
    """(role, shape description) when loads_to_tma applies; NotApplicable with the reason otherwise."""
    if not target_has(kernel, "tma"):
        raise NotApplicable("the target has no TMA")
    if int(stages) < 1:
        raise NotApplicable("a ring has at least one stage")
    r = _role(kernel, role)
    shared = _shared(kernel)
    plain = _plain(r, shared)
    shape = ("plain",) + plain if plain is not None else None
    if shape is None:
        cpa = _cp_async(r, shared)
        shape = ("cp_async",) + cpa if cpa is not None else None
    if shape is None:
        raise NotApplicable("role %r has no loop of plain or cp.async tile loads" % r.name)
    loop_index, streams, compute, residents = shape[1:5]
    loop = r.body[loop_index].loop
    if (loop.start.WhichOneof("kind") != "int" or loop.start.int != 0
            or (loop.HasField("step") and loop.step != const(1))):
        raise NotApplicable("the ring's loop does not count rounds 0, 1, 2, ...")
    streamed = {s.region for s in streams}
    if len(streamed) != len(streams):
        raise NotApplicable("two loads of a round fill the same region")
    loaded = streamed | {region for _, _, region in residents}
    loads = sum(_load(op, shared) is not None for _, _, op in walk_ops(r.body))
    if loads != len(residents) + len(streams) * (2 if shape[0] == "cp_async" else 1):
        raise NotApplicable("role %r loads tiles outside the ring's loop and its resident tiles" % r.name)
    for _, _, op in walk_ops(r.body):
        if _load(op, shared) is not None:
            continue
        for ref in written_tiles(op):
            if ref.region in shared:
                raise NotApplicable("role %r writes shared region %r besides its loads" % (r.name, ref.region))
    for i, op in enumerate(r.body):
        if i == loop_index or (shape[0] == "cp_async" and i == shape[5]):
            continue
        if any(ref.region in streamed for _, _, o in walk_ops([op]) for ref in tile_refs(o)):
            raise NotApplicable("ring regions are used outside the loop that streams them")
    for region in loaded:
        if shared[region].stages > 1 and (region not in streamed or shape[0] == "plain"):
            raise NotApplicable("region %r is staged already" % region)
    return r, shape


def loads_to_tma(kernel, stages=2, role=None):
    """The kernel with its streamed tile loads in an S-stage TMA ring (see the module docstring)."""
    stages = int(stages)
    out = copy_kernel(kernel)
    r, shape = precondition(out, stages, role)
    kind, loop_index, streams, compute, residents = shape[:5]
    loop = r.body[loop_index].loop
    shared = _shared(out)
    taken = declared_names(out)
    full = fresh_name(taken, "full")
    empty = fresh_name(taken | {full}, "empty")
    ring = fresh_name(taken, "ring")
    fill_var = fresh_name(taken, loop.var + "_fill")
    res = []
    for j, src, region in residents:
        name = fresh_name(taken | {full, empty}, region + "_full")
        taken.add(name)
        res.append((j, Resident(copy_message(src), region, name)))
    for s in streams:
        shared[s.region].stages = stages
    regions = {reg.name: reg for reg in out.regions}
    end = copy_message(loop.end)
    v = loop.var
    # The loop: refill, wait for the round, compute at stage v % S, release.
    body = [ring_form.refill(v, end, streams, regions, full, empty, stages),
            ir_pb2.Op(mbarrier_wait=ir_pb2.MbarrierWait(barrier=ir_pb2.BarrierRef(barrier=full, round=sym(v))))]
    streamed = {s.region for s in streams}
    for op in compute:
        op = copy_message(op)
        for _, _, o in walk_ops([op]):
            for ref in tile_refs(o):
                if ref.region in streamed:
                    ref.stage.CopyFrom(mod(sym(v), const(stages)))
        body.append(op)
    body.extend(ring_form.release(empty, v))
    new_loop = ir_pb2.Loop()
    new_loop.CopyFrom(loop)
    del new_loop.body[:]
    new_loop.body.extend(body)
    # The role: prologue, its ops with resident loads issued by TMA, the prefetch, resident waits, the loop.
    skip = {shape[5]} if kind == "cp_async" else set()
    res_at = dict(res)
    before = []
    for j, op in enumerate(r.body[:loop_index]):
        if j in skip:
            continue
        before.append(ring_form.resident_issue(res_at[j], regions) if j in res_at else copy_message(op))
    fill = ring_form.fill_loop(fill_var, end, streams, regions, full, empty, stages)
    if fill is not None:
        before.append(fill)
    before += [ring_form.resident_wait(x) for _, x in res]
    after = [copy_message(op) for op in r.body[loop_index + 1:]]
    names = [x.barrier for _, x in res] + [full, empty]
    del r.body[:]
    r.body.extend(ring_form.init_prologue(names) + before + [ir_pb2.Op(loop=new_loop)] + after)
    for _, x in res:
        out.barriers.add(name=x.barrier, kind=ir_pb2.BARRIER_KIND_MBARRIER, count=1, arrivals=1,
                         tx_bytes=region_bytes(regions[x.region]))
    out.barriers.add(name=full, kind=ir_pb2.BARRIER_KIND_MBARRIER, count=stages, arrivals=1,
                     tx_bytes=sum(region_bytes(regions[s.region]) for s in streams))
    out.barriers.add(name=empty, kind=ir_pb2.BARRIER_KIND_MBARRIER, count=stages, arrivals=role_threads(r))
    out.pipelines.add(name=ring, stages=stages, full=full, empty=empty, regions=[s.region for s in streams],
                      producer=r.name, consumers=[r.name])
    return out


def _unstage(message, regions):
    """Clear the stage of every TileRef under `message` naming one of `regions`."""
    for _, _, o in walk_ops([message]):
        for ref in tile_refs(o):
            if ref.region in regions:
                ref.ClearField("stage")


def tma_to_loads(kernel, pipeline=None):
    """The single-role TMA ring `pipeline` (default: the first) back to plain copies between block_syncs."""
    if len(kernel.roles) != 1:
        raise NotApplicable("the block has %d roles: the ring has a producer of its own" % len(kernel.roles))
    rings = [m for m in ring_form.single_role_rings(kernel) if pipeline is None or m.pipeline.name == pipeline]
    if not rings:
        raise NotApplicable("no ring in the single-role shape" + ("" if pipeline is None else " named %r" % pipeline))
    name = rings[0].pipeline.name
    out = copy_kernel(kernel)
    m = next(x for x in ring_form.single_role_rings(out) if x.pipeline.name == name)
    role, p, loop = m.role, m.pipeline, m.loop
    streamed = set(p.regions)
    v = loop.var
    copies = []
    for s in m.streams:
        src = copy_message(s.src)
        substitute(src, {ROUND: sym(v)})
        copies.append(ir_pb2.Op(copy=ir_pb2.Copy(src_global=src, dst_tile=ir_pb2.TileRef(region=s.region))))
    compute = [copy_message(op) for op in m.compute]
    for op in compute:
        _unstage(op, streamed)
    body = copies + [ir_pb2.Op(block_sync=ir_pb2.BlockSync())] + compute + [ir_pb2.Op(block_sync=ir_pb2.BlockSync())]
    del loop.body[:]
    loop.body.extend(body)
    residents = dict(m.residents)
    res_barriers = {x.barrier for x in residents.values()}
    dropped = {p.full, p.empty} | res_barriers
    kept = []
    for i, op in enumerate(role.body):
        if i == m.fill_index:
            continue
        if i in residents:
            x = residents[i]
            kept.append(ir_pb2.Op(copy=ir_pb2.Copy(src_global=x.src, dst_tile=ir_pb2.TileRef(region=x.region))))
            continue
        if op.WhichOneof("kind") == "mbarrier_wait" and op.mbarrier_wait.barrier.barrier in res_barriers:
            continue
        kept.append(copy_message(op))
    kept = _drop_inits(kept, dropped)
    del role.body[:]
    role.body.extend(kept)
    for reg in out.regions:
        if reg.name in streamed:
            reg.stages = 1
    keep_barriers = [b for b in out.barriers if b.name not in dropped]
    del out.barriers[:]
    out.barriers.extend(keep_barriers)
    keep_pipes = [q for q in out.pipelines if q.name != p.name]
    del out.pipelines[:]
    out.pipelines.extend(keep_pipes)
    return out


def _drop_inits(body, dropped):
    """`body` without the initialisation of `dropped` barriers; a prologue left with nothing to initialise goes."""
    if len(body) < 2 or body[0].WhichOneof("kind") != "branch" or body[1].WhichOneof("kind") != "block_sync":
        return body
    then = [o for o in body[0].branch.then_body
            if not (o.WhichOneof("kind") == "mbarrier_init" and o.mbarrier_init.barrier in dropped)]
    if all(o.WhichOneof("kind") == "fence" for o in then):
        return body[2:]
    del body[0].branch.then_body[:]
    body[0].branch.then_body.extend(then)
    return body
