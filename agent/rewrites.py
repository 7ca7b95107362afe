"""IR rewrites: edits of a kernel's schedule decisions that keep what it computes.

Each rewrite is `fn(kernel, **args) -> kernel`: it returns an edited copy (the input
is never modified) and raises NotApplicable when the kernel offers nothing it could
change, so the search only records real moves. Rewrites work on any kernel of the
right shape, whoever wrote it (a seed family, an earlier rewrite, an LLM); whether
the result is still correct is for the verifier, the build and the oracle to say,
and their diagnostics drive the repair moves. REWRITES maps the names that
knowledge/tactics.json uses to the functions.
"""

from cake.ir.v1 import ir_pb2

from agent.ir_edit import (
    NotApplicable,
    binary,
    const,
    copy_kernel,
    equal,
    find_region,
    find_role,
    logical_and,
    sym,
    walk_ops,
)
from agent.persistent import persistent
from compiler.ir import enums
from compiler.ir.dtypes import DTYPE_BYTES, SWIZZLE_SPAN
from compiler.ir.roles import role_threads


def swizzle(kernel, region, mode):
    """Change a swizzled shared region's swizzle (TMA and wgmma read the same pattern)."""
    out = copy_kernel(kernel)
    target = find_region(out, region)
    if target.space != ir_pb2.MEMORY_SPACE_SHARED:
        raise NotApplicable("region %r is not shared memory" % region)
    try:
        want = enums.value_of(ir_pb2.Swizzle.DESCRIPTOR, mode)
    except ValueError:
        raise NotApplicable("unknown swizzle %r" % mode) from None
    if target.swizzle == want:
        raise NotApplicable("region %r already has swizzle %s" % (region, mode))
    if target.swizzle == ir_pb2.SWIZZLE_NONE_UNSPECIFIED:
        raise NotApplicable("region %r is unswizzled: its readers do not expect a swizzle" % region)
    inner = target.shape[-1] * DTYPE_BYTES.get(target.dtype, 0) if target.shape else 0
    if SWIZZLE_SPAN[want] and inner % SWIZZLE_SPAN[want]:
        raise NotApplicable("rows of %d bytes are not a multiple of the %s span" % (inner, mode))
    target.swizzle = want
    return out


def _wgmmas(kernel):
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") == "mma" and op.mma.kind == ir_pb2.MMA_KIND_WGMMA:
                yield op.mma


def instr_n(kernel, n):
    """Set the N of every wgmma instruction (m64nNk16); 0 lets lowering pick the widest."""
    out = copy_kernel(kernel)
    regions = {r.name: r for r in out.regions}
    mmas = list(_wgmmas(out))
    if not mmas:
        raise NotApplicable("no wgmma")
    changed = False
    for mma in mmas:
        acc = regions.get(mma.acc.region)
        width = acc.shape[-1] if acc is not None and acc.shape else 0
        if n and (n % 16 or n > 256 or not width or width % n):
            raise NotApplicable("N=%d does not tile an accumulator %d wide" % (n, width))
        want = [64, n, 16] if n else []
        if list(mma.instr_shape) != want:
            del mma.instr_shape[:]
            mma.instr_shape.extend(want)
            changed = True
    if not changed:
        raise NotApplicable("wgmma instructions already have N=%d" % n)
    return out


def unroll(kernel, var, factor):
    """Set the unroll factor of the loops over `var` (0: leave it to nvcc, 1: never unroll)."""
    out = copy_kernel(kernel)
    loops = [op.loop for role in out.roles for _, _, op in walk_ops(role.body)
             if op.WhichOneof("kind") == "loop" and op.loop.var == var
             and op.loop.kind == ir_pb2.LOOP_KIND_SERIAL_UNSPECIFIED]
    if not loops:
        raise NotApplicable("no serial loop over %r" % var)
    if all(loop.unroll == factor for loop in loops):
        raise NotApplicable("loops over %r already unroll by %d" % (var, factor))
    for loop in loops:
        loop.unroll = factor
    return out


def min_blocks(kernel, n):
    """Ask for `n` resident blocks per SM (__launch_bounds__' second argument)."""
    if kernel.launch.persistent:
        raise NotApplicable("a persistent launch sizes its grid from min_blocks_per_sm")
    if max(1, kernel.launch.min_blocks_per_sm) == n:
        raise NotApplicable("already %d blocks per SM" % n)
    out = copy_kernel(kernel)
    out.launch.min_blocks_per_sm = n
    return out


def defer_lane_reduction(kernel):
    """Keep per-thread running arg-mins in a loop and merge each row's lanes once after it.

    A running arg-min with scope `lanes` directly in a serial loop shuffles across a row's
    quad every iteration; with scope `thread` each lane keeps the best of its own columns,
    and one `lanes` merge of the running values after the loop gives the same winner (ties
    still go to the smaller index).
    """
    out = copy_kernel(kernel)
    changed = False
    for role in out.roles:
        for ops, i, op in list(walk_ops(role.body)):
            if op.WhichOneof("kind") != "loop" or op.loop.kind != ir_pb2.LOOP_KIND_SERIAL_UNSPECIFIED:
                continue
            merges = []
            for inner in op.loop.body:
                ar = inner.arg_reduce if inner.WhichOneof("kind") == "arg_reduce" else None
                if ar is not None and ar.scope == ir_pb2.SCOPE_LANES and ar.accumulate:
                    ar.scope = ir_pb2.SCOPE_THREAD
                    merge = ir_pb2.ArgReduce(op=ar.op, src=ir_pb2.TileRef(region=ar.values.region), axis=1,
                                             index_base=ir_pb2.Expr(int=0), values=ar.values, indices=ar.indices,
                                             scope=ir_pb2.SCOPE_LANES, accumulate=True)
                    merges.append(merge)
            for j, merge in enumerate(merges):
                ops.insert(i + 1 + j, ir_pb2.Op(arg_reduce=merge))
                changed = True
    if not changed:
        raise NotApplicable("no running arg-min merges lanes inside a loop")
    return out


