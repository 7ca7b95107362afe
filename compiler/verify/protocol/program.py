"""Role bodies compiled for the protocol model: names resolved, expressions compiled, costs precomputed.

`compile_roles(ctx)` returns one list of `Node`s per role. A node keeps its IR
path and what the model needs to execute it: resolved region and barrier
references with compiled slot expressions, byte counts, and whether the op is
collective (all threads of a warp, warpgroup or role execute it together, as
`.sync.aligned` instructions and cross-thread reductions require).

It also returns, per role, the expressions that decide control flow and
synchronization (branch conditions; loop bounds, barrier slots, stages, phases
and accumulate flags) so threads can be grouped into classes (threads.py).

Register scalars (compiler/ir/scalars.py) are run-time data the model does not
know. A branch condition that reads one is *data-dependent*: its parts that read
scalars take the value env[DATA] (the scenario's policy: all true, then all
false), the rest evaluates as usual. The static rules guarantee such branches
hold no synchronization (CAKE-SYNC-017) and that scalars appear only where values
are data (CAKE-STRUCT-018), so the two policies cover the protocol. Reading a
scalar (in a condition, a coordinate, an operand) counts as reading its register.
"""

import math

from cake.ir.v1 import ir_pb2

from compiler.ir import operands, oprefs, phases
from compiler.ir.dtypes import DTYPE_BYTES
from compiler.verify import exprs, threads
from compiler.verify.context import TileUse

SHARED, REGISTER, TENSOR = ir_pb2.MEMORY_SPACE_SHARED, ir_pb2.MEMORY_SPACE_REGISTER, ir_pb2.MEMORY_SPACE_TENSOR

# Generic-proxy writers of shared memory (async-proxy readers need a proxy fence after them).
GENERIC_WRITERS = frozenset(
    ("copy", "fill", "elementwise", "stmatrix", "reduce", "arg_reduce", "top_k", "scan", "tri_solve", "cp_async")
)
# Accesses that read / write an operand, and the source field of the ops whose writers follow their source.
_READS, _WRITES = frozenset((oprefs.R, oprefs.RW)), frozenset((oprefs.W, oprefs.RW))
_SOURCES = {"copy": "src_tile", "stmatrix": "src"}
# Thread builtins a named-barrier index may read without splitting thread classes.
_SPREAD = frozenset(("warp", "warpgroup"))
# The environment key holding what data-dependent conditions evaluate to (no IR name can clash with it).
DATA = "$data"


class Tile:
    """A resolved TileRef: region index, space, stage expression, window; `ring` when a pipeline cycles it.

    `window` is None for the whole tile, else ((start closure, size), ...) per dimension. `grain` says at
    which level the starts differ between threads: None (they read no thread builtin), "warpgroup", "warp"
    or "thread"; a class spanning several of those covers one box per unit (data_ops.DataOps.pieces).
    """

    __slots__ = ("region", "name", "space", "stage", "stages", "ring", "field", "window", "shape", "full", "grain",
                 "deps")

    def __init__(self, index, facts, stage, ring, field, window, grain=None, deps=()):
        self.region = index
        self.name, self.space, self.stages, self.shape, self.full = facts  # the region's (region_facts)
        self.stage = stage  # closure or None (stage 0)
        self.ring = ring
        self.field = field
        self.window = window
        self.grain = grain
        self.deps = deps  # the names other than thread builtins its window reads: with their values, a class
        # covers the same boxes every time

    def box(self, env):
        """The ((start, end), ...) this access covers under env (its thread builtins those of one unit)."""
        if self.window is None:
            return self.full
        out = []
        for fn, size in self.window:
            start = fn(env)
            out.append((start, start + size))
        return tuple(out)


def region_facts(kernel):
    """Per region: (name, space, stages (at least 1), shape, the whole tile's box), read once per kernel."""
    out = []
    for region in kernel.regions:
        shape = tuple(region.shape)
        out.append((region.name, region.space, max(1, region.stages), shape, tuple((0, d) for d in shape)))
    return out


def grain(names):
    """The level ("warpgroup", "warp", "thread") at which values reading thread builtins `names` can differ."""
    names = names & threads.THREAD
    if not names:
        return None
    if names <= {"warpgroup"}:
        return "warpgroup"
    return "warp" if names <= {"warp", "warpgroup"} else "thread"




class BarRef:
    """A resolved BarrierRef: array index, how the slot is named, and the ring terms of round waits.

    For a round, `outer` is the depth of the outermost enclosing loop its expression reads, 0 when it reads
    none (`loops` names the enclosing loops): when that loop or one outside it moves on, the round must grow, or
    it names a completion again; a deeper loop may repeat it (a wait repeated in an inner loop). None outside
    loops."""

    __slots__ = ("array", "name", "mode", "fn", "count", "lag", "outer", "loops")

    def __init__(self, array, name, mode, fn, count, lag, outer=None, loops=()):
        self.array = array
        self.name = name
        self.mode = mode  # "index", "round" or None (slot 0)
        self.fn = fn
        self.count = count
        self.lag = lag
        self.outer = outer
        self.loops = loops


