"""What each op touches: its tile operands (read or written), global tiles, barriers, expressions,
and the threads it synchronizes with.

One table for every rule that asks "which regions does this op read/write",
so structure checks, data-flow checks and the protocol model agree.
"""

import functools

from cake.ir.v1 import ir_pb2

from compiler.ir import topk

R, W, RW = "r", "w", "rw"

# op kind -> ((field, access), ...) of TileRef fields; optional fields are skipped when unset.
_TILES = {
    "tma_load": (("dst", W),),
    "tma_store": (("src", R),),
    "cp_async": (("dst", W),),
    "copy": (("src_tile", R), ("dst_tile", W)),
    "ldmatrix": (("src", R), ("dst", W)),
    "stmatrix": (("src", R), ("dst", W)),
    "mma": (("a", R), ("b", R), ("acc", W)),
    "tmem_load": (("src", R), ("dst", W)),
    "fill": (("dst", W),),
    "elementwise": (("dst", W),),
    "reduce": (("src", R), ("dst", W)),
    "arg_reduce": (("src", R), ("values", W), ("indices", W)),
    "top_k": (("src", R), ("src_indices", R), ("values", RW), ("indices", RW)),
    "rescore": (("values", RW), ("indices", R)),
    "top_k_collect": (("src", R), ("bound", R)),
    "top_k_select": (("scratch_values", RW), ("scratch_indices", RW)),
    "scan": (("src", R), ("dst", W)),
    "tri_solve": (("a", R), ("b", R), ("x", W)),
    "atomic": (("src", R), ("index", R)),
}
# Fields that hold a TileRef only when set (a oneof member or an optional operand).
_OPTIONAL = {"src_tile", "dst_tile", "b", "index", "src_indices"}

# op kind -> ((field, access), ...) of GlobalRef fields.
_GLOBALS = {
    "tma_load": (("src", R),),
    "tma_store": (("dst", W),),
    "cp_async": (("src", R),),
    "copy": (("src_global", R), ("dst_global", W)),
    "atomic": (("dst", RW),),
    "rescore": (("query", R), ("database", R)),
    "top_k_collect": (("values", W), ("indices", W), ("count", RW)),
    "top_k_select": (("values", R), ("indices", R), ("count", R), ("query", R), ("database", R), ("dist", W),
                     ("idx", W)),
}

# op kind -> (field, is a BarrierRef (else a plain name)).
BARRIER_FIELD = {
    "tma_load": ("barrier", True),
    "mma_commit": ("barrier", True),
    "mbarrier_init": ("barrier", False),
    "mbarrier_arrive": ("barrier", True),
    "mbarrier_expect_tx": ("barrier", True),
    "mbarrier_wait": ("barrier", True),
    "named_barrier_sync": ("barrier", False),
    "named_barrier_arrive": ("barrier", False),
}
MBARRIER_OPS = ("tma_load", "mma_commit", "mbarrier_init", "mbarrier_arrive", "mbarrier_expect_tx", "mbarrier_wait")
NAMED_OPS = ("named_barrier_sync", "named_barrier_arrive")


def tiles(kind, msg):
    """[(field suffix, TileRef, access)] of an op: e.g. ("srcs[1].tile", ref, "r")."""
    out = []
    for field, access in _TILES.get(kind, ()):
        if field in _OPTIONAL and not msg.HasField(field):
            continue
        out.append((field, getattr(msg, field), access))
    if kind == "reduce" and msg.accumulate:
        out.append(("dst", msg.dst, R))
    if kind == "arg_reduce" and msg.accumulate:
        out += [("values", msg.values, R), ("indices", msg.indices, R)]
    if kind == "elementwise":
        for i, s in enumerate(msg.srcs[:]):  # (a slice: iterating a protobuf container ends in a raised IndexError)
            if s.WhichOneof("kind") == "tile":
                out.append(("srcs[%d].tile" % i, s.tile, R))
    return out


def globals_(kind, msg):
    """[(field, GlobalRef, access)] of an op."""
    out = []
    for field, access in _GLOBALS.get(kind, ()):
        if field in ("src_global", "dst_global") and not msg.HasField(field):
            continue
        out.append((field, getattr(msg, field), access))
    return out


