"""Structure rules: names are identifiers, unique and resolvable; enums set; expressions complete; sizes positive."""

import functools
import itertools

from cake.ir.v1 import ir_pb2

from compiler.ir import oprefs, paths
from compiler.ir.names import is_identifier, quoted
from compiler.verify import exprs
from compiler.verify.protocol import findings
from compiler.verify.registry import Finding, rule

# Declaration lists: (field of Kernel or Contract, what the thing is).
_DECLS = (
    ("params", "param"),
    ("regions", "region"),
    ("barriers", "barrier"),
    ("pipelines", "pipeline"),
    ("roles", "role"),
)


def _declarations(kernel):
    for field, what in _DECLS:
        for i, item in enumerate(getattr(kernel, field)):
            yield "kernel.%s[%d]" % (field, i), what, item.name
    for i, s in enumerate(kernel.contract.symbols):
        yield "kernel.contract.symbols[%d]" % i, "symbol", s.name


@rule(
    "CAKE-STRUCT-001", "structure", "error",
    doc="Every name (kernel, param, region, barrier, pipeline, role, symbol, loop variable) is a C identifier.",
    fix_hint="Rename it to a C identifier: a letter or underscore, then letters, digits or underscores.",
)
def identifiers(ctx):
    if not is_identifier(ctx.kernel.name):
        yield Finding("kernel", "kernel name %s is not a C identifier" % quoted(ctx.kernel.name))
    for path, what, name in _declarations(ctx.kernel):
        if not is_identifier(name):
            yield Finding(path, "%s name %s is not a C identifier" % (what, quoted(name)))
    for site in ctx.sites("loop"):
        for name in (site.msg.var,) + ((site.msg.counter,) if site.msg.counter else ()):
            if not is_identifier(name):
                yield Finding(site.path, "loop variable %s is not a C identifier" % quoted(name))


@rule(
    "CAKE-STRUCT-002", "structure", "error",
    doc="Names are unique within their kind (params, regions, barriers, pipelines, roles, symbols).",
    fix_hint="Give each declaration of this kind its own name.",
)
def unique_names(ctx):
    first = {}
    for path, what, name in _declarations(ctx.kernel):
        key = (what, name)
        if key in first:
            yield Finding(path, "%s `%s` is declared twice" % (what, name), (("the first declaration", first[key]),))
        else:
            first[key] = path
    params = {p.name for p in ctx.kernel.params}
    for i, s in enumerate(ctx.kernel.contract.symbols):
        if s.name in params:
            yield Finding(
                "kernel.contract.symbols[%d]" % i, "symbol `%s` has the name of a param" % s.name,
                (("the param", ctx.param_path(s.name)),),
            )


def _refs(ctx):
    """(path, what, name, table) for every name an op or declaration refers to."""
    for site in ctx.ops:
        if site.msg is None:
            continue
        for u in ctx.operands(site):
            yield site.path, "region", u.name, ctx.regions
        for field, ref, _ in site.globals():
            yield site.path, "tensor param", ref.param, ctx.params
        name = oprefs.barrier_name(site.kind, site.msg)
        if name is not None:
            yield site.path, "barrier", name, ctx.barriers
    for i, p in enumerate(ctx.kernel.pipelines):
        path = "kernel.pipelines[%d]" % i
        for name in (p.full, p.empty):
            yield path, "barrier", name, ctx.barriers
        for name in p.regions:
            yield path, "region", name, ctx.regions
        for name in [p.producer] + list(p.consumers):
            yield path, "role", name, ctx.roles
    for i, r in enumerate(ctx.kernel.regions):
        if r.owner:
            yield "kernel.regions[%d]" % i, "role", r.owner, ctx.roles


@rule(
    "CAKE-STRUCT-003", "structure", "error",
    doc="Every name an op, pipeline or region refers to is declared (tensor refs name tensor params).",
    fix_hint="Declare the missing name, or correct the reference to a declared one.",
)
def references(ctx):
    for path, what, name, table in _refs(ctx):
        if name not in table:
            known = ", ".join(sorted(table)) or "none"
            yield Finding(path, "%s `%s` is not declared (declared: %s)" % (what, name, known))
        elif what == "tensor param" and table[name][1].kind != ir_pb2.PARAM_KIND_TENSOR:
            yield Finding(path, "`%s` is a scalar param; a tile can only be taken of a tensor" % name,
                          (("the param", ctx.param_path(name)),))


