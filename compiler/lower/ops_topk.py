"""Printers for top-k lists: TopK insertion, merge and sort, and Rescore (cake/warp/topk.cuh).

Lists are slots of a thread's value and index arrays, K entries each (slot s is entries
s * K .. s * K + K - 1). The insertion is unrolled here, element by element, so every
list access has a constant index and the lists stay in registers: for each group of
VOTE_GROUP elements the warp votes whether any lane holds a candidate that reaches its
list's threshold (the best k-th entry among the lanes sharing that list; for per-thread lists,
which are merged across the warp, among the warp's lanes), and only then runs the per-element
tests and sorted insertions.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import topk as topk_ir
from compiler.lower.access import GlobalAccess
from compiler.lower.context import LoweringError
from compiler.lower.fragments import Fragment, list_slot
from compiler.lower.op_printers import printer

_METRIC = {
    ir_pb2.RESCORE_METRIC_L2: "cake::topk::kL2",
    ir_pb2.RESCORE_METRIC_INNER_PRODUCT: "cake::topk::kInnerProduct",
    ir_pb2.RESCORE_METRIC_COSINE: "cake::topk::kCosine",
}


def _fragment(em, ref, path, what):
    if ref.region not in em.ctx.registers:
        raise LoweringError(path, "%s must be a register region, %r is not" % (what, ref.region))
    if len(ref.window):
        raise LoweringError(path, "register tiles are used whole (no windows)")
    return Fragment(em.ctx.registers[ref.region])


def _lists(em, op, path):
    """(values, indices, slots) of a TopK's lists, checked against k."""
    values = _fragment(em, op.values, path + ".values", "top_k values")
    indices = _fragment(em, op.indices, path + ".indices", "top_k indices")
    k = op.k
    if k < 1 or values.count is None or values.count % k or indices.shape != values.shape:
        raise LoweringError(path, "top_k lists must be matching [lists, %d] value and index fragments" % k)
    return values, indices, values.count // k


def _flag(largest):
    return "true" if largest else "false"


@printer("top_k")
def top_k(em, op, path):
    values, indices, slots = _lists(em, op, path)
    k, largest = op.k, _flag(op.largest)
    w = em.w
    if topk_ir.is_merge(op):
        lanes = topk_ir.merge_lanes(values.layout, op.scope)
        with w.block(""):
            for s in range(slots):
                if lanes is None:
                    w.line("cake::topk::sort<%d, %s, %d>(%s, %s);" % (k, largest, s * k, values.name, indices.name))
                else:
                    w.line("cake::topk::merge_lanes<%d, %s, %d, %d, %d>(%s, %s);"
                           % (k, largest, lanes[0], lanes[1], s * k, values.name, indices.name))
        return
    _insert(em, op, values, indices, slots, path)


def _insert(em, op, values, indices, slots, path):
    src = _fragment(em, op.src, path + ".src", "top_k src")
    if src.count is None:
        raise LoweringError(path + ".src", "top_k reads a score fragment")
    axis = op.axis
    if topk_ir.LIST_LAYOUT.get((src.layout, axis)) != values.layout:
        raise LoweringError(path, "top_k along axis %d of this src keeps lists of another layout" % axis)
    given = _fragment(em, op.src_indices, path + ".src_indices", "top_k src_indices") if op.HasField("src_indices") else None
    k, largest = op.k, _flag(op.largest)
    lanes = topk_ir.VOTE_LANES.get(values.layout)
    w = em.w
    with w.block(""):
        w.line("const int cake_base = %s;" % (em.expr(op.index_base) if op.HasField("index_base") else "0"))
        tests = []
        if op.HasField("index_limit"):
            w.line("const long long cake_limit = %s;" % em.expr(op.index_limit))
            tests.append("cj < cake_limit")
        if op.HasField("exclude_base"):
            w.line("const int cake_self = %s;" % em.expr(op.exclude_base))
        if op.vote:
            w.comment("Thresholds: what a candidate must reach to possibly enter the merged top k.")
            w.line("float cake_thr[%d];" % slots)
            for s in range(slots):
                w.line("cake_thr[%d] = %s;" % (s, _list_threshold(values, s, k, largest, None if op.own_threshold
                                                                  else lanes)))
        for g0 in range(0, src.count, topk_ir.VOTE_GROUP):
            group = list(range(g0, min(src.count, g0 + topk_ir.VOTE_GROUP)))
            with w.block(""):
                head = ""
                if op.vote:
                    # Per list, the best of its elements in a balanced tree, then one test against the list's
                    # threshold: the same answer as testing every element (better() skips a NaN as a failed
                    # test does), in log2 dependent steps instead of one per element.
                    hits = []
                    for s in range(slots):
                        elems = [src.elem(i) for i in group if list_slot(src, axis, i) == s]
                        if elems:
                            w.line("const float cake_b%d = %s;" % (s, _tree(elems, "cake::topk::better<%s>" % largest)))
                            hits.append("cake::topk::reaches<%s>(cake_b%d, cake_thr[%d])" % (largest, s, s))
                    w.line("const bool cake_hit = %s;" % " || ".join(hits))
                    head = "if (__any_sync(0xffffffffu, cake_hit))"
                with w.block(head):
                    for s in range(slots):
                        elems = [i for i in group if list_slot(src, axis, i) == s]
                        if elems:
                            _insert_slot(em, op, src, given, values, indices, s, elems, tests, path)


