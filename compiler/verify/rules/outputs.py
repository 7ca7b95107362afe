"""Output rules: every element of every write-only output is written, and exactly once.

The check runs on one valid input on which each symbol of a loop bound or grid dimension doubles that loop's
trips or that dimension's blocks (protocol/inputs.py, Binder.spread; a persistent launch is two blocks sharing
the tiles). It walks every block's role bodies (the loops and branches holding output writes; conditions on
thread builtins are evaluated per thread group) and turns each write into boxes of tensor elements, clipped to
the tensor as lowering clips them. Who writes which part of a tile follows its source (compiler/ir/operands.py,
HOLDER): warp w of a warpgroup rows 16 (w % 4) .. + 16 of a WGMMA fragment, a warp all of an MMA or WGMMA_COLS
fragment, thread t row t of a ROW_PER_THREAD fragment and every thread all of a PER_THREAD one, the role's threads
a shared tile together (a cooperative copy), every issuing thread a TMA store's box.

Two boxes sharing an element are a write-write overlap (CAKE-DATA-007), elements no box covers a hole
(CAKE-CONTRACT-010). Outputs that atomics update, or that are written at data-dependent coordinates or
under data-dependent conditions, are accumulations or unprovable and are left alone.
"""

import itertools
import math

from cake.ir.v1 import ir_pb2

from compiler.ir import operands, oprefs
from compiler.ir.shapes import tile_shape
from compiler.verify import exprs, threads
from compiler.verify.protocol import findings
from compiler.verify.registry import Finding, rule
from compiler.verify.report import path_key

C = ir_pb2
# Blocks walked at most, loop iterations and thread groups visited at most, and cells of an output at most,
# before the check gives up (it stays cheap on any input).
MAX_BLOCKS = 64
MAX_WORK = 50000
MAX_CELLS = 1 << 16
# Blocks of a persistent launch: two, so that tiles are shared out as on a real GPU.
PERSISTENT_BLOCKS = 2
_LANE_LEVEL = frozenset(("thread", "lane"))


class _GiveUp(Exception):
    """The walk would cost more than MAX_WORK: the check is left undone."""


class _Writer:
    """One op writing an output: its tile's shape, who writes which part of it, where."""

    def __init__(self, ctx, site, g):
        self.site, self.path, self.param = site, site.path, g.param
        self.role = site.role_index
        self.coords = [exprs.compile_expr(c) for c in g.coords[:]]
        self.conds = [(exprs.compile_expr(c), taken) for c, taken in site.conds if exprs.names(c) & threads.THREAD]
        tile = site.msg.src if site.kind == "tma_store" else site.msg.src_tile
        region = ctx.region(tile.region)
        self.resolved = region is not None and site.msg.HasField("src" if site.kind == "tma_store" else "src_tile")
        self.shape = tile_shape(tile, region) if self.resolved else []
        self.whole = [(0, d) for d in self.shape]  # per-dim (start, size) of the whole tile (parts only read it)
        if not self.resolved:
            self.unit = None
        elif site.kind == "tma_store":
            self.unit = "issuer"
        elif region.space == C.MEMORY_SPACE_REGISTER:
            self.unit = operands.HOLDER.get(region.layout, "thread")
        else:
            self.unit = "role"
        used, read = set(), set()
        for c, _ in site.conds:
            used |= exprs.names(c)
        for c in g.coords[:]:
            read |= exprs.names(c)
        used = (used | read) & threads.THREAD
        self.thread_coords = bool(read & threads.THREAD)  # else every thread group writes at one origin
        self.grain = "thread" if used & _LANE_LEVEL else "elected" if "elected" in used else "warp"


def _writers(ctx):
    """param name -> [_Writer] for the write-only outputs this check can prove; atomics and data-dependent writes
    leave their param out."""
    out, skip = {}, set()
    for site in ctx.ops:
        if site.msg is None:
            continue
        for _, g, access in site.globals():
            if access == oprefs.R:
                continue
            hit = ctx.params.get(g.param)
            if hit is None or hit[1].access != C.ACCESS_WRITE:
                continue
            data = any(ctx.data_names(c, site.role_index) for c in g.coords) or any(
                ctx.data_names(c, site.role_index) for c, _ in site.conds)
            if site.kind not in ("copy", "tma_store") or data or (site.kind == "copy" and site.msg.HasField("src_global")):
                skip.add(g.param)
                continue
            w = _Writer(ctx, site, g)
            if not w.resolved:
                skip.add(g.param)
                continue
            out.setdefault(g.param, []).append(w)
    return {name: ws for name, ws in out.items() if name not in skip}


