"""Role bodies compiled for the protocol model: names resolved, expressions compiled, costs precomputed.

`compile_roles(ctx)` returns one list of `Node`s per role. A node keeps its IR
path and what the model needs to execute it: resolved region and barrier
references with compiled slot expressions, byte counts, and whether the op is
collective (all threads of a warp, warpgroup or role execute it together, as
`.sync.aligned` instructions and cross-thread reductions require).

It also returns, per role, the expressions that decide control flow and
synchronization (branch conditions; loop bounds, barrier slots, stages, phases
and accumulate flags) so threads can be grouped into classes (threads.py).
"""

import math

from cake.ir.v1 import ir_pb2

from compiler.verify import exprs, oprefs, phases, threads
from compiler.verify.context import DTYPE_BYTES

SHARED, REGISTER, TENSOR = ir_pb2.MEMORY_SPACE_SHARED, ir_pb2.MEMORY_SPACE_REGISTER, ir_pb2.MEMORY_SPACE_TENSOR

# Scopes of cross-thread reductions -> the unit whose threads must all take part.
_SCOPE_UNIT = {
    ir_pb2.SCOPE_LANES: "warp",
    ir_pb2.SCOPE_WARP: "warp",
    ir_pb2.SCOPE_WARPGROUP: "warpgroup",
    ir_pb2.SCOPE_ROLE: "role",
}
# Generic-proxy writers of shared memory (async-proxy readers need a proxy fence after them).
GENERIC_WRITERS = frozenset(
    ("copy", "fill", "elementwise", "stmatrix", "reduce", "arg_reduce", "top_k", "scan", "tri_solve", "cp_async")
)


class Tile:
    """A resolved TileRef: region index, space, stage expression, window; `ring` when a pipeline cycles it.

    `window` is None for the whole tile, else ((start closure or None, size), ...) per dimension; a
    start that depends on thread builtins is None and stands for the whole extent (a class of threads
    may span several warps or warpgroups).
    """

    __slots__ = ("region", "name", "space", "stage", "stages", "ring", "field", "window", "shape", "full")

    def __init__(self, index, region, stage, ring, field, window):
        self.region = index
        self.name = region.name
        self.space = region.space
        self.stage = stage  # closure or None (stage 0)
        self.stages = max(1, region.stages)
        self.ring = ring
        self.field = field
        self.window = window
        self.shape = tuple(region.shape)
        self.full = tuple((0, d) for d in region.shape)

    def box(self, env):
        """The ((start, end), ...) this access covers under env."""
        if self.window is None:
            return self.full
        return tuple(
            (0, extent) if fn is None else (fn(env), fn(env) + size)
            for (fn, size), extent in zip(self.window, self.shape)
        )


class BarRef:
    """A resolved BarrierRef: array index, how the slot is named, and the ring terms of round waits."""

    __slots__ = ("array", "name", "mode", "fn", "count", "lag")

    def __init__(self, array, name, mode, fn, count, lag):
        self.array = array
        self.name = name
        self.mode = mode  # "index", "round" or None (slot 0)
        self.fn = fn
        self.count = count
        self.lag = lag


class Node:
    """One op (or control-flow node) of a compiled role body."""

    def __init__(self, kind, path):
        self.kind = kind
        self.path = path
        self.collective = None  # "warp", "warpgroup", "role" or None


