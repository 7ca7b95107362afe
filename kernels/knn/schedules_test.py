"""KNN schedules: every parameter set the API plans verifies clean and lowers with register lists.

The lists must stay in registers (a run-time index would put them in local memory), so the
generated CUDA may index a list only by literals; the tile loop holds only per-thread
insertions, and each list is merged once, after it.
"""

import re

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.paths import walk
from compiler.lower import lower
from compiler.verify import format_diagnostic, has_errors, verify
from kernels.knn import plan, schedules

PLANNED = [
    (1, 65536, 65536, 128, 10), (1, 128, 10_000_000, 128, 10), (1, 1, 1_000_000, 128, 10), (4, 1000, 100_000, 64, 32),
    (1, 16, 4096, 512, 1), (2, 300, 5000, 1024, 5), (1, 50_000, 20_000_000, 128, 8), (1, 200, 100_000, 256, 16),
]


def _clean(kernel):
    diags = verify(kernel)
    assert not has_errors(diags), "\n".join(format_diagnostic(d) for d in diags)


def _ops(kernel, kind):
    return [(p, getattr(n, kind)) for p, n in walk(kernel) if isinstance(n, ir_pb2.Op) and n.WhichOneof("kind") == kind]


def _lists_indexed_by_literals(source, *names):
    for name in names:
        for m in re.finditer(r"\br_%s\[([^\]]*)\]" % name, source):
            assert re.fullmatch(r"\d+|i", m.group(1)), "%s indexed by %r" % (name, m.group(1))


@pytest.mark.parametrize("shape", PLANNED)
@pytest.mark.parametrize("metric", schedules.METRICS)
def test_planned_score_kernels_verify_clean(shape, metric):
    p = plan.plan(*shape)
    builder = schedules.rows_sm90a if p.layout == "rows" else schedules.cols_sm90a
    kernel = builder(metric=metric, **p.kwargs)
    _clean(kernel)
    _lists_indexed_by_literals(lower(kernel).source, "best_v", "best_i")


@pytest.mark.parametrize("shape", [s for s in PLANNED if plan.seed_rows(s[2], s[4])])
@pytest.mark.parametrize("metric", schedules.METRICS)
def test_seeded_score_kernels_verify_clean_in_both_layouts(shape, metric):
    """A seeded search's lists start at each query's bound: a per-row (rows) or per-column (cols) value broadcast
    onto the lists (the cols form was refused once, and searches fell back to the torch path)."""
    for layout in ("rows", "cols"):
        try:
            p = plan.plan(*shape, layout=layout, seeded=True)
        except ValueError:  # the cols layout holds no list this long
            continue
        builder = schedules.rows_sm90a if p.layout == "rows" else schedules.cols_sm90a
        _clean(builder(metric=metric, seeded=True, **p.kwargs))


@pytest.mark.parametrize("kw", [dict(), dict(metric="cos", dtype="f32", k=32), dict(metric="ip", index_dtype="i64")])
def test_merge_kernel_verifies_and_keeps_its_lists_in_registers(kw):
    kernel = schedules.merge(**kw)
    _clean(kernel)
    _lists_indexed_by_literals(lower(kernel).source, "best_v", "best_i", "cand_v", "cand_i")


@pytest.mark.parametrize("rescore", [True, False])
def test_single_list_merge_reads_the_one_list_in_every_lane_and_merges_nothing(rescore):
    kernel = schedules.merge(k=10, single=True, rescore=rescore)
    _clean(kernel)
    assert [t.scope for _, t in _ops(kernel, "top_k")] == ([ir_pb2.SCOPE_THREAD] if rescore else [])  # the re-sort only
    source = lower(kernel).source
    assert "merge_lanes" not in source and ("cake::topk::rescore<" in source) == rescore
    (p,) = [s for s in kernel.contract.symbols if s.name == "P"]
    assert (p.min, p.max) == (1, 1)


def test_rows_kernel_inserts_per_thread_in_the_tile_loop_and_merges_once_after_it():
    kernel = schedules.rows_sm90a(exclude_self=True)
    tops = _ops(kernel, "top_k")
    inserts = [(p, t) for p, t in tops if t.src.region != t.values.region]
    merges = [(p, t) for p, t in tops if t.src.region == t.values.region]
    assert len(inserts) == 1 and len(merges) == 1
    (ip, ins), (mp, mrg) = inserts[0], merges[0]
    assert ins.scope == ir_pb2.SCOPE_THREAD and ins.vote and ins.HasField("index_limit") and ins.HasField("exclude_base")
    assert mrg.scope == ir_pb2.SCOPE_LANES and ".loop.body" in ip and ip.count(".loop.body") > mp.count(".loop.body")


