"""Top-k rules: TopK lists fit their scores, insertions stay per thread, merges happen once, and
Rescore reads lists every lane of its warp holds (TopK and Rescore in ir.proto; shared semantics in
compiler/ir/topk.py)."""

from cake.ir.v1 import ir_pb2

from compiler.ir import topk as topk_ir
from compiler.verify import exprs
from compiler.verify.context import short
from compiler.verify.registry import Finding, rule

REGISTER = ir_pb2.MEMORY_SPACE_REGISTER
L = ir_pb2.FragmentLayout


def _layout(region):
    return short(L, region.layout)


def _register_list(ctx, site, field, dtype):
    """Problems with a list region (values f32 or indices i32 in registers), and the region."""
    ref = getattr(site.msg, field)
    region = ctx.region(ref.region)
    if region is None:
        return [], None
    out = []
    if region.space != REGISTER:
        out.append(Finding(site.path + "." + field, "`%s` lives in %s; top-k lists are register fragments"
                           % (region.name, short(ir_pb2.MemorySpace, region.space))))
    elif region.dtype != dtype:
        out.append(Finding(site.path + "." + field, "`%s` is %s; a list's %s are %s" % (
            region.name, short(ir_pb2.Dtype, region.dtype), field, short(ir_pb2.Dtype, dtype))))
    return out, region


@rule(
    "CAKE-STRUCT-020", "structure", "error",
    doc="TopK lists fit their scores: f32 values and i32 indices register fragments of one shape, [lists, k] with "
    "1 <= k <= 64, of the layout the score tile and axis keep (wgmma_acc axis 1: wgmma_rows, axis 0: wgmma_cols; "
    "mma_acc: mma_rows; row_per_thread: row_per_thread; per_thread [c] axis 0: per_thread [k]); src_indices are i32 "
    "of the scores' shape; exclude_base needs lists with a row or column position.",
    fix_hint="Declare the lists as ir.proto's TopK says for the score tile's layout and axis, with k entries per list.",
)
def lists_fit(ctx):
    for site in ctx.sites("top_k"):
        op = site.msg
        found, values = _register_list(ctx, site, "values", ir_pb2.DTYPE_F32)
        more, indices = _register_list(ctx, site, "indices", ir_pb2.DTYPE_I32)
        yield from found + more
        if values is None or indices is None or found or more:
            continue
        if not 1 <= op.k <= topk_ir.MAX_K:
            yield Finding(site.path, "k = %d; register lists hold 1 to %d entries" % (op.k, topk_ir.MAX_K))
            continue
        if (values.layout, list(values.shape)) != (indices.layout, list(indices.shape)):
            yield Finding(site.path, "values `%s` (%s %s) and indices `%s` (%s %s) must be the same fragment shape" % (
                values.name, _layout(values), list(values.shape), indices.name, _layout(indices), list(indices.shape)))
            continue
        if not values.shape or values.shape[-1] != op.k:
            yield Finding(site.path + ".values", "`%s` has shape %s; its lists need %d entries (the last dim)"
                          % (values.name, list(values.shape), op.k))
            continue
        if topk_ir.is_merge(op):
            continue
        yield from _insertion_fits(ctx, site, values)


