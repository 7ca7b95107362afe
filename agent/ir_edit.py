"""Editing helpers the IR rewrites share: NotApplicable, copies, op walks, lookups, expression builders.

Rewrites (rewrites.py, persistent.py, agent/transforms/) edit a copy of a kernel and raise
NotApplicable when there is nothing to change; these are the pieces every one of them needs:
copies, walks over bodies and expressions, name lookups and fresh names, expression
builders and substitution, the target's feature gates (compiler/targets) and byte counts.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import enums
from compiler.ir.dtypes import DTYPE_BYTES
from compiler.ir.paths import walk
from compiler.targets import TARGETS


class NotApplicable(Exception):
    """The rewrite has nothing to change in this kernel; the message says why."""


def copy_kernel(kernel):
    out = ir_pb2.Kernel()
    out.CopyFrom(kernel)
    return out


def walk_ops(ops):
    """(list, index, op) for every op of a body, nested bodies included, in program order."""
    for i, op in enumerate(ops):
        yield ops, i, op
        kind = op.WhichOneof("kind")
        if kind == "loop":
            yield from walk_ops(op.loop.body)
        elif kind == "branch":
            yield from walk_ops(op.branch.then_body)
            yield from walk_ops(op.branch.else_body)


def find_role(kernel, name):
    for role in kernel.roles:
        if role.name == name:
            return role
    raise NotApplicable("no role %r" % name)


def find_region(kernel, name):
    for region in kernel.regions:
        if region.name == name:
            return region
    raise NotApplicable("no region %r" % name)


def sym(name):
    return ir_pb2.Expr(sym=name)


def const(v):
    return ir_pb2.Expr(int=v)


def binary(op, lhs, rhs):
    return ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=op, lhs=lhs, rhs=rhs))


def equal(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_EQ, lhs, rhs)


def logical_and(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_AND, lhs, rhs)


def logical_or(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_OR, lhs, rhs)


def less(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_LT, lhs, rhs)


def add(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_ADD, lhs, rhs)


def mul(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_MUL, lhs, rhs)


def mod(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_MOD, lhs, rhs)


def copy_message(message):
    out = type(message)()
    out.CopyFrom(message)
    return out


def exprs_under(message):
    """Every Expr node under `message` (itself included when it is one), outermost first."""
    return [n for _, n in walk(message) if isinstance(n, ir_pb2.Expr)]


def substitute(message, mapping):
    """Replace the symbols named in `mapping` (name -> Expr) in every Expr under `message`, in place."""
    for node in exprs_under(message):
        if node.WhichOneof("kind") == "sym" and node.sym in mapping:
            node.CopyFrom(mapping[node.sym])


def replace_expr(message, old, new):
    """Replace every Expr under `message` equal to `old` with a copy of `new`, in place; how many were replaced."""
    hits = [n for n in exprs_under(message) if n == old]  # an Expr never contains a copy of itself
    for node in hits:
        node.CopyFrom(new)
    return len(hits)


def target_name(kernel):
    """The kernel's target by its short name ("sm_90a"), or "unspecified"."""
    return enums.short_name(ir_pb2.Target.DESCRIPTOR, kernel.target)


def target_has(kernel, feature):
    """Whether the kernel's target has an instruction family of compiler/targets.FEATURES."""
    target = TARGETS.get(target_name(kernel))
    return target is not None and target.has(feature)


def fresh_name(taken, base):
    """`base`, or `base_2`, `base_3`, ... : the first not in `taken`."""
    if base not in taken:
        return base
    i = 2
    while "%s_%d" % (base, i) in taken:
        i += 1
    return "%s_%d" % (base, i)


def declared_names(kernel):
    """Every name a kernel declares (params, symbols, regions, barriers, pipelines, roles, loop variables)."""
    names = {p.name for p in kernel.params} | {s.name for s in kernel.contract.symbols}
    names |= {r.name for r in kernel.regions} | {b.name for b in kernel.barriers}
    names |= {p.name for p in kernel.pipelines} | {r.name for r in kernel.roles}
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") == "loop":
                names.add(op.loop.var)
                if op.loop.counter:
                    names.add(op.loop.counter)
    return names


def find_barrier(kernel, name):
    for b in kernel.barriers:
        if b.name == name:
            return b
    raise NotApplicable("no barrier %r" % name)


def op_message(op):
    """The message of an Op's oneof member (None when unset)."""
    kind = op.WhichOneof("kind")
    return None if kind is None else getattr(op, kind)


def tile_refs(op):
    """The TileRefs directly in one op (not in nested bodies)."""
    kind = op.WhichOneof("kind")
    if kind in ("loop", "branch", None):
        return []
    return [n for _, n in walk(getattr(op, kind)) if isinstance(n, ir_pb2.TileRef)]


def reads_region(op, region):
    """Whether any TileRef under `op` (nested bodies included) names `region`."""
    return any(isinstance(n, ir_pb2.TileRef) and n.region == region for _, n in walk(op))


def region_bytes(region):
    """Bytes of one stage of a region."""
    n = DTYPE_BYTES.get(region.dtype, 0)
    for d in region.shape:
        n *= d
    return n


# TileRef fields each op writes (the rest it reads), as compiler's op table has them.
_WRITTEN = {
    "tma_load": ("dst",), "cp_async": ("dst",), "copy": ("dst_tile",), "ldmatrix": ("dst",), "stmatrix": ("dst",),
    "mma": ("acc",), "tmem_load": ("dst",), "fill": ("dst",), "elementwise": ("dst",), "reduce": ("dst",),
    "arg_reduce": ("values", "indices"), "top_k": ("values", "indices"), "scan": ("dst",), "tri_solve": ("x",),
}


_LOADS = {"copy": ("src_global", "dst_tile"), "cp_async": ("src", "dst"), "tma_load": ("src", "dst")}


def tile_rows(kernel):
    """{param: rows of the shared tile its loads land in}: how many rows of each input a block (or round)
    takes at a time (a binding's padding and split unit; the first load of a param decides)."""
    regions = {r.name: r for r in kernel.regions}
    out = {}
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            fields = _LOADS.get(op.WhichOneof("kind"))
            if fields is None:
                continue
            msg = op_message(op)
            src, dst = (getattr(msg, f) for f in fields)
            region = regions.get(dst.region) if msg.HasField(fields[1]) else None
            if msg.HasField(fields[0]) and region is not None and region.space == ir_pb2.MEMORY_SPACE_SHARED \
                    and region.shape and src.param not in out:
                out[src.param] = region.shape[0]
    return out


def written_tiles(op):
    """The TileRefs one op (not its nested bodies) writes."""
    kind = op.WhichOneof("kind")
    msg = getattr(op, kind) if kind else None
    return [getattr(msg, f) for f in _WRITTEN.get(kind, ()) if msg.HasField(f)]