class _Walk:
    """Walks the role bodies of one block, collecting the boxes the writers write."""

    def __init__(self, ctx, writers, env):
        self.ctx, self.env = ctx, env
        self.by_path = {w.path: w for ws in writers.values() for w in ws}
        self.inside = set()  # loops and branches holding a writer: every prefix of a writer's path ending there
        for path in self.by_path:
            for word in (".loop", ".branch"):
                i = path.find(word)
                while i >= 0:
                    self.inside.add(path[: i + len(word)])
                    i = path.find(word, i + 1)
        self.pieces = []  # (param, origin, per-dim (start, size) in the tile, op path, who (a _Who))
        self.compiled = {}
        self.plans = {}  # body prefix -> _plan
        self.groups = {}  # (grain, role) -> _groups
        self.work = 0

    def block(self, label):
        for i, role in enumerate(self.ctx.kernel.roles):
            if any(w.role == i for w in self.by_path.values()):
                self._body(role.body, "kernel.roles[%d].body" % i, i, [], label)

    def _body(self, ops, prefix, role, loops, label):
        env = self.env
        for what, path, m, per_thread in self._plan(ops, prefix):
            if what == "loop":
                start, end = self._value(path, "start", m), self._value(path, "end", m)
                step = self._value(path, "step", m) if m.HasField("step") else 1
                if m.kind == C.LOOP_KIND_PERSISTENT:
                    start, step = start + env["block.x"], env["grid.x"]
                if step <= 0:
                    continue
                var, counter, body = m.var, m.counter, m.body
                for i, v in enumerate(range(start, end, step)):
                    self._spend(1)
                    env[var] = v
                    if counter:
                        env[counter] = i
                    self._body(body, path + ".body", role, loops + [(var, v)], label)
            elif what == "branch":
                if per_thread:  # decided per thread when the write runs
                    self._body(m.then_body, path + ".then_body", role, loops, label)
                    self._body(m.else_body, path + ".else_body", role, loops, label)
                else:
                    taken = self._value(path, "cond", m)
                    arm = ("then_body", m.then_body) if taken else ("else_body", m.else_body)
                    self._body(arm[1], "%s.%s" % (path, arm[0]), role, loops, label)
            else:
                self._write(m, role, loops, label)

    def _plan(self, ops, prefix):
        """The ops of the body at `prefix` the walk acts on, found once: (what, path, loop or branch message or
        _Writer, whether a branch is decided per thread); the others hold no output write."""
        plan = self.plans.get(prefix)
        if plan is None:
            plan = self.plans[prefix] = []
            for j, op in enumerate(ops[:]):  # (a slice: iterating a protobuf container ends in a raised IndexError)
                kind = op.WhichOneof("kind")
                path = "%s[%d].%s" % (prefix, j, kind)
                if kind == "loop" and path in self.inside:
                    plan.append(("loop", path, op.loop, False))
                elif kind == "branch" and path in self.inside:
                    plan.append(("branch", path, op.branch, bool(exprs.names(op.branch.cond) & threads.THREAD)))
                elif path in self.by_path:
                    plan.append(("write", path, self.by_path[path], False))
        return plan

    def _spend(self, work):
        self.work += work
        if self.work > MAX_WORK:
            raise _GiveUp()

    def _value(self, path, field, msg):
        fn = self.compiled.get((path, field))
        if fn is None:
            fn = self.compiled[(path, field)] = exprs.compile_expr(getattr(msg, field))
        return fn(self.env)

    def _groups(self, w, role):
        """(builtins, first thread, threads) of the role's threads at the writer's grain (computed once)."""
        found = self.groups.get((w.grain, role))
        if found is None:
            found = self.groups[w.grain, role] = self._grouped(w, role)
        return found

    def _grouped(self, w, role):
        n = self.ctx.spans[role].threads
        if w.grain == "thread":
            return [(threads.builtins_of(t), t, 1) for t in range(n)]
        out = []
        for first in range(0, n, 32):
            if w.grain == "elected":
                out += [(threads.builtins_of(first), first, 1), (threads.builtins_of(first + 1), first + 1, 31)]
            else:
                out.append((threads.builtins_of(first), first, 32))
        return out

    def _write(self, w, role, loops, label):
        env = self.env
        where = (label, tuple(loops))
        found, running = [], 0
        groups = self._groups(w, role)
        self._spend(len(groups))
        param, path, conds, coords, thread_coords, origin = w.param, w.path, w.conds, w.coords, w.thread_coords, None
        for b, first, count in groups:
            env.update(b)  # thread builtins: no loop bound or thread-independent condition reads them
            if conds:
                passed = True
                for fn, taken in conds:  # (a loop: all() stopping early raises in its generator)
                    if bool(fn(env)) != taken:
                        passed = False
                        break
                if not passed:
                    continue
            running += count
            if origin is None or thread_coords:  # (coordinates that read no builtin: the first group's)
                origin = [fn(env) for fn in coords]
            for offsets, copies, unit in _parts(w, b, first, count):
                if copies == 1:
                    found.append((param, origin, offsets, path, _Who(where, unit)))
                else:
                    found += [(param, origin, offsets, path, _Who(where, first + k)) for k in range(copies)]
        if w.unit == "role":
            # The role's threads copy a shared tile together; part of them write only their share of it.
            found = found[:1] if running == self.ctx.spans[role].threads else []
        self.pieces += found