def split_reduction(kernel, parts):
    """Split each whole-tile wgmma's reduction (K) dimension into `parts` MMAs over windows of it."""
    out = copy_kernel(kernel)
    regions = {r.name: r for r in out.regions}
    changed = False
    for role in out.roles:
        for ops, i, op in list(walk_ops(role.body)):
            if op.WhichOneof("kind") != "mma" or op.mma.kind != ir_pb2.MMA_KIND_WGMMA:
                continue
            mma = op.mma
            b = regions.get(mma.b.region)
            if b is None or len(b.shape) != 2 or mma.b.window or mma.a_major or mma.b_major:
                continue
            depth = b.shape[1]
            span = SWIZZLE_SPAN[b.swizzle] // DTYPE_BYTES.get(b.dtype, 2) or 16
            step = depth // parts
            if depth % parts or step % 16 or step % span:
                raise NotApplicable("a %d-deep reduction does not split into %d swizzle-aligned parts" % (depth, parts))
            a_rows = _window_or_whole(mma.a, regions.get(mma.a.region))
            if a_rows is None:
                continue
            pieces = []
            for p in range(parts):
                piece = ir_pb2.Mma()
                piece.CopyFrom(mma)
                piece.a.window[1].CopyFrom(ir_pb2.Window(start=ir_pb2.Expr(int=p * step), size=step))
                del piece.b.window[:]
                piece.b.window.add(start=ir_pb2.Expr(int=0), size=b.shape[0])
                piece.b.window.add(start=ir_pb2.Expr(int=p * step), size=step)
                if p:
                    piece.accumulate.CopyFrom(ir_pb2.Expr(int=1))
                pieces.append(ir_pb2.Op(mma=piece))
            ops[i].CopyFrom(pieces[0])
            for j, piece in enumerate(pieces[1:]):
                ops.insert(i + 1 + j, piece)
            changed = True
    if not changed:
        raise NotApplicable("no whole-tile K-major wgmma to split")
    return out


def _window_or_whole(ref, region):
    """Give `ref` an explicit 2-D window (the whole tile when it has none); None if it cannot."""
    if region is None or len(region.shape) != 2:
        return None
    if not ref.window:
        ref.window.add(start=ir_pb2.Expr(int=0), size=region.shape[0])
        ref.window.add(start=ir_pb2.Expr(int=0), size=region.shape[1])
    if len(ref.window) != 2 or ref.window[1].size != region.shape[1]:
        return None
    return ref


def elect_release(kernel, barrier="release_sync"):
    """Release ring slots with one arrival per consumer warpgroup instead of one per thread.

    Each warpgroup first meets at its own named barrier (so every thread's reads of the
    slot are done), then one elected thread of its first warp arrives on `empty`.
    """
    out = copy_kernel(kernel)
    barriers = {b.name: b for b in out.barriers}
    if barrier in barriers:
        raise NotApplicable("barrier %r exists already" % barrier)
    changed = False
    for pipe in out.pipelines:
        empty = barriers.get(pipe.empty)
        for name in pipe.consumers:
            role = find_role(out, name)
            if role.WhichOneof("size") != "warpgroups" or empty is None or empty.arrivals != role_threads(role):
                continue
            sites = [(ops, i) for ops, i, op in walk_ops(role.body) if op.WhichOneof("kind") == "mbarrier_arrive"
                     and op.mbarrier_arrive.barrier.barrier == pipe.empty]
            if not sites:
                continue
            for ops, i in reversed(sites):
                arrive = ir_pb2.Op()
                arrive.CopyFrom(ops[i])
                leader = logical_and(equal(binary(ir_pb2.BINARY_OP_MOD, sym("warp"), const(4)), const(0)), sym("elected"))
                ops[i].CopyFrom(ir_pb2.Op(named_barrier_sync=ir_pb2.NamedBarrierSync(barrier=barrier, index=sym("warpgroup"))))
                ops.insert(i + 1, ir_pb2.Op(branch=ir_pb2.Branch(cond=leader, then_body=[arrive])))
            empty.arrivals = role.warpgroups
            out.barriers.add(name=barrier, kind=ir_pb2.BARRIER_KIND_NAMED, count=role.warpgroups, arrivals=128)
            changed = True
            break
        if changed:
            break
    if not changed:
        raise NotApplicable("no ring whose every consumer thread releases slots")
    return out


REWRITES = {
    "swizzle": swizzle,
    "instr_n": instr_n,
    "unroll": unroll,
    "min_blocks": min_blocks,
    "defer_lane_reduction": defer_lane_reduction,
    "split_reduction": split_reduction,
    "elect_release": elect_release,
    "persistent": persistent,
}


def apply(kernel, name, args):
    """Apply rewrite `name` with `args` (a dict); NotApplicable when it has nothing to do."""
    fn = REWRITES.get(name)
    if fn is None:
        raise NotApplicable("unknown rewrite %r" % name)
    return fn(kernel, **args)
