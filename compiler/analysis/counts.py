"""Work counts of a schedule: flops by instruction family and bytes by memory level, per block.

Each role's body is walked with its loop trip counts evaluated at the shape
binding and a representative block (the middle one of the grid; thread builtins
at thread 0 of an elected lane). Ops are tile-level: one execution moves or
computes its whole tile once, except that a register tile is per warpgroup,
warp or thread as its fragment layout says, and so counts once per such unit of
the executing role (`tiles.units`).

- Loops multiply their body's counts by the trip count. When control flow inside
  the body (a nested bound, a branch condition) mentions the loop variable, the
  body is counted per iteration: every iteration for up to ENUMERATE trips, else
  the first, the middle (weighted trips - 2) and the last; past a budget of
  BUDGET op visits, only the middle. Persistent loops count tiles / launched
  blocks iterations per block (the average block).
- Branches whose condition names a thread builtin (thread, warp, lane, elected,
  ...) select threads, not work: both arms count; so do branches on register data
  (a register scalar, compiler/ir/scalars.py), whose arm no shape decides. Others
  are evaluated and the taken arm counts.
- FLOPs: mma 2*m*n*k per tile op (by family and dtype); elementwise, reduce,
  arg_reduce, top_k, top_k_collect, top_k_select, scan and tri_solve by per-element instruction costs
  (ELEMENTWISE_COST and the per-op rules below), split into CUDA-core flops
  ("fp32") and SFU operations ("sfu").
- Bytes: global reads (TMA, cp.async, copies from global) and writes (TMA stores,
  copies to global, atomics) per tensor param; shared traffic from MMA operands
  in shared memory, ldmatrix/stmatrix, fills and copies touching shared memory
  (TMA and cp.async writes into shared memory are not counted: they do not
  compete for the SM's shared-memory pipe the same way); tensor-memory reads.
"""

from cake.ir.v1 import ir_pb2

from compiler.analysis import tiles
from compiler.analysis.errors import AnalysisError, as_float, evaluate
from compiler.ir import enums, scalars, shapes
from compiler.ir import topk as topk_ir
from compiler.ir import expr as ir_expr

ENUMERATE = 64
BUDGET = 20000

FAMILIES = {
    ir_pb2.MMA_KIND_MMA_SYNC: "mma_sync",
    ir_pb2.MMA_KIND_WGMMA: "wgmma",
    ir_pb2.MMA_KIND_TCGEN05: "tcgen05",
}

THREAD_BUILTINS = frozenset({"thread", "warp", "warpgroup", "lane", "elected", "cluster.rank"})
_THREAD_ENV = {"thread": 0, "warp": 0, "warpgroup": 0, "lane": 0, "elected": 1, "cluster.rank": 0}

_DTYPE_NAMES = {d: enums.short_name(ir_pb2.Dtype.DESCRIPTOR, d) for d in tiles.DTYPE_BYTES}

E = ir_pb2.ElementwiseOp
# (CUDA-core flops, SFU operations) per destination element.
ELEMENTWISE_COST = {
    E.ELEMENTWISE_OP_COPY: (1, 0),
    E.ELEMENTWISE_OP_ADD: (1, 0),
    E.ELEMENTWISE_OP_SUB: (1, 0),
    E.ELEMENTWISE_OP_MUL: (1, 0),
    E.ELEMENTWISE_OP_DIV: (4, 1),  # rcp.approx + Newton refinement
    E.ELEMENTWISE_OP_FMA: (2, 0),
    E.ELEMENTWISE_OP_MAX: (1, 0),
    E.ELEMENTWISE_OP_MIN: (1, 0),
    E.ELEMENTWISE_OP_NEG: (1, 0),
    E.ELEMENTWISE_OP_EXP: (1, 1),  # scale by log2(e), ex2
    E.ELEMENTWISE_OP_LOG: (1, 1),  # lg2, scale by ln(2)
    E.ELEMENTWISE_OP_SQRT: (3, 1),  # rsqrt + refinement
    E.ELEMENTWISE_OP_RSQRT: (0, 1),
    E.ELEMENTWISE_OP_SIGMOID: (3, 2),  # ex2, add, rcp
    E.ELEMENTWISE_OP_SOFTPLUS: (3, 2),  # ex2, add, lg2
    E.ELEMENTWISE_OP_LT: (1, 0),
    E.ELEMENTWISE_OP_LE: (1, 0),
    E.ELEMENTWISE_OP_SELECT: (1, 0),
    E.ELEMENTWISE_OP_ABS: (1, 0),
}

