"""Printers for wide top-k by filtering: TopKCollect (append a score tile's candidates that beat their row's
bound to global buffers) and TopKSelect (the k best of a buffer row, rescored and sorted): cake/block/select.cuh.

The collect is unrolled over the thread's elements like a TopK insertion (constant register indices):
per group of VOTE_GROUP elements one warp vote skips groups in which no lane holds a candidate that beats
its bound, which is nearly every group once the bound is near the k-th score.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import topk as topk_ir
from compiler.lower.access import GlobalAccess, SharedAccess
from compiler.lower.context import LoweringError
from compiler.lower.fragments import Fragment
from compiler.lower.op_printers import printer
from compiler.lower.ops_topk import _METRIC


def _fragment(em, ref, path, what):
    if ref.region not in em.ctx.registers:
        raise LoweringError(path, "%s must be a register region, %r is not" % (what, ref.region))
    return Fragment(em.ctx.registers[ref.region])


@printer("top_k_collect")
def top_k_collect(em, op, path):
    src = _fragment(em, op.src, path + ".src", "top_k_collect src")
    bound = _fragment(em, op.bound, path + ".bound", "top_k_collect bound")
    if src.count is None or src.layout not in (ir_pb2.FRAGMENT_LAYOUT_WGMMA_ACC, ir_pb2.FRAGMENT_LAYOUT_MMA_ACC,
                                               ir_pb2.FRAGMENT_LAYOUT_ROW_PER_THREAD) or op.axis != 1:
        raise LoweringError(path + ".src", "top_k_collect reads a score tile along its columns (axis 1)")
    if not bound.one_per_row:
        raise LoweringError(path + ".bound", "top_k_collect's bound holds one value per row")
    values = GlobalAccess(em, op.values, path + ".values")
    indices = GlobalAccess(em, op.indices, path + ".indices")
    count = GlobalAccess(em, op.count, path + ".count")
    largest = "true" if op.largest else "false"
    w = em.w
    with w.block(""):
        w.line("const int cake_base = %s;" % em.expr(op.index_base))
        if op.HasField("index_limit"):
            w.line("const long long cake_limit = %s;" % em.expr(op.index_limit))
        if op.HasField("exclude_base"):
            w.line("const int cake_self = %s;" % em.expr(op.exclude_base))
        w.line("const long long cake_cap = %s;" % values.dims[-1])
        for g0 in range(0, src.count, topk_ir.VOTE_GROUP):
            group = range(g0, min(src.count, g0 + topk_ir.VOTE_GROUP))
            with w.block(""):
                tests = ["cake::topk::beats<%s>(%s, %s)" % (largest, src.elem(i), bound.elem(bound.row_value_index(src, i)))
                         for i in group]
                w.line("const bool cake_hit = %s;" % " || ".join(tests))
                with w.block("if (__any_sync(0xffffffffu, cake_hit))"):
                    for i, test in zip(group, tests):
                        row, col = src.coords(str(i))
                        cond = [test, count.in_bounds([row])]
                        if op.HasField("index_limit"):
                            cond.append("cake_base + (%s) < cake_limit" % col)
                        if op.HasField("exclude_base"):
                            cond.append("cake_base + (%s) != cake_self + (%s)" % (col, row))
                        with w.block("if (%s)" % " && ".join(cond)):
                            w.line("cake::select::append(&%s, &%s, &%s, cake_cap, %s, cake_base + (%s));" % (
                                values.lvalue([row, "0"]), indices.lvalue([row, "0"]), count.lvalue([row]),
                                src.elem(i), col))


@printer("top_k_select")
def top_k_select(em, op, path):
    metric = _METRIC.get(op.metric)
    if metric is None:
        raise LoweringError(path, "top_k_select metric not set")
    values = GlobalAccess(em, op.values, path + ".values")
    indices = GlobalAccess(em, op.indices, path + ".indices")
    count = GlobalAccess(em, op.count, path + ".count")
    query = GlobalAccess(em, op.query, path + ".query")
    database = GlobalAccess(em, op.database, path + ".database")
    dist = GlobalAccess(em, op.dist, path + ".dist")
    idx = GlobalAccess(em, op.idx, path + ".idx")
    sv = SharedAccess(em, op.scratch_values, path + ".scratch_values")
    si = SharedAccess(em, op.scratch_indices, path + ".scratch_indices")
    em.w.line("cake::select::select_rescore<%s, %s>(&%s, &%s, &%s, (long long)(%s), (int)(%s), &%s, &%s, "
              "(long long)(%s), (long long)(%s), reinterpret_cast<float*>(%s), reinterpret_cast<int*>(%s), &%s, &%s);"
              % ("true" if op.largest else "false", metric, values.lvalue([]), indices.lvalue([]), count.lvalue([]),
                 values.dims[-1], em.expr(op.k), query.lvalue([]), database.lvalue([]), database.dims[-2],
                 database.dims[-1], sv.base, si.base, dist.lvalue([]), idx.lvalue([])))
