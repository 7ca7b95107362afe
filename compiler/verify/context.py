"""What every rule reads: the kernel indexed once per verification.

`Context` resolves names (first declaration wins; duplicates are the structure
rules' business), lays roles out over warps (compiler/ir/roles.py), and flattens every role body into
`OpSite`s that carry their IR path, enclosing branch conditions and loop
variables. Expensive analyses (thread classes, symbol bindings, the protocol
model) are computed on first use and shared by the rules that need them.
"""

import functools

from cake.ir.v1 import ir_pb2

from compiler import targets
from compiler.ir import enums, paths, roles, scalars, smem_layout
from compiler.ir import oprefs
from compiler.ir.shapes import window_shape
from compiler.targets import database, op_features
from compiler.verify import exprs

# Bodies deeper than this are not walked (mutated IR can nest without bound; text caps it lower).
MAX_NESTING = 64
# The message types of a kernel other than ops' and binary expressions' (expressions_plain's walk: it finds the
# expressions outside ops, whose sites list their own, and follows the binary ones itself).
_OUTSIDE_OPS = frozenset(d.full_name for d in ir_pb2.DESCRIPTOR.message_types_by_name.values()
                         if d.name not in ("Op", "BinaryExpr"))


def short(enum_type, number):
    """An enum value's short name ("bf16"), or its number when the enum does not define it."""
    try:
        return enums.short_name(enum_type.DESCRIPTOR, number)
    except KeyError:
        return str(number)


class OpSite:
    """One op of a role body, with where it is and what encloses it."""

    __slots__ = ("path", "op", "kind", "msg", "role_index", "conds", "branches", "loop_vars", "parent_path", "_tiles",
                 "_globals", "_operands")

    def __init__(self, path, op, kind, msg, role_index, conds, branches, loop_vars, parent_path):
        self.path = path  # "kernel.roles[1].body[2].loop.body[0].mbarrier_wait"
        self.op = op  # the ir_pb2.Op
        self.kind = kind  # its oneof member name, None when unset
        self.msg = msg  # the member message, None when unset
        self.role_index = role_index
        self.conds = conds  # ((cond Expr, taken arm is then), ...) outermost first
        self.branches = branches  # the paths of the branches those conditions belong to
        self.loop_vars = loop_vars  # names bound by enclosing loops (vars and counters)
        self.parent_path = parent_path  # the Op node: "...body[0]"
        self._tiles = self._globals = self._operands = None

    def tiles(self):
        """The op's tile operands, oprefs.tiles (computed once: most rules ask)."""
        if self._tiles is None:
            self._tiles = tuple(oprefs.tiles(self.kind, self.msg)) if self.msg is not None else ()
        return self._tiles

    def globals(self):
        """The op's global tiles, oprefs.globals_ (computed once)."""
        if self._globals is None:
            self._globals = tuple(oprefs.globals_(self.kind, self.msg)) if self.msg is not None else ()
        return self._globals


class TileUse:
    """One tile operand of an op (oprefs.tiles' field, TileRef and access) with what the rules and the model read
    of it, read from the proto once: its region's name and (index, Region) or None, its stage Expr or None, and
    its windows with their starts and sizes."""

    __slots__ = ("field", "ref", "access", "name", "hit", "stage", "windows", "starts", "sizes")

    def __init__(self, field, ref, access, regions):
        self.field, self.ref, self.access = field, ref, access
        self.name = ref.region
        self.hit = regions.get(self.name)
        self.stage = ref.stage if ref.HasField("stage") else None
        # Protobuf containers are iterated through slices: a loop over one ends in a raised IndexError, which costs
        # as much again as the loop.
        self.windows = windows = tuple(ref.window[:])
        if windows:  # (most operands are whole tiles)
            self.starts = tuple([w.start for w in windows])
            self.sizes = tuple([w.size for w in windows])
        else:
            self.starts = self.sizes = ()

    @property
    def region(self):
        return self.hit[1] if self.hit is not None else None

    def shape(self):
        """The shape it covers (compiler/ir/shapes.py), a new list; its region must be declared."""
        return window_shape(self.sizes, self.hit[1])


def _index(items):
    table = {}
    for i, item in enumerate(items):
        table.setdefault(item.name, (i, item))
    return table