def _insertion_fits(ctx, site, values):
    op = site.msg
    src = ctx.region(op.src.region)
    if src is None:
        return
    if src.space != REGISTER:
        yield Finding(site.path + ".src", "top_k inserts from a register score fragment, not `%s` in %s"
                      % (src.name, short(ir_pb2.MemorySpace, src.space)))
        return
    want_layout = topk_ir.LIST_LAYOUT.get((src.layout, op.axis))
    want_shape = topk_ir.list_shape(list(src.shape), src.layout, op.axis, op.k)
    if want_layout is None or want_shape is None:
        yield Finding(site.path, "a %s score tile %s has no top-k lists along axis %d"
                      % (_layout(src), list(src.shape), op.axis))
        return
    if values.layout != want_layout or list(values.shape) != want_shape:
        yield Finding(site.path + ".values", "scores `%s` (%s %s) along axis %d keep %s lists %s, not %s %s" % (
            src.name, _layout(src), list(src.shape), op.axis, short(L, want_layout), want_shape, _layout(values),
            list(values.shape)), (("`%s` is declared here" % values.name, ctx.region_path(values.name)),))
    if op.HasField("src_indices"):
        given = ctx.region(op.src_indices.region)
        if given is not None and (given.space, given.layout, list(given.shape), given.dtype) != (
                REGISTER, src.layout, list(src.shape), ir_pb2.DTYPE_I32):
            yield Finding(site.path + ".src_indices", "`%s` must be an i32 register fragment shaped like the scores "
                          "(%s %s)" % (given.name, _layout(src), list(src.shape)))
    if op.HasField("exclude_base") and want_layout == L.FRAGMENT_LAYOUT_PER_THREAD:
        yield Finding(site.path + ".exclude_base", "per-thread lists have no row or column position to exclude")


@rule(
    "CAKE-STRUCT-021", "structure", "error",
    doc="A TopK insertion runs with scope thread: each thread keeps its own disjoint lists and a merge-only TopK "
    "combines them once; inserting and merging across lanes in one op, tile after tile, inserts the entries the "
    "lanes already share again (duplicates in the result).",
    fix_hint="Insert with scope thread inside the tile loop, and merge once after it with a merge-only top_k "
    "(src = values, scope lanes).",
)
def insertion_scope(ctx):
    for site in ctx.sites("top_k"):
        op = site.msg
        if not topk_ir.is_merge(op) and op.scope != ir_pb2.SCOPE_THREAD:
            yield Finding(site.path, "inserts with scope %s; an insertion keeps per-thread lists (scope thread) and a "
                          "merge-only top_k combines them once" % short(ir_pb2.Scope, op.scope))


@rule(
    "CAKE-STRUCT-024", "structure", "error",
    doc="A voted insertion into per_thread lists is followed, in its role, by a warp merge of those lists: its "
    "threshold is the best k-th entry among the warp's lanes, which bounds only the warp's merged top k.",
    fix_hint="Merge the lists with a merge-only top_k of scope warp after the insertions, or insert without vote.",
)
def per_thread_vote_merged(ctx):
    sites = ctx.sites("top_k")
    for i, site in enumerate(sites):
        op = site.msg
        values = ctx.region(op.values.region)
        if topk_ir.is_merge(op) or not op.vote or values is None or values.layout != L.FRAGMENT_LAYOUT_PER_THREAD:
            continue
        if not any(topk_ir.is_merge(later.msg) and later.msg.scope == ir_pb2.SCOPE_WARP
                   and later.msg.values.region == op.values.region and later.role_index == site.role_index
                   for later in sites[i + 1:]):
            yield Finding(site.path, "votes against the warp's best k-th entry, but `%s` is never merged across the "
                          "warp after it: candidates only that lane's list would keep are skipped" % values.name)


@rule(
    "CAKE-STRUCT-022", "structure", "error",
    doc="A merge-only TopK (src = values) merges across a scope its lists support (lanes for wgmma_rows, mma_rows "
    "and wgmma_cols; warp for per_thread; thread re-sorts) and sets none of the insertion's fields "
    "(src_indices, index_limit, exclude_base, vote, own_threshold).",
    fix_hint="Give the merge the scope its list layout supports, and move insertion settings to the insertion.",
)
def merge_form(ctx):
    for site in ctx.sites("top_k"):
        op = site.msg
        if not topk_ir.is_merge(op):
            continue
        for field in ("src_indices", "index_limit", "exclude_base"):
            if op.HasField(field):
                yield Finding(site.path + "." + field, "a merge has no candidates: `%s` belongs to an insertion" % field)
        for flag in ("vote", "own_threshold"):
            if getattr(op, flag):
                yield Finding(site.path, "a merge has no candidates to vote on: `%s` belongs to an insertion" % flag)
        values = ctx.region(op.values.region)
        if values is None or values.space != REGISTER:
            continue
        allowed = topk_ir.MERGE_SCOPES.get(values.layout, ())
        if op.scope not in allowed:
            yield Finding(site.path, "merges %s lists with scope %s; they merge with scope %s" % (
                _layout(values), short(ir_pb2.Scope, op.scope), " or ".join(short(ir_pb2.Scope, s) for s in allowed)
                or "(none: not a list layout)"))