def _required(enum_desc):
    """An enum whose zero value means 'not set: a verification error' (named exactly PREFIX_UNSPECIFIED)."""
    zero = enum_desc.values_by_number.get(0)
    return zero is not None and zero.name.endswith("_UNSPECIFIED") and zero.name.count("_UNSPECIFIED") == 1 and (
        zero.name[: -len("_UNSPECIFIED")].replace("_", "").lower() == enum_desc.name.lower()
    )


# Enums another rule reports (TARGET-001, CONTRACT-007, STRUCT-005, STRUCT-010: a layout only registers need).
_ELSEWHERE = {"Target", "Metric", "BinaryOp", "FragmentLayout"}


@rule(
    "CAKE-STRUCT-004", "structure", "error",
    doc="Required enum fields are set (not *_UNSPECIFIED) and every enum holds a value its enum defines.",
    fix_hint="Set the field to one of the values the message's enum lists in ir.proto.",
)
def enums_set(ctx):
    holders = _enum_holders(ctx.kernel.DESCRIPTOR)
    if ctx.too_deep:  # ops nested beyond MAX_NESTING are no sites: walk to every op
        nodes = paths.walk(ctx.kernel, types=holders)
    else:  # the nodes outside ops, then each op's message (its site has its path)
        inside = _outside_ops(holders)
        nodes = itertools.chain(paths.walk(ctx.kernel, types=inside), _op_messages(ctx, inside))
    for path, node in nodes:
        fields, required = _enum_fields(node.DESCRIPTOR)
        for name, repeated, defined, enum in fields:
            value = getattr(node, name)
            for v in value if repeated else (value,):
                if v not in defined:
                    yield Finding(path, "%s is %d, which %s does not define" % (name, v, enum))
        for name in required:
            if getattr(node, name) == 0 and _needed(node, name):
                yield Finding(path, "%s.%s is not set" % (node.DESCRIPTOR.name, name))


def _op_messages(ctx, types):
    """(path, node) of every op's message, and of the nodes of `types` below it outside its bodies."""
    for site in ctx.ops:
        if site.msg is None:
            continue
        if _has_fields_of(site.msg.DESCRIPTOR, types):
            yield from paths.walk(site.msg, site.path, types)
        else:
            yield site.path, site.msg


@functools.lru_cache(maxsize=None)
def _outside_ops(types):
    """`types` without Op: a walk through them stops at role and loop bodies."""
    return frozenset(types - {ir_pb2.Op.DESCRIPTOR.full_name})


@functools.lru_cache(maxsize=None)
def _has_fields_of(descriptor, types):
    """Whether messages of this type have fields of one of `types`."""
    return any(f.message_type is not None and f.message_type.full_name in types for f in descriptor.fields)


@functools.lru_cache(maxsize=None)
def _enum_fields(descriptor):
    """((name, repeated, the numbers its enum defines, the enum's name) of each enum field this rule checks,
    names of those that must be set), in declaration order. (An unset enum field reads 0, which every proto3 enum
    defines: reading every field finds what ListFields' set ones would.)"""
    fields = [f for f in descriptor.fields if f.enum_type is not None and f.enum_type.name not in _ELSEWHERE]
    return (tuple((f.name, f.is_repeated, frozenset(f.enum_type.values_by_number), f.enum_type.name) for f in fields),
            tuple(f.name for f in fields if not f.is_repeated and _required(f.enum_type)))