def barrier_name(kind, msg):
    """The barrier array an op names, or None for ops without one."""
    spec = BARRIER_FIELD.get(kind)
    if spec is None:
        return None
    value = getattr(msg, spec[0])
    return value.barrier if spec[1] else value


def barrier_index(kind, msg):
    """The Expr indexing the barrier array an op names, or None (a round, or no index: barrier 0)."""
    spec = BARRIER_FIELD.get(kind)
    if spec is None:
        return None
    if spec[1]:
        ref = getattr(msg, spec[0])
        return ref.index if ref.WhichOneof("slot") == "index" else None
    return msg.index if kind in NAMED_OPS and msg.HasField("index") else None


# Scopes of cross-thread reductions -> the unit whose threads must all take part.
_SCOPE_UNIT = {
    ir_pb2.SCOPE_LANES: "warp",
    ir_pb2.SCOPE_WARP: "warp",
    ir_pb2.SCOPE_WARPGROUP: "warpgroup",
    ir_pb2.SCOPE_ROLE: "role",
}
_MMA_UNIT = {ir_pb2.MMA_KIND_WGMMA: "warpgroup", ir_pb2.MMA_KIND_MMA_SYNC: "warp"}


def collective(kind, msg):
    """The unit ("warp", "warpgroup", "role") whose threads all execute the op together, or None.

    .sync.aligned instructions (wgmma, mma.sync, wgmma.wait_group, ldmatrix, stmatrix,
    tcgen05.ld), cross-thread reductions and warp-aggregated atomics (match.any.sync).
    """
    if kind == "mma":
        return _MMA_UNIT.get(msg.kind)
    if kind == "mma_wait":
        return "warpgroup"
    if kind in ("ldmatrix", "stmatrix", "tmem_load"):
        return "warp"
    if kind == "top_k":
        return _top_k_unit(msg)
    if kind in ("rescore", "top_k_collect"):
        return "warp"  # rescore: the lanes split the features and shuffle the sums; collect: a vote per group
    if kind == "top_k_select":
        return "role"  # bar.sync between the sort's steps
    if kind in ("reduce", "arg_reduce", "scan"):
        return _SCOPE_UNIT.get(msg.scope)
    if kind == "atomic" and msg.aggregation == ir_pb2.AGGREGATION_WARP:
        return "warp"
    return None


def _top_k_unit(msg):
    """A TopK's collective unit: its merge scope's, or the warp for an insertion that votes (its
    thresholds and vote are shfl.sync / vote.sync over the full warp)."""
    if topk.is_merge(msg):
        return _SCOPE_UNIT.get(msg.scope)
    return "warp" if msg.vote else None


# Ops whose executing-thread counts the synchronization protocol must know: barrier and
# block-level synchronization, waits on asynchronous work, and the asynchronous work that
# completes barrier phases or is retired by waits (TMA loads, MMAs and their commits).
SYNC_OPS = frozenset(MBARRIER_OPS + NAMED_OPS + ("block_sync", "mma", "mma_wait", "cp_async_wait", "bulk_wait"))


def synchronizes(kind, msg):
    """Whether the op synchronizes threads or asynchronous work (SYNC_OPS, or a collective op)."""
    return kind in SYNC_OPS or collective(kind, msg) is not None


# Where an expression is a value computed with (data), as opposed to a value the protocol
# depends on (loop bounds, stages, windows, barrier slots and indices, phases, accumulate
# flags): (message type, field) of the Expr.
DATA_FIELDS = frozenset((
    ("Branch", "cond"),
    ("GlobalRef", "coords"),
    ("ArgReduce", "index_base"),
    ("TopK", "index_base"),
    ("TopK", "index_limit"),
    ("TopK", "exclude_base"),
    ("TopKCollect", "index_base"),
    ("TopKCollect", "index_limit"),
    ("TopKCollect", "exclude_base"),
    ("Operand", "scalar"),
))  # fmt: skip

_BODIES = ("body", "then_body", "else_body")