@rule(
    "CAKE-STRUCT-023", "structure", "error",
    doc="A Rescore reads per-thread [k] lists (f32 values, i32 indices) with scope warp and a metric, and rows of "
    "two tensors with the same feature dim: the query's origin and the database's row 0, feature 0.",
    fix_hint="Rescore per_thread [k] lists after a warp merge; point query at q[..., i, 0] and database at "
    "x[..., 0, 0] of tensors whose last dims agree.",
)
def rescore_form(ctx):
    for site in ctx.sites("rescore"):
        op = site.msg
        found, values = _register_list(ctx, site, "values", ir_pb2.DTYPE_F32)
        more, indices = _register_list(ctx, site, "indices", ir_pb2.DTYPE_I32)
        yield from found + more
        for region, field in ((values, "values"), (indices, "indices")):
            if region is not None and region.space == REGISTER and (
                    region.layout != L.FRAGMENT_LAYOUT_PER_THREAD or len(region.shape) != 1):
                yield Finding(site.path + "." + field, "`%s` is %s %s; rescore reads per_thread [k] lists"
                              % (region.name, _layout(region), list(region.shape)))
        if values is not None and indices is not None and list(values.shape) != list(indices.shape):
            yield Finding(site.path, "values and indices lists differ in length: %s vs %s"
                          % (list(values.shape), list(indices.shape)))
        if op.metric == ir_pb2.RESCORE_METRIC_UNSPECIFIED:
            yield Finding(site.path, "rescore needs a metric (l2, inner_product or cosine)")
        if op.scope != ir_pb2.SCOPE_WARP:
            yield Finding(site.path, "rescore splits features across a warp: scope warp, not %s"
                          % short(ir_pb2.Scope, op.scope))
        yield from _rescore_rows(ctx, site)


def _rescore_rows(ctx, site):
    op = site.msg
    q, x = ctx.params.get(op.query.param), ctx.params.get(op.database.param)
    if q is None or x is None:
        return
    q, x = q[1], x[1]
    if len(q.shape) < 2 or len(x.shape) < 2:
        yield Finding(site.path, "query and database tensors hold rows of features: [..., rows, D]")
        return
    if q.shape[-1] != x.shape[-1]:
        yield Finding(site.path, "query `%s` and database `%s` differ in their last (feature) dims" % (q.name, x.name),
                      (("`%s` is declared here" % q.name, ctx.param_path(q.name)),
                       ("`%s` is declared here" % x.name, ctx.param_path(x.name))))
    if len(op.query.coords) and exprs.constant(op.query.coords[-1]) != 0:
        yield Finding(site.path + ".query", "the query row starts at feature 0")
    if len(op.database.coords) >= 2 and (exprs.constant(op.database.coords[-1]) != 0
                                         or exprs.constant(op.database.coords[-2]) != 0):
        yield Finding(site.path + ".database", "the database origin is row 0, feature 0: entry j is row j")


def _lane_uniform_load(ctx, copy):
    """Whether a copy loads a per_thread list from global memory at coordinates no lane- or thread-dependent
    symbol enters: every lane of a warp then holds the same list."""
    region = ctx.region(copy.dst_tile.region)
    if copy.WhichOneof("src") != "src_global" or region is None or region.layout != L.FRAGMENT_LAYOUT_PER_THREAD:
        return False
    return not any({"lane", "thread", "elected"} & exprs.names(c) for c in copy.src_global.coords)