class Context:
    """A kernel, indexed for the rules."""

    def __init__(self, kernel, source_map=None):
        self.kernel = kernel
        self.source_map = source_map
        self.target_name = short(ir_pb2.Target, kernel.target)
        self.target = targets.TARGETS.get(self.target_name)
        c = kernel.contract
        self.symbols = _index(c.symbols)
        self.params = _index(kernel.params)
        self.regions = _index(kernel.regions)
        self.barriers = _index(kernel.barriers)
        self.pipelines = _index(kernel.pipelines)
        self.roles = _index(kernel.roles)
        self.spans = roles.role_spans(kernel)  # compiler/ir/roles.py: where each role sits
        self.block_threads = roles.block_threads(kernel, self.spans)
        self.ops = []
        self.too_deep = []  # paths of bodies not walked (nested beyond MAX_NESTING)
        for i, role in enumerate(kernel.roles):
            self._walk(role.body, "kernel.roles[%d].body" % i, i, (), (), (), 0)
        self.diagnostics = []  # filled by the registry as rules run; later rules may consult it

    def _walk(self, body, prefix, role_index, conds, branches, loop_vars, depth):
        if depth > MAX_NESTING:
            self.too_deep.append(prefix)
            return
        for j, op in enumerate(body[:]):  # (slices: see TileUse)
            node = "%s[%d]" % (prefix, j)
            kind = op.WhichOneof("kind")
            msg = getattr(op, kind) if kind else None
            path = "%s.%s" % (node, kind) if kind else node
            self.ops.append(OpSite(path, op, kind, msg, role_index, conds, branches, loop_vars, node))
            if kind == "loop":
                bound = (msg.var, msg.counter) if msg.counter else (msg.var,)
                self._walk(msg.body, path + ".body", role_index, conds, branches, loop_vars + bound, depth + 1)
            elif kind == "branch":
                inside = branches + (path,)
                for arm, taken in (("then_body", True), ("else_body", False)):
                    self._walk(getattr(msg, arm), "%s.%s" % (path, arm), role_index, conds + ((msg.cond, taken),), inside,
                               loop_vars, depth + 1)

    # -- lookups -------------------------------------------------------------

    def region(self, name):
        hit = self.regions.get(name)
        return hit[1] if hit else None

    def barrier(self, name):
        hit = self.barriers.get(name)
        return hit[1] if hit else None

    def region_path(self, name):
        hit = self.regions.get(name)
        return "kernel.regions[%d]" % hit[0] if hit else None

    def barrier_path(self, name):
        hit = self.barriers.get(name)
        return "kernel.barriers[%d]" % hit[0] if hit else None

    def param_path(self, name):
        hit = self.params.get(name)
        return "kernel.params[%d]" % hit[0] if hit else None

    def role_path(self, index):
        return "kernel.roles[%d]" % index

    def has(self, feature):
        """True when the kernel's target has `feature` (False for an unknown target)."""
        return self.target is not None and self.target.has(feature)

    def site(self, path):
        """The op site at `path` (an op's path, "...body[2].copy"), or None."""
        by_path = self.__dict__.get("_sites_by_path")
        if by_path is None:
            by_path = self._sites_by_path = {s.path: s for s in self.ops}
        return by_path.get(path)

    def operands(self, site):
        """The op's tile operands as TileUses, in site.tiles() order (computed once: most rules and the model
        read them)."""
        found = site._operands
        if found is None:
            regions = self.regions
            found = site._operands = tuple([TileUse(field, ref, access, regions) for field, ref, access in site.tiles()])
        return found

    def sites(self, *kinds):
        """The op sites of the given kinds, in walk order (a new list; each kinds' found once)."""
        cache = self.__dict__.setdefault("_sites_of", {})
        found = cache.get(kinds)
        if found is None:
            found = cache[kinds] = [s for s in self.ops if s.kind in kinds]
        return list(found)

    @functools.cached_property
    def limits(self):
        """The target's resource limits (compiler/targets database.Limits of its default device), None when unknown."""
        try:
            return database.limits(self.target_name)
        except ValueError:
            return None

    @functools.cached_property
    def threads_per_block_max(self):
        """The target's block-size limit (for an unknown target the largest any target allows)."""
        if self.limits is not None:
            return self.limits.threads_per_block_max
        return max(database.limits(t).threads_per_block_max for t in database.target_names())

    @property
    def block_threads_in_range(self):
        """Whether the block has 1 to threads_per_block_max threads (CAKE-RES-002 reports it otherwise): checks
        that walk the block's threads one by one (the protocol model, the outputs check) run only then."""
        return 0 < self.block_threads <= self.threads_per_block_max

    @functools.cached_property
    def nodes(self):
        """(path, message) of every message node of the kernel, in tree order (compiler.ir.paths.walk)."""
        return list(paths.walk(self.kernel))

    @functools.cached_property
    def feature_uses(self):
        """Every use of an instruction family in the kernel (compiler/targets/op_features.uses; it looks for
        cluster.rank in the nodes, which only a kernel whose expressions are not plain needs walked)."""
        return list(op_features.uses(self.kernel, self.nodes if not self.expressions_plain else ()))

    @functools.cached_property
    def expressions_plain(self):
        """Whether every expression of the kernel is complete (every Expr set, every binary one with a defined
        operator and both operands) and none reads cluster.rank: one pass over the expressions (the ops' from
        `expressions`, the others' from a walk that skips ops), so that the rules looking for either need not
        walk `nodes` when neither occurs."""
        if self.too_deep:  # ops nested beyond MAX_NESTING are not sites: their expressions are not listed
            return False
        stack = [e for path, e in paths.walk(self.kernel, types=_OUTSIDE_OPS) if isinstance(e, ir_pb2.Expr)]
        for s in self.ops:
            stack += [e for _, _, e in self.expressions(s.path, s.msg)]
        defined = exprs.DEFINED_OPS
        while stack:
            e = stack.pop()
            kind = e.WhichOneof("kind")
            if kind == "binary":
                b = e.binary
                if b.op not in defined or not (b.HasField("lhs") and b.HasField("rhs")):
                    return False
                stack += (b.lhs, b.rhs)
            elif kind is None or (kind == "sym" and e.sym == "cluster.rank"):
                return False
        return True

    @functools.cached_property
    def scalars(self):
        """Per role index, {name: region index} of the register scalars it owns and may read in expressions."""
        return [scalars.role_scalars(self.kernel, role.name) for role in self.kernel.roles]

    @functools.cached_property
    def static_names(self):
        """Names every expression may read: symbols, scalar params and builtins."""
        scalar_params = {p.name for p in self.kernel.params if p.kind == ir_pb2.PARAM_KIND_SCALAR}
        return frozenset(self.symbols) | scalar_params | exprs.BUILTINS

    def expressions(self, path, msg):
        """(message type, field, Expr) of the op message at `path` (oprefs.expressions), computed once."""
        cache = self.__dict__.setdefault("_expressions", {})
        found = cache.get(path)
        if found is None:
            found = cache[path] = tuple(oprefs.expressions(msg)) if msg is not None else ()
        return found

    def names_read(self, path, msg):
        """The names the expressions of the op message at `path` mention (not those of nested bodies), computed once."""
        cache = self.__dict__.setdefault("_names_read", {})
        found = cache.get(path)
        if found is None:
            found = set()
            for _, _, e in self.expressions(path, msg):
                found |= exprs.names(e)
            found = cache[path] = frozenset(found)
        return found

    def data_names(self, expr, role_index):
        """The register scalars of role `role_index` that `expr` reads (run-time data), sorted."""
        return sorted(exprs.names(expr) & self.scalars[role_index].keys()) if self.scalars[role_index] else []

    @functools.cached_property
    def smem_layout(self):
        """The shared-memory layout lowering will use (compiler/ir/smem_layout.py)."""
        return smem_layout.layout(self.kernel)

    @functools.cached_property
    def facts(self):
        """Divisibility the contract guarantees (see exprs.divisibility_facts)."""
        return exprs.divisibility_facts(self.kernel.contract)

    @functools.cached_property
    def binder(self):
        """Valid symbol values for this kernel (inputs.Binder), shared by the rules and the model."""
        from compiler.verify.protocol import inputs

        return inputs.Binder(self)

    @functools.cached_property
    def pipeline_of_region(self):
        out = {}
        for p in self.kernel.pipelines:
            for r in p.regions:
                out.setdefault(r, p)
        return out

    def has_errors(self, category=None, ids=()):
        """Whether rules run so far reported an error (of `category`, or with one of `ids`)."""
        from cake.compiler.v1 import diagnostics_pb2

        for d in self.diagnostics:
            if d.severity != diagnostics_pb2.SEVERITY_ERROR:
                continue
            if (category is None and not ids) or d.category == category or d.id in ids:
                return True
        return False