def _list_threshold(values, s, k, largest, lanes):
    """C++ threshold of list slot s: its k-th entry, combined across the lanes sharing the list (`lanes`, the
    (first, last) xor distances; None: the thread's own)."""
    kth = "%s[%d]" % (values.name, s * k + k - 1)
    if lanes is None:
        return kth
    sharing = lanes[1] // lanes[0]  # lanes holding parts of one list's row or column
    part = "%s[%d]" % (values.name, s * k + -(-k // sharing) - 1)
    return "cake::topk::threshold<%s, %d, %d>(%s, %s)" % (largest, lanes[0], lanes[1], kth, part)


def _tree(terms, fn):
    """C++ expression combining `terms` by the binary function `fn` in a balanced tree."""
    if len(terms) == 1:
        return terms[0]
    half = (len(terms) + 1) // 2
    return "%s(%s, %s)" % (fn, _tree(terms[:half], fn), _tree(terms[half:], fn))


def _pick(e, options, bit=None):
    """C++ ternary tree selecting options[e] for a run-time e (the options are register values)."""
    if len(options) == 1:
        return options[0]
    if bit is None:
        bit = 1
        while bit * 2 < len(options):
            bit *= 2
    lo, hi = options[:bit], options[bit:]
    return "((%s & %d) ? %s : %s)" % (e, bit, _pick(e, hi, None), _pick(e, lo, None))


def _insert_slot(em, op, src, given, values, indices, s, elems, tests, path):
    """Insert the candidates of one list among a group of the thread's elements.

    A mask marks the elements that reach the list's threshold (with a vote; without one, that
    beat its last entry); a loop takes them in element order (index order), each picked from the
    registers by a ternary tree on its bit, tests it against the list's current last entry, the
    index limit and the excluded position (the list's own, the same for all its elements), and
    inserts it. The insertion is instantiated once per list and group, not per element.
    """
    k, largest, axis = op.k, _flag(op.largest), op.axis
    last = "%s[%d]" % (values.name, s * k + k - 1)
    values_c, index_c = [], []
    for i in elems:
        coords = src.coords(str(i))
        index = given.elem(i) if given is not None else "cake_base + %s" % coords[axis if len(coords) > 1 else 0]
        values_c.append(src.elem(i))
        index_c.append("(%s)" % index)
    w = em.w
    with w.block(""):
        w.line("unsigned cake_m = 0u;")
        for bit, i in enumerate(elems):
            test = ("cake::topk::reaches<%s>(%s, cake_thr[%d])" % (largest, src.elem(i), s) if op.vote
                    else "cake::topk::beats<%s>(%s, %s)" % (largest, src.elem(i), last))
            w.line("cake_m |= %s ? %du : 0u;" % (test, 1 << bit))
        cond = ["cake::topk::beats<%s>(cv, %s)" % (largest, last)] + tests
        if op.HasField("exclude_base"):
            coords = src.coords(str(elems[0]))
            if len(coords) < 2:
                raise LoweringError(path + ".exclude_base", "a per-thread list has no position to exclude")
            cond.append("cj != cake_self + (%s)" % coords[1 - axis])  # the list's own row (column): one per slot
        with w.block("while (cake_m)"):
            w.line("const int e = __ffs(cake_m) - 1;")
            w.line("cake_m &= cake_m - 1u;")
            w.line("const float cv = %s;" % _pick("e", values_c))
            w.line("const int cj = %s;" % _pick("e", index_c))
            with w.block("if (%s)" % " && ".join(cond)):
                w.line("cake::topk::insert<%d, %s, %d>(%s, %s, cv, cj);" % (k, largest, s * k, values.name, indices.name))


@printer("rescore")
def rescore(em, op, path):
    values = _fragment(em, op.values, path + ".values", "rescore values")
    indices = _fragment(em, op.indices, path + ".indices", "rescore indices")
    if values.layout != ir_pb2.FRAGMENT_LAYOUT_PER_THREAD or len(values.shape) != 1 or indices.shape != values.shape:
        raise LoweringError(path, "rescore reads per-thread [k] value and index lists")
    metric = _METRIC.get(op.metric)
    if metric is None:
        raise LoweringError(path, "rescore metric not set")
    query = GlobalAccess(em, op.query, path + ".query")
    database = GlobalAccess(em, op.database, path + ".database")
    xparam = em.ctx.params[op.database.param]
    if len(xparam.shape) < 2:
        raise LoweringError(path + ".database", "the database is a tensor [..., rows, D]")
    k = values.shape[0]
    em.w.line("cake::topk::rescore<%d, %s, 0>(%s, %s, &%s[%s], &%s[%s], (long long)(%s), (long long)(%s));" % (
        k, metric, values.name, indices.name, query.ptr, query.index([]), database.ptr,
        database.index([]), database.dims[-2], database.dims[-1]))