def _flow(ctx, body, path, state, out, depth=0):
    """Walk ops in program order tracking, per list region, where it was last merged across threads.

    `state` maps a values region to (how, path) of its last merge since a fill ("lanes"/"warp"), or
    "inserted" after an insertion; loops run twice so a state carried into the next iteration counts.
    """
    for i, op in enumerate(body[:]):  # (a slice: iterating a protobuf container ends in a raised IndexError)
        kind = op.WhichOneof("kind")
        node = "%s[%d].%s" % (path, i, kind)
        msg = getattr(op, kind) if kind else None
        if kind == "loop" and depth < 16:
            for _ in range(2):
                _flow(ctx, msg.body, node + ".body", state, out, depth + 1)
        elif kind == "branch" and depth < 16:
            before = dict(state)
            then = dict(before)
            _flow(ctx, msg.then_body, node + ".then_body", then, out, depth + 1)
            other = dict(before)
            _flow(ctx, msg.else_body, node + ".else_body", other, out, depth + 1)
            state.clear()
            for name in set(then) | set(other):
                a, b = then.get(name), other.get(name)
                merged = [s for s in (a, b) if isinstance(s, tuple)]
                state[name] = merged[0] if merged else (a or b)
        elif kind in ("fill", "elementwise"):  # every element overwritten: the lists start again
            state.pop(msg.dst.region, None)
        elif kind == "copy" and msg.WhichOneof("dst") == "dst_tile":
            if _lane_uniform_load(ctx, msg):
                state[msg.dst_tile.region] = ("warp", node)  # every lane reads the same list: as after a warp merge
            else:
                state.pop(msg.dst_tile.region, None)
        elif kind == "top_k":
            name = msg.values.region
            last = state.get(name)
            merge = topk_ir.is_merge(msg)
            across = merge and msg.scope in (ir_pb2.SCOPE_LANES, ir_pb2.SCOPE_WARP)
            if isinstance(last, tuple) and (not merge or across) and not any(
                    f[0] == "DATA-009" and f[1] == name for f in out.values()):
                out.setdefault(node, ("DATA-009", name, last[1]))  # its first duplicating op only
            if across:
                state[name] = ("lanes" if msg.scope == ir_pb2.SCOPE_LANES else "warp", node)
            elif not merge and not isinstance(last, tuple):
                state[name] = "inserted"
        elif kind == "rescore":
            name = msg.values.region
            last = state.get(name)
            if not (isinstance(last, tuple) and last[0] == "warp"):
                out.setdefault(node, ("DATA-010", name, None))


def _flow_findings(ctx):
    cache = ctx.__dict__.get("_topk_flow")
    if cache is None:
        cache = {}
        for r, role in enumerate(ctx.kernel.roles):
            _flow(ctx, role.body, "kernel.roles[%d].body" % r, {}, cache)
        ctx.__dict__["_topk_flow"] = cache
    return cache


@rule(
    "CAKE-DATA-009", "data consistency", "error",
    doc="Lists merged across threads are not inserted into or merged again before a fill (or another full overwrite) "
    "resets them: after a "
    "merge every lane holds the merged entries, so a later merge counts each of them once per lane "
    "(the duplicate-merge bug).",
    fix_hint="Merge once, after the last insertion (outside the tile loop); fill the lists before reusing them.",
)
def merged_twice(ctx):
    for path, (which, name, merged) in sorted(_flow_findings(ctx).items()):
        if which == "DATA-009":
            yield Finding(path, "`%s` was already merged across threads; merging or inserting again duplicates the "
                          "entries the threads share" % name, (("the merge", merged),))


@rule(
    "CAKE-DATA-010", "data consistency", "error",
    doc="A Rescore's lists are the same in every lane of the warp: the last TopK on them since their fill is a "
    "merge with scope warp, or no TopK followed a load that every lane makes from the same global address (the "
    "lanes split each row's features).",
    fix_hint="Merge the per-thread lists with a scope-warp merge-only top_k right before the rescore.",
)
def rescore_uniform(ctx):
    for path, (which, name, _) in sorted(_flow_findings(ctx).items()):
        if which == "DATA-010":
            yield Finding(path, "rescores `%s`, whose lists are not merged across the warp: each lane holds its own" % name)