def expressions(msg):
    """[(message type, field, Expr)] of every expression an op message holds (not those of nested bodies)."""
    out = []
    _collector(msg.DESCRIPTOR)(msg, 0, out)
    return out


_COLLECTORS = {}  # message type's full name -> its collector


def _collector(descriptor):
    """The function (msg, depth, out) appending the expressions a message of this type holds, as straight-line
    code built once per type from _expr_fields: the fields in field-number order, one WhichOneof per oneof, a
    HasField per singular field, message fields recursed into up to depth 8 (op messages nest refs a few levels
    deep: Operand -> TileRef -> Window). The verifier collects every op's expressions; a generic loop over the
    steps cost half again as much."""
    found = _COLLECTORS.get(descriptor.full_name)
    if found is not None:
        return found
    kind, lines, scope = descriptor.name, ["def collect(msg, depth, out):"], {}

    def child(field):  # the collector of a message field's type, found when first called (types may recurse)
        name = "_c%d" % len(scope)
        scope[name] = _deferred(scope, name, descriptor.fields_by_name[field].message_type)
        return name

    for name, repeated, is_expr in _expr_fields(descriptor):
        if name is None:  # one oneof: `repeated` is its name, `is_expr` member -> is an Expr
            lines.append("    member = msg.WhichOneof(%r)" % repeated)
            for i, (member, expr) in enumerate(is_expr.items()):
                lines.append("    %s member == %r:" % ("elif" if i else "if", member))
                lines.append("        out.append((%r, %r, msg.%s))" % (kind, member, member) if expr else
                             "        if depth < 8: %s(msg.%s, depth + 1, out)" % (child(member), member))
        elif repeated:
            lines.append("    out += [(%r, %r, item) for item in msg.%s[:]]" % (kind, name, name) if is_expr else
                         "    if depth < 8:\n        for item in msg.%s[:]: %s(item, depth + 1, out)" % (name, child(name)))
        else:
            lines.append("    if msg.HasField(%r): out.append((%r, %r, msg.%s))" % (name, kind, name, name) if is_expr
                         else "    if depth < 8 and msg.HasField(%r): %s(msg.%s, depth + 1, out)" % (name, child(name), name))
    lines.append("    return out")
    exec("\n".join(lines), scope)  # noqa: S102  (built from the schema's own field names)
    found = _COLLECTORS[descriptor.full_name] = scope["collect"]
    return found


def _deferred(scope, name, descriptor):
    """A stand-in for the collector of `descriptor` under `name` in a collector's globals: it finds the collector
    on its first call and puts it there."""

    def first(msg, depth, out):
        found = scope[name] = _collector(descriptor)
        return found(msg, depth, out)

    return first


@functools.lru_cache(maxsize=None)
def _expr_fields(descriptor):
    """(name, repeated, is an Expr) of the fields of a message type that are or may hold expressions, in field
    number order (ListFields'), bodies left out: `expressions` visits only those. Consecutive ones that are
    members of one oneof are one step, (None, oneof name, {member: is an Expr}): one WhichOneof instead of a
    HasField per member (at most one of them is set, so the order is the same)."""
    steps = []
    for f in sorted(descriptor.fields, key=lambda f: f.number):
        if f.message_type is None or f.name in _BODIES or not _holds_expr(f.message_type):
            continue
        is_expr, oneof = f.message_type.name == "Expr", f.containing_oneof
        if oneof is not None and len(oneof.fields) > 1:  # a real oneof (proto3 `optional` makes one of one)
            if steps and steps[-1][0] is None and steps[-1][1] == oneof.name:
                steps[-1][2][f.name] = is_expr
            else:
                steps.append((None, oneof.name, {f.name: is_expr}))
        else:
            steps.append((f.name, f.is_repeated, is_expr))
    return tuple(steps)


@functools.lru_cache(maxsize=None)
def _holds_expr(descriptor, seen=frozenset()):
    """Whether a message of this type is an Expr or can hold one."""
    if descriptor.name == "Expr":
        return True
    seen = seen | {descriptor.full_name}
    return any(f.message_type is not None and f.name not in _BODIES and f.message_type.full_name not in seen
               and _holds_expr(f.message_type, seen) for f in descriptor.fields)