class _Compiler:
    def __init__(self, ctx):
        self.ctx = ctx
        self.values = []  # sync-relevant expressions of the role being compiled
        self.conds = []

    def expr(self, e, relevant=True):
        if relevant:
            self.values.append(e)
        return exprs.compile_expr(e)

    def tile(self, ref, field):
        hit = self.ctx.regions.get(ref.region)
        if hit is None:
            return None
        index, region = hit
        stage = self.expr(ref.stage) if ref.HasField("stage") else None
        window = None
        if ref.window and len(ref.window) == len(region.shape):
            window = tuple(
                (None if exprs.names(w.start) & threads.THREAD else exprs.compile_expr(w.start), w.size)
                for w in ref.window
            )
        return Tile(index, region, stage, ref.region in self.ctx.pipeline_of_region, field, window)

    def barref(self, ref):
        hit = self.ctx.barriers.get(ref.barrier)
        if hit is None:
            return None
        mode = ref.WhichOneof("slot")
        fn = self.expr(getattr(ref, mode)) if mode else None
        depth, lag = phases.ring_terms(self.ctx.kernel, ref.barrier)
        return BarRef(hit[0], ref.barrier, mode, fn, depth, lag)

    def body(self, ops, prefix):
        out = []
        for j, op in enumerate(ops):
            kind = op.WhichOneof("kind")
            path = "%s[%d].%s" % (prefix, j, kind) if kind else "%s[%d]" % (prefix, j)
            node = self.node(kind, getattr(op, kind) if kind else None, path)
            if node is not None:
                out.append(node)
        return out

    def node(self, kind, msg, path):
        if kind == "loop":
            n = Node("loop", path)
            n.var, n.counter = msg.var, msg.counter
            n.start, n.end = self.expr(msg.start), self.expr(msg.end)
            n.step = self.expr(msg.step) if msg.HasField("step") else None
            n.persistent = msg.kind == ir_pb2.LOOP_KIND_PERSISTENT
            n.body = self.body(msg.body, path + ".body")
            return n
        if kind == "branch":
            n = Node("branch", path)
            self.conds.append(msg.cond)
            n.cond = exprs.compile_expr(msg.cond)
            n.then = self.body(msg.then_body, path + ".then_body")
            n.els = self.body(msg.else_body, path + ".else_body")
            return n
        if kind is None:
            return None
        n = Node(kind, path)
        n.reads, n.writes = [], []
        for field, ref, access in oprefs.tiles(kind, msg):
            t = self.tile(ref, field)
            if t is None:
                continue
            if kind == "mma" and field == "acc":
                n.acc = t
                continue
            if access in (oprefs.R, oprefs.RW):
                n.reads.append(t)
            if access in (oprefs.W, oprefs.RW):
                n.writes.append(t)
        n.generic = kind in GENERIC_WRITERS
        # Ops on unstaged registers only touch their own class's state (the model's fast path).
        tiles = n.reads + n.writes
        n.registers_only = all(t.space == REGISTER and t.stage is None for t in tiles)
        n.register_reads = [((t.region, 0), t) for t in n.reads] if n.registers_only else []
        n.register_writes = [(t.region, 0) for t in n.writes] if n.registers_only else []
        handler = getattr(self, "_" + kind, None)
        if handler is not None and handler(n, msg) is False:
            return None
        return n

    # Per-kind extras. Returning False drops the node (an unresolved name: a structure error).

    def _tma_load(self, n, msg):
        n.bar = self.barref(msg.barrier)
        if n.bar is None or not n.writes:
            return False
        region = self.ctx.kernel.regions[n.writes[0].region]
        n.bytes = _box_elements(msg.dst, region) * DTYPE_BYTES.get(region.dtype, 0)
        cluster = min(32, math.prod(max(1, c) for c in self.ctx.kernel.launch.cluster))  # masks are 16 bits
        # A multicast load brings this CTA its own box and, symmetrically, the boxes its peers multicast.
        n.copies = max(1, bin(msg.multicast_mask & ((1 << cluster) - 1)).count("1"))

    def _mma_commit(self, n, msg):
        n.bar = self.barref(msg.barrier)
        return n.bar is not None

    def _mbarrier_arrive(self, n, msg):
        n.bar = self.barref(msg.barrier)
        return n.bar is not None

    def _mbarrier_expect_tx(self, n, msg):
        n.bar = self.barref(msg.barrier)
        n.bytes = msg.bytes
        return n.bar is not None

    def _mbarrier_wait(self, n, msg):
        n.bar = self.barref(msg.barrier)
        n.phase = self.expr(msg.phase) if msg.HasField("phase") else None
        return n.bar is not None

    def _mbarrier_init(self, n, msg):
        hit = self.ctx.barriers.get(msg.barrier)
        if hit is None:
            return False
        n.array = hit[0]

    def _named_barrier_sync(self, n, msg):
        hit = self.ctx.barriers.get(msg.barrier)
        if hit is None:
            return False
        n.array = hit[0]

    _named_barrier_arrive = _named_barrier_sync

    def _mma(self, n, msg):
        if not hasattr(n, "acc"):
            return False
        n.mkind = msg.kind
        n.accumulate = self.expr(msg.accumulate) if msg.HasField("accumulate") else (lambda env: 0)
        n.collective = {ir_pb2.MMA_KIND_WGMMA: "warpgroup", ir_pb2.MMA_KIND_MMA_SYNC: "warp"}.get(msg.kind)

    def _mma_wait(self, n, msg):
        n.pending = msg.pending
        n.collective = "warpgroup"

    def _bulk_wait(self, n, msg):
        n.pending = msg.pending

    def _cp_async_wait(self, n, msg):
        n.pending = msg.pending

    def _fence(self, n, msg):
        n.fkind = msg.kind

    def _ldmatrix(self, n, msg):
        n.collective = "warp"

    _stmatrix = _ldmatrix
    _tmem_load = _ldmatrix

    def _reduce(self, n, msg):
        n.collective = _SCOPE_UNIT.get(msg.scope)

    _arg_reduce = _reduce
    _top_k = _reduce
    _scan = _reduce

    def _atomic(self, n, msg):
        if msg.aggregation == ir_pb2.AGGREGATION_WARP:
            n.collective = "warp"


def _box_elements(ref, region):
    if ref.window:
        return math.prod(max(0, w.size) for w in ref.window)
    return math.prod(max(0, d) for d in region.shape)


def compile_roles(ctx):
    """[(nodes, conds, values)] per role: the compiled body and the expressions that split its threads."""
    out = []
    for i, role in enumerate(ctx.kernel.roles):
        c = _Compiler(ctx)
        nodes = c.body(role.body, "kernel.roles[%d].body" % i)
        out.append((nodes, c.conds, c.values))
    return out