@functools.lru_cache(maxsize=None)
def _enum_holders(root):
    """Full names of the message types below `root` (itself included) that have enum fields this rule checks or
    fields of such types, however deep: enums_set walks only through those (expressions, tile references and
    windows hold none)."""
    reachable, todo = {}, [root]
    while todo:
        d = todo.pop()
        if d.full_name not in reachable:
            reachable[d.full_name] = d
            todo += [f.message_type for f in d.fields if f.message_type is not None]
    holders = {name for name, d in reachable.items() if _enum_fields(d)[0]}
    grown = True
    while grown:
        grown = False
        for name, d in reachable.items():
            if name not in holders and any(f.message_type is not None and f.message_type.full_name in holders
                                           for f in d.fields):
                holders.add(name)
                grown = True
    return frozenset(holders)


def _needed(node, field):
    """Whether an unset enum matters here: op enums only when their op makes them meaningful."""
    name = node.DESCRIPTOR.name
    if name == "Param" and field == "access" and node.kind == ir_pb2.PARAM_KIND_SCALAR:
        return False
    return True


@rule(
    "CAKE-STRUCT-005", "structure", "error",
    doc="Expressions are complete: no empty expression, no unset operator, required bounds and conditions present.",
    fix_hint="Write the expression out in full (an int, a name, or `lhs op rhs` with a defined operator).",
)
def complete_exprs(ctx):
    for path, node in ctx.nodes if not ctx.expressions_plain else ():  # else none is incomplete: no walk
        name = node.DESCRIPTOR.name
        if name == "Expr" and node.WhichOneof("kind") is None:
            yield Finding(path, "empty expression")
        elif name == "BinaryExpr":
            if node.op not in exprs.DEFINED_OPS:
                yield Finding(path, "binary expression has no operator")
            elif not (node.HasField("lhs") and node.HasField("rhs")):
                yield Finding(path, "binary expression lacks an operand")
    for site in ctx.sites("loop"):
        for field in ("start", "end"):
            if not site.msg.HasField(field):
                yield Finding(site.path, "loop `%s` has no %s" % (site.msg.var, field))
    for site in ctx.sites("branch"):
        if not site.msg.HasField("cond"):
            yield Finding(site.path, "branch has no condition")
    for i, c in enumerate(ctx.kernel.contract.constraints):
        if not c.HasField("expr"):
            yield Finding("kernel.contract.constraints[%d]" % i, "constraint has no expression")


@rule(
    "CAKE-STRUCT-006", "structure", "error",
    doc="Sizes are positive: region shapes and stages, barrier counts and mbarrier arrivals, role sizes, windows.",
    fix_hint="Give the size a positive value.",
)
def positive_sizes(ctx):
    k = ctx.kernel
    for i, r in enumerate(k.regions):
        path = "kernel.regions[%d]" % i
        if not r.shape or any(d <= 0 for d in r.shape):
            yield Finding(path, "region `%s` has shape %s; every dim must be positive" % (r.name, list(r.shape)))
        if r.stages < 0:
            yield Finding(path, "region `%s` has %d stages" % (r.name, r.stages))
    for i, b in enumerate(k.barriers):
        path = "kernel.barriers[%d]" % i
        if b.count < 0:
            yield Finding(path, "barrier `%s` has count %d" % (b.name, b.count))
        if b.arrivals <= 0:
            yield Finding(path, "barrier `%s` has %d arrivals; a phase needs at least one" % (b.name, b.arrivals))
        if b.tx_bytes < 0:
            yield Finding(path, "barrier `%s` expects %d transaction bytes" % (b.name, b.tx_bytes))
    for i, p in enumerate(k.pipelines):
        if p.stages <= 0:
            yield Finding("kernel.pipelines[%d]" % i, "pipeline `%s` has %d stages" % (p.name, p.stages))
    for i, role in enumerate(k.roles):
        size = role.WhichOneof("size")
        if size is None or getattr(role, size) <= 0:
            yield Finding(ctx.role_path(i), "role `%s` needs a positive number of warps or warpgroups" % role.name)
    for site in ctx.ops:
        if site.msg is None:
            continue
        for u in ctx.operands(site):
            if any(size <= 0 for size in u.sizes):
                yield Finding(site.path, "a window of `%s` has a size that is not positive" % u.name)
        if site.kind == "mbarrier_expect_tx" and site.msg.bytes <= 0:
            yield Finding(site.path, "expect_tx of %d bytes" % site.msg.bytes)


