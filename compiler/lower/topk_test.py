"""Lowering of TopK and Rescore: unrolled per-thread insertions with warp votes, one merge per layout's
sharing lanes, register lists indexed only by literals, and errors at the op's path."""

import re

import pytest

from compiler.ir.builder import KernelBuilder, block
from compiler.lower import LoweringError, lower


def _kernel(src_layout="wgmma_acc", src_shape=(64, 64), list_layout="wgmma_rows", list_shape=(64, 4), axis=1,
            merge_scope="lanes", vote=True, exclude=False, rescore=False, own_threshold=False):
    k = KernelBuilder("topk_probe", target="sm_90a")
    n = k.symbol("N", min=1, max=1 << 20)
    k.contract(math="top-k probe", reference="none", metric="exact", tolerance=0)
    out_v = k.tensor("out_v", "f32", [n, 4], access="write")
    out_i = k.tensor("out_i", "i32", [n, 4], access="write")
    q = k.tensor("q", "bf16", [n, 32])
    x = k.tensor("x", "bf16", [n, 32])
    k.grid(1)
    units = {"wgmma_acc": dict(warpgroups=1), "per_thread": dict(warps=1)}[src_layout]
    s = k.registers("s", "f32", list(src_shape), layout=src_layout, owner="main")
    v = k.registers("v", "f32", list(list_shape), layout=list_layout, owner="main")
    i = k.registers("i", "i32", list(list_shape), layout=list_layout, owner="main")
    with k.role("main", "compute", **units) as r:
        r.fill(s.all, 1.0)
        r.fill(v.all, float("inf"))
        r.fill(i.all, -1)
        with r.loop("t", 0, 3) as t:
            r.top_k(s.all, axis, 4, t * 64, v.all, i.all, "thread", index_limit=n, vote=vote,
                    exclude_base=block.x * 64 if exclude else None, own_threshold=own_threshold)
        r.top_k_merge(v.all, i.all, 4, merge_scope)
        if rescore:
            r.rescore(v.all, i.all, q[0, 0], x[0, 0], "cosine")
            r.top_k_merge(v.all, i.all, 4, "thread")
        r.copy(v.all, out_v[0, 0])
        r.copy(i.all, out_i[0, 0])
    return k.build()


def _lists_use_literals(source):
    for m in re.finditer(r"\br_[vi]\[([^\]]*)\]", source):
        assert re.fullmatch(r"\d+|i", m.group(1)), m.group(0)


def test_rows_insertion_votes_per_group_and_merges_the_quad_once():
    src = lower(_kernel(exclude=True)).source
    _lists_use_literals(src)
    assert src.count("__any_sync(0xffffffffu, cake_hit)") == 2  # 32 values per thread: two groups of 16
    # k = 4 over a quad: the best 4th entry, or the worst 1st entry of the four lanes.
    assert "cake::topk::threshold<false, 1, 4>(r_v[3], r_v[0])" in src and "cake::topk::threshold<false, 1, 4>(r_v[7], r_v[4])" in src
    assert "cj < cake_limit" in src and "cj != cake_self + (cake::WgmmaAcc<64>::row(" in src
    # One sorted insertion per list and group (not per element): two groups x two row slots.
    assert src.count("cake::topk::insert<4, false, 0>") == 2 and src.count("cake::topk::insert<4, false, 4>") == 2
    assert src.count("cake::topk::merge_lanes<4, false, 1, 4,") == 2


def test_a_vote_tests_each_lists_best_element_found_in_a_balanced_tree():
    src = lower(_kernel()).source
    # Group 0 of a [64, 64] wgmma tile: row slot 0 holds elements 0, 1, 4, 5, 8, 9, 12, 13; the best of them in
    # three levels, then one test against the slot's threshold, or-ed with slot 1's.
    flat = "".join(src.split())
    assert ("constfloatcake_b0=cake::topk::better<false>(cake::topk::better<false>(cake::topk::better<false>("
            "r_s.d[0],r_s.d[1]),cake::topk::better<false>(r_s.d[4],r_s.d[5]))," in flat)
    assert ("constboolcake_hit=cake::topk::reaches<false>(cake_b0,cake_thr[0])||"
            "cake::topk::reaches<false>(cake_b1,cake_thr[1]);" in flat)
    assert "cake_hit |=" not in src


def test_an_own_threshold_is_the_threads_kth_entry_with_no_shuffle():
    src = lower(_kernel(own_threshold=True)).source
    _lists_use_literals(src)
    assert "cake_thr[0] = r_v[3];" in src and "cake_thr[1] = r_v[7];" in src
    assert "cake::topk::threshold<" not in src and "__shfl" not in src.split("merge_lanes")[0]
    assert src.count("__any_sync(0xffffffffu, cake_hit)") == 2  # still a vote per group


def test_column_lists_share_thresholds_and_merge_across_the_eight_lanes_of_a_column():
    src = lower(_kernel(src_shape=(64, 16), list_layout="wgmma_cols", list_shape=(16, 4), axis=0)).source
    _lists_use_literals(src)
    assert "cake::topk::threshold<false, 4, 32>(r_v[3], r_v[0])" in src
    assert src.count("cake::topk::merge_lanes<4, false, 4, 32,") == 4  # four columns per thread
    assert "cake_base + cake::WgmmaAcc<16>::row(" in src


def test_per_thread_lists_merge_across_the_warp_then_rescore_and_sort():
    src = lower(_kernel(src_layout="per_thread", src_shape=(8,), list_layout="per_thread", list_shape=(4,), axis=0,
                        merge_scope="warp", vote=False, rescore=True)).source
    _lists_use_literals(src)
    assert "__any_sync" not in src and "cake::topk::merge_lanes<4, false, 1, 32, 0>(r_v, r_i);" in src
    assert "cake::topk::rescore<4,cake::topk::kCosine,0>(r_v,r_i,&v_q[" in "".join(src.split())  # a wrapped call
    assert "cake::topk::sort<4, false, 0>(r_v, r_i);" in src


def test_voted_per_thread_insertions_take_the_warps_threshold():
    src = lower(_kernel(src_layout="per_thread", src_shape=(8,), list_layout="per_thread", list_shape=(4,), axis=0,
                        merge_scope="warp", vote=True)).source
    _lists_use_literals(src)
    # The lists are merged across the warp: the best 4th entry of its 32 lanes, or the worst of their 1st entries.
    assert "cake::topk::threshold<false, 1, 32>(r_v[3], r_v[0])" in src
    assert src.count("__any_sync(0xffffffffu, cake_hit)") == 1


def test_a_list_layout_the_scores_do_not_keep_is_a_lowering_error():
    with pytest.raises(LoweringError) as e:
        lower(_kernel(list_layout="wgmma_cols", list_shape=(64, 4)))
    assert e.value.path == "kernel.roles[0].body[3].loop.body[0].top_k"