class _Who:
    """Which block, loop iteration and threads wrote a box; worded only for a finding (the walk makes many)."""

    __slots__ = ("where", "who")

    def __init__(self, where, who):
        self.where, self.who = where, who  # (block label, ((loop var, value), ...)); words, (format, values...) or a
        # thread number

    def __str__(self):
        label, loops = self.where
        who = self.who
        if isinstance(who, tuple):  # _parts' (format, values...), worded here
            who = who[0] % who[1:]
        elif not isinstance(who, str):
            who = "thread %d" % who
        return "%s, %s" % (label + "".join(", %s=%d" % lv for lv in loops), who)


def _parts(w, b, first, count):
    """[(per-dim (start, size) within the tile, copies, who)] that threads [first, first + count) write; who is
    (format, values...), worded only for a finding (_Who)."""
    whole = w.whole
    warp = b["warp"]
    if w.unit == "warpgroup":
        if count != 32 or not w.shape:
            return []
        rows = operands.WGMMA_WARP_ROWS
        return [([(rows * (warp % 4), rows)] + whole[1:], 1, ("warp %d of warpgroup %d", warp, warp // 4))]
    if w.unit == "warp":
        return [(whole, 1, ("warp %d", warp))] if count == 32 else []
    if w.unit == "row":
        return [([(first, count)] + whole[1:], 1, ("threads %d..%d", first, first + count - 1))] if w.shape else []
    if w.unit in ("thread", "issuer"):
        return [(whole, count, ("thread %d", first))]
    return [(whole, 1, "its role's threads")]


def _box(dims, origin, offsets):
    """The tensor box (per-dim [lo, hi)) a tile part covers, clipped to the tensor; None when it is outside."""
    lead = len(dims) - len(offsets)
    if lead < 0:
        return None
    box = []
    for d in range(lead):  # the dimensions the tile does not span: one index each
        lo, size = origin[d], dims[d]
        if lo < 0 or lo >= size:
            return None
        box.append((lo, lo + 1))
    for d, (start, extent) in enumerate(offsets, lead):
        lo = origin[d] + start
        hi = lo + extent
        size = dims[d]
        if lo < 0:
            lo = 0
        if hi > size:
            hi = size
        if lo >= hi:
            return None
        box.append((lo, hi))
    return box


def _blocks(ctx, env):
    launch = ctx.kernel.launch
    if launch.persistent:
        return [((b, 0, 0), "block %d" % b) for b in range(PERSISTENT_BLOCKS)], (PERSISTENT_BLOCKS, 1, 1)
    grid = [max(0, exprs.evaluate(g, env)) for g in launch.grid[:3]] + [1] * (3 - min(3, len(launch.grid)))
    if math.prod(grid) > MAX_BLOCKS:
        return None, grid
    out = []
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                out.append(((x, y, z), "block (%d, %d, %d)" % (x, y, z) if grid[2] > 1 else "block (%d, %d)" % (x, y)))
    return out, grid


def _check(ctx):
    """The first overlap or hole as (kind, Finding), or None."""
    writers = _writers(ctx)
    if not writers:
        return None
    symbols = ctx.binder.spread(2)
    if symbols is None:
        return None
    env = ctx.binder.environment(symbols, PERSISTENT_BLOCKS)
    blocks, grid = _blocks(ctx, env)
    if blocks is None:
        return None
    for axis, size in zip("xyz", grid):
        env["grid." + axis] = size
    walk = _Walk(ctx, writers, env)
    for (x, y, z), label in blocks:
        env["block.x"], env["block.y"], env["block.z"] = x, y, z
        walk.block(label)
    inputs = ", ".join("%s=%d" % (n, symbols[n]) for n in ctx.symbols if n in symbols)
    pieces = {}
    for p in walk.pieces:
        pieces.setdefault(p[0], []).append(p)
    for name, ws in writers.items():
        found = _param(ctx, name, ws, pieces.get(name, []), env, inputs)
        if found:
            return found
    return None


def _param(ctx, name, ws, pieces, env, inputs):
    """The first overlap or hole among the boxes written into output `name`, as (kind, Finding), or None.

    The boxes' edges cut the tensor into cells that each box covers wholly or not at all; each cell must be
    covered exactly once."""
    index, param = ctx.params[name]
    dims = [exprs.evaluate(d, env) for d in param.shape]
    boxes = []
    for _, origin, offsets, path, label in pieces:
        box = _box(dims, origin, offsets)
        if box is not None:
            boxes.append((box, path, label))
    cuts = []
    per_dim = list(zip(*[b[0] for b in boxes])) if boxes else [()] * len(dims)  # every box's (lo, hi), per dim
    for size, spans in zip(dims, per_dim):
        edges = {0, size}
        edges.update(*spans)
        cuts.append(sorted(edges))
    where = [{c: i for i, c in enumerate(axis)} for axis in cuts]
    cells = math.prod(len(axis) - 1 for axis in cuts)
    if cells > MAX_CELLS:
        return None
    decl = (("`%s` is declared here" % name, "kernel.params[%d]" % index),)
    owner = {}
    for box, path, label in sorted(boxes, key=lambda b: (path_key(b[1]), b[0])):
        spans = [range(where[d][lo], where[d][hi]) for d, (lo, hi) in enumerate(box)]
        for cell in itertools.product(*spans):
            first = owner.get(cell)
            if first is None:
                owner[cell] = (path, label)
                continue
            element = "element %s%s" % (name, [cuts[d][c] for d, c in enumerate(cell)])
            if first[0] == path:
                message = "writes %s twice, by %s and by %s" % (element, first[1], label)
                notes = decl
            else:
                message = "writes %s (%s), which another op also writes (%s)" % (element, label, first[1])
                notes = (("the other write", first[0]),) + decl
            return "overlap", Finding(
                path, message + ": every element of an output is written exactly once (found with %s)" % inputs, notes)
    # The cells boxes cover are the tensor's: with as many owners as it has cells, none is a hole.
    for cell in itertools.product(*(range(len(axis) - 1) for axis in cuts)) if len(owner) < cells else ():
        if cell not in owner:
            written = sum(math.prod(hi - lo for lo, hi in box) for box, _, _ in boxes)
            return "hole", Finding(
                min((w.path for w in ws), key=path_key),
                "leaves element %s%s of the write-only output `%s` %s unwritten: its writes cover %d of its %d "
                "elements (found with %s)" % (name, [cuts[d][c] for d, c in enumerate(cell)], name, dims, written,
                                              math.prod(dims), inputs),
                decl,
            )
    return None


def result(ctx):
    """The outputs check's finding ((kind, Finding) or None), computed once; gated like the protocol model."""
    cached = getattr(ctx, "_outputs_result", False)
    if cached is not False:
        return cached
    out = None
    if not findings.gated(ctx) and ctx.block_threads_in_range:
        try:
            out = _check(ctx)
        except (exprs.ExprError, _GiveUp):  # an undefined bound (CAKE-CONTRACT-009's to report), or too big
            out = None
    ctx._outputs_result = out
    return out


@rule(
    "CAKE-CONTRACT-010", "contract", "error",
    doc="Every element of every write-only output is written, for the contract's shapes (checked on an input on "
    "which each symbol of a loop bound or grid dimension doubles its loop's trips or its dimension's blocks; "
    "clipped edge tiles count as written where they lie inside the tensor).",
    fix_hint="Make the writes tile the output: every block, warpgroup, warp or thread writes its own part, and the "
    "grid, the loops and the tile origins together reach every element.",
    model=True,
)
def outputs_covered(ctx):
    found = result(ctx)
    if found and found[0] == "hole":
        yield found[1]
