"""What each op touches: its tile operands (read or written), global tiles and barriers.

One table for every rule that asks "which regions does this op read/write",
so structure checks, data-flow checks and the protocol model agree.
"""

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
    "top_k": (("src", R), ("values", RW), ("indices", RW)),
    "scan": (("src", R), ("dst", W)),
    "tri_solve": (("a", R), ("b", R), ("x", W)),
    "atomic": (("src", R), ("index", R)),
}
# Fields that hold a TileRef only when set (a oneof member or an optional operand).
_OPTIONAL = {"src_tile", "dst_tile", "b", "index"}

# op kind -> ((field, access), ...) of GlobalRef fields.
_GLOBALS = {
    "tma_load": (("src", R),),
    "tma_store": (("dst", W),),
    "cp_async": (("src", R),),
    "copy": (("src_global", R), ("dst_global", W)),
    "atomic": (("dst", RW),),
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
        for i, s in enumerate(msg.srcs):
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


def writes_global(kind, msg, param):
    return any(ref.param == param and access != R for _, ref, access in globals_(kind, msg))