# Combining steps across threads per result element, by reduction scope
# (butterfly shuffles: 4 lanes of a quad, 32 lanes of a warp, then through shared memory).
_SCOPE_STEPS = {
    ir_pb2.SCOPE_THREAD: 0,
    ir_pb2.SCOPE_LANES: 2,
    ir_pb2.SCOPE_WARP: 5,
    ir_pb2.SCOPE_WARPGROUP: 7,
    ir_pb2.SCOPE_ROLE: 10,
}
_THROUGH_SHARED = {ir_pb2.SCOPE_WARPGROUP, ir_pb2.SCOPE_ROLE}


def _add(into, other, times=1.0):
    for key, value in other.items():
        into[key] = into.get(key, 0.0) + value * times


class _Walker:
    """Counts one kernel's ops; `tiles` collects the persistent loops' work-tile counts."""

    def __init__(self, kernel, launched):
        self.kernel = kernel
        self._role_scalars = {}
        self.regions = {r.name: r for r in kernel.regions}
        self.params = {p.name: p for p in kernel.params}
        self.launched = launched
        self.budget = BUDGET
        self.tiles = 0.0
        self._deps = {}

    def _scalars(self, role):
        """Names of the register scalars `role` owns (data its branches may test)."""
        found = self._role_scalars.get(role.name)
        if found is None:
            found = self._role_scalars[role.name] = frozenset(scalars.role_scalars(self.kernel, role.name))
        return found

    # -- sizes -----------------------------------------------------------------

    def _tile(self, ref, role):
        """(region, elements over all units) of a TileRef; (None, 0) for an unknown region."""
        region = self.regions.get(ref.region)
        if region is None:
            return None, 0.0
        return region, tiles.elements(shapes.tile_shape(ref, region)) * tiles.units(region, role)

    def _global_bytes(self, param_name, elements):
        param = self.params.get(param_name)
        return 0.0 if param is None else elements * tiles.dtype_bytes(param.dtype)

    # -- control flow ------------------------------------------------------------

    def body(self, ops, env, path, role):
        self.budget -= len(ops)
        out = {}
        for i, op in enumerate(ops):
            _add(out, self.op(op, env, "%s[%d]" % (path, i), role))
        return out

    def _control_symbols(self, loop):
        """Symbols that loop bounds and branch conditions inside `loop`'s body mention."""
        key = id(loop)
        if key not in self._deps:
            found = set()
            stack = list(loop.body)
            while stack:
                op = stack.pop()
                kind = op.WhichOneof("kind")
                if kind == "loop":
                    for e in (op.loop.start, op.loop.end, op.loop.step):
                        found |= ir_expr.symbols(e)
                    stack.extend(op.loop.body)
                elif kind == "branch":
                    found |= ir_expr.symbols(op.branch.cond)
                    stack.extend(op.branch.then_body)
                    stack.extend(op.branch.else_body)
            self._deps[key] = (loop, found)  # keep `loop` alive so its id stays unique
        return self._deps[key][1]

    def loop(self, loop, env, path, role):
        start = evaluate(loop.start, env, path + ".start")
        end = evaluate(loop.end, env, path + ".end")
        if loop.kind == ir_pb2.LOOP_KIND_PERSISTENT:
            # var = start + block.x + i * grid.x: the average block runs tiles / launched iterations.
            tiles_total = as_float(max(0, end - start), path + ".end")
            self.tiles = max(self.tiles, tiles_total)
            trips = tiles_total / self.launched
            step, first = self.launched, start + env.get("block.x", 0)
        else:
            step = evaluate(loop.step, env, path + ".step") if loop.HasField("step") else 1
            if step <= 0:
                raise AnalysisError("%s.step: the step is %d; a loop needs a positive step" % (path, step))
            trips = max(0, -(-(end - start) // step))
            first = start
            as_float(trips, path + ".end")
        if trips == 0:
            return {}
        names = {loop.var, loop.counter} - {""}

        def at(i):
            return {**env, loop.var: first + i * step, loop.counter: i}

        if not names & self._control_symbols(loop):
            counts = self.body(loop.body, at(0), path + ".body", role)
            return {k: v * float(trips) for k, v in counts.items()}
        out = {}
        for i, weight in self._samples(trips):
            _add(out, self.body(loop.body, at(i), path + ".body", role), weight)
        return out

    def _samples(self, trips):
        """(iteration, weight) pairs whose weighted counts stand for all `trips` iterations."""
        whole = int(trips)
        if self.budget <= 0 or whole != trips:
            return [(whole // 2, float(trips))]
        if whole <= ENUMERATE:
            return [(i, 1.0) for i in range(whole)]
        return [(0, 1.0), (whole // 2, float(whole - 2)), (whole - 1, 1.0)]

    def branch(self, branch, env, path, role):
        names = ir_expr.symbols(branch.cond)
        if names & THREAD_BUILTINS or names & self._scalars(role):
            arms = [("then_body", branch.then_body), ("else_body", branch.else_body)]
        elif evaluate(branch.cond, env, path + ".cond"):
            arms = [("then_body", branch.then_body)]
        else:
            arms = [("else_body", branch.else_body)]
        out = {}
        for name, ops in arms:
            _add(out, self.body(ops, env, "%s.%s" % (path, name), role))
        return out

    # -- ops ---------------------------------------------------------------------

    def op(self, op, env, path, role):
        kind = op.WhichOneof("kind")
        if kind == "loop":
            return self.loop(op.loop, env, path + ".loop", role)
        if kind == "branch":
            return self.branch(op.branch, env, path + ".branch", role)
        handler = getattr(self, "_" + kind, None) if kind else None
        self.env = env  # the binding, for ops sized by tensor dims (rescore)
        return handler(getattr(op, kind), role) if handler else {}

    def _tma_load(self, op, role):
        _, n = self._tile(op.dst, role)
        return {"read:" + op.src.param: self._global_bytes(op.src.param, n), "tma_loads": 1.0}

    def _cp_async(self, op, role):
        _, n = self._tile(op.dst, role)
        return {"read:" + op.src.param: self._global_bytes(op.src.param, n)}

    def _tma_store(self, op, role):
        _, n = self._tile(op.src, role)
        return {"write:" + op.dst.param: self._global_bytes(op.dst.param, n)}

    def _shared_bytes(self, region, n):
        if region is None or region.space != ir_pb2.MEMORY_SPACE_SHARED:
            return 0.0
        return n * tiles.dtype_bytes(region.dtype)

    def _copy(self, op, role):
        src, dst = op.WhichOneof("src"), op.WhichOneof("dst")
        if src == "src_tile" and dst == "dst_tile":
            a, n = self._tile(op.src_tile, role)
            b, _ = self._tile(op.dst_tile, role)
            return {"shared": self._shared_bytes(a, n) + self._shared_bytes(b, n)}
        if src == "src_global" and dst == "dst_tile":
            region, n = self._tile(op.dst_tile, role)
            param = op.src_global.param
            return {"read:" + param: self._global_bytes(param, n), "shared": self._shared_bytes(region, n)}
        if src == "src_tile" and dst == "dst_global":
            region, n = self._tile(op.src_tile, role)
            param = op.dst_global.param
            return {
                "write:" + param: self._global_bytes(param, n),
                "shared": self._shared_bytes(region, n),
                "epilogue": n,
            }
        return {}  # global -> global has no tile to size it by

    def _ldmatrix(self, op, role):
        shared, _ = self._tile(op.src, role)
        _, n = self._tile(op.dst, role)
        return {"shared": self._shared_bytes(shared, n)}

    def _stmatrix(self, op, role):
        _, n = self._tile(op.src, role)
        shared, _ = self._tile(op.dst, role)
        return {"shared": self._shared_bytes(shared, n)}

    def _mma(self, op, role):
        family = FAMILIES.get(op.kind)
        acc = self.regions.get(op.acc.region)
        if family is None or acc is None:
            return {}
        acc_shape = shapes.tile_shape(op.acc, acc)
        if len(acc_shape) < 2:
            return {}
        m, n = max(0, acc_shape[-2]), max(0, acc_shape[-1])
        k, dtype = self._reduction_length(op.a, op.a_major)
        if k is None:  # no usable A: B [N, K] or [K, N] tells K too
            k, dtype = self._reduction_length(op.b, op.b_major)
        # One tile op per unit holding an accumulator (each warpgroup's wgmma reads its
        # own operand tiles from shared memory).
        units = tiles.units(acc, role)
        # Each instruction reads its whole A slab: a wgmma split into instructions of instr_shape's N reads A
        # once per instruction (lowering, compiler/lower/ops_matrix.py).
        step = op.instr_shape[1] if family == "wgmma" and len(op.instr_shape) == 3 else 0
        a_reads = n // step if step > 0 and n % step == 0 else 1
        shared = 0.0
        for ref, reads in ((op.a, a_reads), (op.b, 1)):
            region, elems = self._tile(ref, role)
            if region is not None and region.space == ir_pb2.MEMORY_SPACE_SHARED:
                shared += self._shared_bytes(region, elems) * units * reads
        key = "mma:%s:%s" % (family, _DTYPE_NAMES.get(dtype, "unspecified"))
        return {key: 2.0 * m * n * (k or 0) * units, "shared": shared}

    def _reduction_length(self, ref, major):
        """(K, dtype) of an MMA operand tile: K-major [rows, K], MN-major [K, rows]; (None, None) if unknown."""
        region = self.regions.get(ref.region)
        if region is None or len(region.shape) < 2:
            return None, None
        shape = shapes.tile_shape(ref, region)
        if len(shape) < 2:  # a window short of the region's dims (the verifier's error)
            return None, None
        return max(0, shapes.mma_dims(shape, major)[1]), region.dtype

    def _tmem_load(self, op, role):
        region, n = self._tile(op.src, role)
        return {"tensor_memory": n * tiles.dtype_bytes(region.dtype) if region else 0.0}

    def _fill(self, op, role):
        region, n = self._tile(op.dst, role)
        return {"shared": self._shared_bytes(region, n)}

    def _elementwise(self, op, role):
        _, n = self._tile(op.dst, role)
        flops, sfu = ELEMENTWISE_COST.get(op.op, (1, 0))
        return {"fp32": flops * n, "sfu": sfu * n}

    def _combine(self, src, dst, scope, role, per_element, per_step):
        """Counts of a reduction-like op: per_element ops per input, per_step per result and step."""
        _, n_src = self._tile(src, role)
        dst_region, n_dst = self._tile(dst, role)
        steps = _SCOPE_STEPS.get(scope, 0)
        out = {"fp32": per_element * n_src + per_step * steps * n_dst}
        if scope in _THROUGH_SHARED and dst_region is not None:
            out["shared"] = 2.0 * n_dst * tiles.dtype_bytes(dst_region.dtype)
        return out

    def _reduce(self, op, role):
        return self._combine(op.src, op.dst, op.scope, role, 1, 2)

    def _arg_reduce(self, op, role):
        return self._combine(op.src, op.values, op.scope, role, 3, 3)

    def _top_k(self, op, role):
        if not topk_ir.is_merge(op):
            # Most scores lose the comparison against the list's threshold (a compare and the
            # vote's or): insertions are rare once the lists hold good entries.
            return self._combine(op.src, op.values, ir_pb2.SCOPE_THREAD, role, 2, 0)
        # A merge step is a bitonic merge: log2(P) + 1 compare-exchanges (4 ops) per entry.
        _, n = self._tile(op.values, role)
        p = 1 << max(0, int(op.k) - 1).bit_length()
        per_step = 4.0 * (p.bit_length() + 1)
        steps = {ir_pb2.SCOPE_LANES: 3, ir_pb2.SCOPE_WARP: 5}.get(op.scope, p.bit_length())
        return {"fp32": n * per_step * steps}

    def _rescore(self, op, role):
        # Per entry: one database row of D features gathered and reduced (an fma per feature).
        param = self.params.get(op.database.param)
        _, n = self._tile(op.values, role)
        if param is None or not param.shape:
            return {}
        d = as_float(evaluate(param.shape[-1], self.env, "%s.shape" % param.name), param.name)
        return {"fp32": 2.0 * n * d, "read:" + param.name: self._global_bytes(param.name, n * d)}

    def _top_k_collect(self, op, role):
        # A compare per score and the vote's or; appends (an atomic and two stores) are rare below the bound.
        return self._combine(op.src, op.bound, ir_pb2.SCOPE_THREAD, role, 2, 0)

    def _top_k_select(self, op, role):
        # At most a bitonic sort of the whole scratch, S / 2 compare-exchanges (4 ops, 16 shared bytes) per step,
        # log2(S) (log2(S) + 1) / 2 steps; the sort follows the candidates' count, which no shape bounds lower.
        region, n = self._tile(op.scratch_values, role)
        if region is None or n < 2:
            return {}
        log = max(1, int(n).bit_length() - 1)  # the scratch is a power of two
        exchanges = n / 2 * log * (log + 1) / 2
        return {"fp32": 4.0 * exchanges, "shared": 16.0 * exchanges}

    def _scan(self, op, role):
        _, n = self._tile(op.src, role)
        return {"fp32": n * (1 + 2 * _SCOPE_STEPS.get(op.scope, 0))}

    def _tri_solve(self, op, role):
        a = self.regions.get(op.a.region)
        if a is None or not a.shape:
            return {}
        c = float(max(0, shapes.tile_shape(op.a, a)[-1]))
        cols = c
        b = self.regions.get(op.b.region) if op.HasField("b") else None
        if b is not None and b.shape:
            cols = float(max(0, shapes.tile_shape(op.b, b)[-1]))
        # Substitution: c^2 / 2 FMAs per right-hand side; one reciprocal per row unless unit diagonal.
        return {"fp32": c * c * cols, "sfu": 0.0 if op.unit_diagonal else c}

    def _atomic(self, op, role):
        _, n = self._tile(op.src, role)
        kind = "atomic_aggregated" if op.aggregation == ir_pb2.AGGREGATION_WARP else "atomic"
        return {"write:" + op.dst.param: self._global_bytes(op.dst.param, n), kind: n}


def builtins(grid):
    """Builtin values at the representative block: the middle of the grid, thread 0."""
    dims = list(grid) + [1] * (3 - len(grid))
    env = dict(_THREAD_ENV)
    for axis, size in zip("xyz", dims):
        env["grid." + axis] = size
        env["block." + axis] = size // 2
    return env


def count(kernel, env, launched):
    """(per-block counts, persistent work tiles or 0) for `kernel` with symbols and builtins in env.

    Counts are a dict: "mma:<family>:<dtype>" and "fp32" flops, "sfu" operations,
    "read:<param>" / "write:<param>" global bytes, "shared" and "tensor_memory"
    bytes, "epilogue" elements stored from registers or shared memory by threads,
    "atomic" / "atomic_aggregated" elements, "tma_loads" TMA loads issued.
    """
    walker = _Walker(kernel, launched)
    per_block = {}
    for i, role in enumerate(kernel.roles):
        _add(per_block, walker.body(role.body, env, "kernel.roles[%d].body" % i, role))
    return per_block, walker.tiles