@rule(
    "CAKE-STRUCT-012", "structure", "error",
    doc="A loop variable does not shadow an enclosing loop's variable, a symbol, a param, a builtin or a register scalar of its role.",
    fix_hint="Rename the loop variable.",
)
def shadowing(ctx):
    taken = set(ctx.symbols) | set(ctx.params) | exprs.BUILTINS
    for site in ctx.sites("loop"):
        names = [site.msg.var] + ([site.msg.counter] if site.msg.counter else [])
        if len(set(names)) < len(names):
            yield Finding(site.path, "loop counter and variable are both `%s`" % site.msg.var)
        for name in names:
            if name in site.loop_vars:
                yield Finding(site.path, "loop variable `%s` shadows an enclosing loop's" % name)
            elif name in taken:
                yield Finding(site.path, "loop variable `%s` shadows a symbol, param or builtin" % name)
            elif name in ctx.scalars[site.role_index]:
                yield Finding(site.path, "loop variable `%s` shadows the role's register `%s`" % (name, name))


@rule(
    "CAKE-STRUCT-018", "structure", "error",
    doc="Register scalars (run-time data) appear only where an expression is a value computed with: branch conditions, "
    "global coordinates, scalar operands and index bases; not in loop bounds, stages, windows, barrier slots or indices, "
    "wait phases or accumulate flags, which the synchronization protocol depends on.",
    fix_hint="Loop to a static bound and guard the body with a branch on the register's value; derive stages, slots "
    "and phases from loop variables and symbols.",
)
def scalars_as_data(ctx):
    for site in ctx.ops:
        if site.msg is None or not ctx.scalars[site.role_index]:
            continue
        for parent, field, e in ctx.expressions(site.path, site.msg):
            names = ctx.data_names(e, site.role_index)
            if names and (parent, field) not in oprefs.DATA_FIELDS:
                yield Finding(
                    site.path, "%s.%s reads register `%s`, a run-time value: the protocol it decides cannot be checked"
                    % (parent, field, names[0]),
                    (("`%s` is declared here" % names[0], ctx.region_path(names[0])),),
                )


@rule(
    "CAKE-STRUCT-013", "structure", "error",
    doc="The kernel has at least one role, and the walk of its bodies is not cut off by absurd nesting.",
    fix_hint="Declare the roles that run the kernel; flatten bodies nested more than 64 deep.",
)
def has_roles(ctx):
    if not ctx.kernel.roles:
        yield Finding("kernel", "the kernel has no roles: no thread would run anything")
    for path in ctx.too_deep:
        yield Finding(path, "bodies nest more than 64 deep here")


@rule(
    "CAKE-STRUCT-014", "structure", "error",
    doc="mbarrier ops name mbarriers and named-barrier ops name named barriers.",
    fix_hint="Use mbarrier_* ops on BARRIER_KIND_MBARRIER arrays and named_barrier_* ops on BARRIER_KIND_NAMED ones.",
)
def barrier_kinds(ctx):
    for site in ctx.ops:
        name = oprefs.barrier_name(site.kind, site.msg) if site.msg is not None else None
        b = ctx.barrier(name) if name is not None else None
        if b is None or b.kind == ir_pb2.BARRIER_KIND_UNSPECIFIED:
            continue
        want = ir_pb2.BARRIER_KIND_NAMED if site.kind in oprefs.NAMED_OPS else ir_pb2.BARRIER_KIND_MBARRIER
        if b.kind != want:
            yield Finding(
                site.path, "%s needs %s `%s` to be %s" % (
                    site.kind, "barrier", name, "a named barrier" if want == ir_pb2.BARRIER_KIND_NAMED else "an mbarrier"),
                (("`%s` is declared here" % name, ctx.barrier_path(name)),),
            )


findings.model_rule(
    "CAKE-STRUCT-015", "structure",
    "Stages computed at run time stay within the region's ring, and barrier ops meet barriers of their kind.",
    "Index stages within the region's ring (round % stages) and use barrier ops on barriers of their kind.",
    "stage_range",
    "kind_mismatch",
)