def test_cols_kernel_keeps_a_list_per_query_column():
    kernel = schedules.cols_sm90a(k=7)
    shapes = {r.name: (r.layout, list(r.shape)) for r in kernel.regions}
    assert shapes["best_v"] == (ir_pb2.FRAGMENT_LAYOUT_WGMMA_COLS, [16, 7])
    (_, ins), = [(p, t) for p, t in _ops(kernel, "top_k") if t.src.region != t.values.region]
    assert ins.axis == 0


@pytest.mark.parametrize("builder", [schedules.rows_sm80, schedules.rows_sm100a])
@pytest.mark.parametrize("metric", schedules.METRICS)
def test_other_targets_verify_clean(builder, metric):
    _clean(builder(metric=metric))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="metric"):
        schedules.rows_sm90a(metric="hamming")
    with pytest.raises(ValueError, match="k must be in"):
        schedules.cols_sm90a(k=65)
    with pytest.raises(ValueError, match="bf16 or f16"):
        schedules.rows_sm90a(dtype="f32")


@pytest.mark.parametrize("shape", [s for s in PLANNED if plan.seed_rows(s[2], s[4])])
@pytest.mark.parametrize("metric", schedules.METRICS)
def test_seeding_passes_keep_a_best_per_element_and_insert_once_per_range(shape, metric):
    """The minima form (plan.seed_plan): a min or max per accumulator element in the tile loop, one insertion of
    those bests after it, over whole ranges within the database."""
    p, rows = plan.seed_plan(*shape)
    assert p.kwargs["minima"] and rows == p.splits * p.tiles * p.kwargs["block_n"] <= shape[2]
    kernel = schedules.rows_sm90a(metric=metric, **p.kwargs)
    _clean(kernel)
    (ip, ins), = [(q, t) for q, t in _ops(kernel, "top_k") if t.src.region != t.values.region]
    assert ins.src.region == "bests" and ins.vote and ip.count(".loop.body") == 1  # the item loop's only
    mins = [e for _, e in _ops(kernel, "elementwise") if e.dst.region == "bests"]
    assert [e.op for e in mins] == [ir_pb2.ELEMENTWISE_OP_MAX if metric != "l2" else ir_pb2.ELEMENTWISE_OP_MIN]
    _lists_indexed_by_literals(lower(kernel).source, "best_v", "best_i")


def test_self_knn_seeds_with_the_k_best_form_and_the_minima_form_refuses_exclusions():
    p, rows = plan.seed_plan(1, 100_000, 100_000, 96, 20, exclude_self=True)
    assert "minima" not in p.kwargs and rows == plan.seed_rows(100_000, 20)
    with pytest.raises(ValueError, match="minima form"):
        schedules.rows_sm90a(minima=True, exclude_self=True)
    assert plan.seed_plan(1, 10, 1000, 64, 10) == (None, 0)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a", "sm_100a"])
@pytest.mark.parametrize("metric", schedules.METRICS)
def test_the_fan_in_verifies_clean_and_keeps_its_lists_in_registers(target, metric):
    kernel = schedules.merge_fanin(k=10, metric=metric, target=target)
    _clean(kernel)
    source = lower(kernel).source
    _lists_indexed_by_literals(source, "best_v", "best_i")
    assert "cake::topk::merge_lanes<10, %s, 1, 32, 0>" % ("true" if metric != "l2" else "false") in source
    assert "cake::topk::insert" not in source  # a warp merge, no insertion


def test_seeded_rows_kernels_vote_against_each_threads_own_kth_entry():
    p = plan.plan(1, 128, 10_000_000, 128, 10, seeded=True)
    seeded = lower(schedules.rows_sm90a(seeded=True, **p.kwargs)).source
    last = p.k - 1  # lists of plan.list_k(10) entries
    assert "cake::topk::threshold<" not in seeded and "cake_thr[0] = r_best_v[%d];" % last in seeded
    # Lists that start empty (all-pairs) fill, and a quad's threshold prunes more than a thread's own.
    assert "cake::topk::threshold<false, 1, 4>(r_best_v[%d], r_best_v[2])" % last in lower(
        schedules.rows_sm90a(**p.kwargs)).source