class Node:
    """One op (or control-flow node) of a compiled role body."""

    def __init__(self, kind, path):
        self.kind = kind
        self.path = path
        self.control = kind in ("loop", "branch")  # walked by the model, not executed
        self.collective = None  # "warp", "warpgroup", "role" or None


class _Compiler:
    def __init__(self, ctx, role_index, facts, starts):
        self.ctx = ctx
        self.facts = facts  # region_facts(ctx.kernel)
        self.starts = starts  # window start (serialized) -> (closure, names): shared by the kernel's roles
        self.whole = {}  # (region index, operand field) -> the Tile of the whole unstaged region
        self.role_index = role_index
        self.scalars = ctx.scalars[role_index]  # register scalar name -> region index
        self.values = []  # sync-relevant expressions of the role being compiled
        self.conds = []
        self.loops = []  # (var, counter) of the loops enclosing the node being compiled, outermost first
        self.read = set()  # the names the model reads other than in loop ends and branch conditions (forks.py)

    def expr(self, e, relevant=True):
        if relevant:
            self.values.append(e)
        self.read |= exprs.names(e)
        return exprs.compile_expr(e)

    def tile(self, u):
        """The Tile of TileUse `u` (context.py), None when its region is unknown."""
        if u.hit is None:
            return None
        index = u.hit[0]
        facts = self.facts[index]
        ring = u.name in self.ctx.pipeline_of_region
        if u.stage is None and not u.windows:  # the whole of an unstaged region: nothing to compile, one Tile
            key = (index, u.field)                # for every op that reads or writes it so (Tiles never change)
            found = self.whole.get(key)
            if found is None:
                found = self.whole[key] = Tile(index, facts, None, ring, u.field, None)
            return found
        stage = self.expr(u.stage) if u.stage is not None else None
        window, used = None, set()
        if u.windows and len(u.windows) == len(facts[3]):
            # Kernels repeat a few window starts (`0`, `warpgroup * 64`) over many ops: each is compiled once.
            memo, window = self.starts, []
            for start, size in zip(u.starts, u.sizes):
                key = start.SerializeToString()
                found = memo.get(key)
                if found is None:
                    found = memo[key] = (exprs.compile_expr(start), frozenset(exprs.names(start)))
                window.append((found[0], size))
                used |= found[1]
            window = tuple(window)
            self.read |= used
        return Tile(index, facts, stage, ring, u.field, window, grain(used), tuple(sorted(used - threads.THREAD)))

    def barref(self, ref):
        hit = self.ctx.barriers.get(ref.barrier)
        if hit is None:
            return None
        mode = ref.WhichOneof("slot")
        fn = self.expr(getattr(ref, mode)) if mode else None
        depth, lag = phases.ring_terms(self.ctx.kernel, ref.barrier)
        outer = None
        if mode == "round" and self.loops:
            names = exprs.names(ref.round)
            # A round that reads no enclosing loop must grow with all of them (it cannot: it repeats).
            outer = next((i for i, (var, counter) in enumerate(self.loops) if var in names or counter in names), 0)
        return BarRef(hit[0], ref.barrier, mode, fn, depth, lag, outer, tuple(v for v, _ in self.loops))

    def body(self, ops, prefix):
        out = []
        for j, op in enumerate(ops[:]):  # (a slice: iterating a protobuf container ends in a raised IndexError)
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
            n.start = self.expr(msg.start)
            self.values.append(msg.end)
            n.end, n.end_names = exprs.compile_expr(msg.end), frozenset(exprs.names(msg.end))
            n.step = self.expr(msg.step) if msg.HasField("step") else None
            n.persistent = msg.kind == ir_pb2.LOOP_KIND_PERSISTENT
            self.read |= {name for name in (msg.var, msg.counter) if name}
            if n.persistent:
                self.read |= {"block.x", "grid.x"}
            self.loops.append((msg.var, msg.counter))
            n.body = self.body(msg.body, path + ".body")
            self.loops.pop()
            return n
        if kind == "branch":
            n = Node("branch", path)
            self.conds.append(msg.cond)
            data = self.ctx.data_names(msg.cond, self.role_index)
            n.cond = _data_cond(msg.cond, set(data)) if data else exprs.compile_expr(msg.cond)
            n.cond_names = frozenset(exprs.names(msg.cond))
            if data:
                self.read.add(DATA)
            n.scalar_reads = [(name, (self.scalars[name], 0)) for name in data]
            n.then = self.body(msg.then_body, path + ".then_body")
            n.els = self.body(msg.else_body, path + ".else_body")
            return n
        if kind is None:
            return None
        n = Node(kind, path)
        n.reads, n.writes = [], []
        site = self.ctx.site(path)  # its tiles are computed once for the rules and the model
        if site is not None:
            uses = self.ctx.operands(site)
        else:
            uses = [TileUse(f, ref, a, self.ctx.regions) for f, ref, a in oprefs.tiles(kind, msg)]
        for u in uses:
            t = self.tile(u)
            if t is None:
                continue
            if kind == "mma" and u.field == "acc":
                n.acc = t
                continue
            if u.access in _READS:
                n.reads.append(t)
            if u.access in _WRITES:
                n.writes.append(t)
        for name in sorted(self.ctx.names_read(path, msg) & self.scalars.keys()) if self.scalars else ():
            index = self.scalars[name]
            n.reads.append(Tile(index, self.facts[index], None, False, "expression", None))
        n.collective = oprefs.collective(kind, msg)
        n.generic = kind in GENERIC_WRITERS
        n.write_unit = self.write_unit(kind, msg)
        # Ops on unstaged registers only touch their own class's state (the model's fast path).
        n.registers_only = True  # (a loop: all() over a generator that stops early closes it with an exception)
        for t in n.reads + n.writes:
            if t.space != REGISTER or t.stage is not None:
                n.registers_only = False
                break
        n.register_reads = [((t.region, 0), t) for t in n.reads] if n.registers_only else []
        n.register_writes = [(t.region, 0) for t in n.writes] if n.registers_only else []
        handler = _EXTRAS.get(kind)  # (a table: a getattr that misses raises, and most kinds have no extras)
        if handler is not None and handler(self, n, msg) is False:
            return None
        return n

    def write_unit(self, kind, msg):
        """Who writes which part of the op's destination: "warpgroup", "warp", "thread" (each writes its own
        part, or the whole of it), or None (the executing threads cooperatively, once)."""
        if kind == "tma_load":
            return "thread"  # every issuing thread loads the whole box
        src = _SOURCES.get(kind)
        if src is None or not msg.HasField(src):
            return None
        region = self.ctx.region(getattr(msg, src).region)
        if region is None or region.space != REGISTER:
            return None
        holder = operands.HOLDER.get(region.layout)
        return None if holder == "row" else holder  # the rows of a ROW_PER_THREAD tile tile their destination

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
        decl = n.decl = hit[1]  # what the model reads of the declaration at every sync, read once
        n.is_named, n.count = decl.kind == ir_pb2.BARRIER_KIND_NAMED, max(1, decl.count)
        n.index, n.spread = None, False
        if msg.HasField("index"):
            # An index over warps or warpgroups need not split thread classes: the model spreads a class's
            # threads over the barriers their warps reach (sync_ops.named_targets).
            names = exprs.names(msg.index)
            used = names & threads.THREAD
            n.spread = bool(used) and used <= _SPREAD
            n.index = self.expr(msg.index, relevant=not n.spread)
            n.index_deps = tuple(sorted(names - threads.THREAD))  # with their values, a class's spread is known

    _named_barrier_arrive = _named_barrier_sync

    def _mma(self, n, msg):
        if not hasattr(n, "acc"):
            return False
        n.mkind = msg.kind
        n.accumulate = self.expr(msg.accumulate) if msg.HasField("accumulate") else (lambda env: 0)

    def _mma_wait(self, n, msg):
        n.pending = msg.pending

    def _bulk_wait(self, n, msg):
        n.pending = msg.pending

    def _cp_async_wait(self, n, msg):
        n.pending = msg.pending

    def _fence(self, n, msg):
        n.fkind = msg.kind


# op kind -> its _Compiler extras (_<kind>), for the kinds that have some.
_EXTRAS = {name[1:]: fn for name, fn in vars(_Compiler).items()
           if name.startswith("_") and not name.startswith("__") and callable(fn)}


def _data_cond(expr, data, depth=0):
    """A closure for a condition reading the register scalars `data`: and/or combine their operands (both
    evaluated, as compile_expr does); any other part that reads a scalar is env[DATA]; the rest evaluates."""
    b = expr.binary if expr.WhichOneof("kind") == "binary" else None
    if b is not None and b.op in (exprs.OP.BINARY_OP_AND, exprs.OP.BINARY_OP_OR) and depth <= exprs.MAX_DEPTH:
        lhs, rhs = _data_cond(b.lhs, data, depth + 1), _data_cond(b.rhs, data, depth + 1)
        if b.op == exprs.OP.BINARY_OP_AND:
            return lambda env: int(bool(lhs(env)) & bool(rhs(env)))
        return lambda env: int(bool(lhs(env)) | bool(rhs(env)))
    if exprs.names(expr) & data:
        return lambda env: env[DATA]
    return exprs.compile_expr(expr)


def _box_elements(ref, region):
    if ref.window:
        return math.prod(max(0, w.size) for w in ref.window)
    return math.prod(max(0, d) for d in region.shape)


def compile_roles(ctx):
    """([(nodes, conds, values)] per role: the compiled body and the expressions that split its threads; the names
    the bodies read other than in loop ends and branch conditions: inputs that differ in no other name run alike
    until a loop's trips or a branch's arm differ, forks.py)."""
    out, facts, read, starts = [], region_facts(ctx.kernel), set(), {}
    for i, role in enumerate(ctx.kernel.roles):
        c = _Compiler(ctx, i, facts, starts)
        nodes = c.body(role.body, "kernel.roles[%d].body" % i)
        out.append((nodes, c.conds, c.values))
        read |= c.read
    return out, frozenset(read)
