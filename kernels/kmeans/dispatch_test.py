"""The KMeans dispatcher on CPU: buckets, the order of choices, forced configs, and host cost without the driver.

The per-call path runs here on CPU tensors with the driver replaced by a recorder, so
what is measured is all of the Python before cuLaunchKernel (on the GPU the output
allocation and the launch itself come on top; bench_dispatch measures the whole call).
"""

import ctypes
import time

import pytest
import torch
from cake.compiler.v1 import artifact_pb2
from cuda.bindings import driver

from compiler.lower import lower
from kernels.kmeans import dispatch, variants
from runtime import fast_launch
from runtime.compiled import CompiledKernelRunner
from runtime.tuning_db import TuningDB


def _best_us(fn, batches=10, calls=500):
    best = float("inf")
    for _ in range(batches):  # CPU time of the best batch: other work on a shared machine only adds wall time
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t0) / calls)
    return best * 1e6


def test_bucket_keys_follow_the_domains_edges():
    assert dispatch.bucket_key(1, 4096, 4, 16) == "D0/K0/R0"
    assert dispatch.bucket_key(1, 4097, 5, 17) == "D1/K1/R1"
    assert dispatch.bucket_key(64, 37440, 293, 128) == "D3/K4/R5"  # the video-diffusion cell: 2.4M points


def test_choices_come_in_order_autotuned_then_database_then_cost_model():
    db = TuningDB("kmeans_assign", "NVIDIA H200", "t", path="h200.json")
    db.remember(dispatch.bucket_key(1, 200000, 50, 32), "d32_k32_c1_s4_x2", {}, {}, "test")
    p = dispatch.Picker([db], plan={dispatch.bucket_key(1, 2000000, 50, 32): "d32_k64_c2_s4_x2"})
    assert p.pick(1, 200000, 50, 32) == (variants.BY_NAME["d32_k32_c1_s4_x2"], "tuned (h200.json)")
    v, how = p.pick(1, 2000000, 50, 32)
    assert v.name == "d32_k64_c2_s4_x2" and how.startswith("cost model (offline")
    p.remember(1, 200000, 50, 32, variants.BY_NAME["d32_k128_c4_s4_x2"])
    assert p.pick(1, 200000, 50, 32) == (variants.BY_NAME["d32_k128_c4_s4_x2"], "autotuned")


def test_a_bucket_without_an_entry_takes_its_measured_neighbour_one_step_along_b_times_n():
    db = TuningDB("kmeans_assign", "NVIDIA H200", "t", path="h200.json")
    db.remember("D2/K5/R4", "d64_k128_c4_s4_x2", {}, {}, "test")
    db.remember("D2/K5/R7", "d64_k256_c2_s4_x2", {}, {}, "test")
    p = dispatch.Picker([db], plan={"D2/K5/R5": "d64_k128_c2_s4_x2", "D2/K5/R8": "d64_k128_c2_s4_x2"})
    assert dispatch.bucket_key(1, 4194304, 2048, 64) == "D2/K5/R5"
    assert p.pick(1, 4194304, 2048, 64) == (variants.BY_NAME["d64_k128_c4_s4_x2"], "tuned neighbour (h200.json, D2/K5/R4)")
    assert p.pick(1, 10000000, 2048, 64)[1] == "tuned neighbour (h200.json, D2/K5/R7)"  # R6: the larger one
    v, how = p.pick(4, 67108864, 2048, 64)  # R8: R7 is one step smaller
    assert how == "tuned neighbour (h200.json, D2/K5/R7)"
    v, how = p.pick(1, 4000, 2048, 64)  # R0: R1 has no entry and two steps is too far
    assert how.startswith("cost model")
    assert dispatch.neighbour_keys(1, 1024, 2048, 64) == ["D2/K5/R1"]  # the smallest bucket has no smaller one


def test_a_database_entry_that_does_not_admit_d_is_not_used():
    db = TuningDB("kmeans_assign", "NVIDIA H200", "t")
    key = dispatch.bucket_key(1, 200000, 50, 32)
    db.remember(key, "d16_k32_c1_s4_x2", {}, {}, "test")  # a 16-feature tile under a 32-feature bucket
    v, how = dispatch.Picker([db], plan={key: "d32_k64_c2_s4_x2"}).pick(1, 200000, 50, 32)
    assert v.name == "d32_k64_c2_s4_x2" and how.startswith("cost model")


def test_forced_configs_are_checked():
    assert dispatch.forced("d64_k64_c2_s4_x2", 48) is variants.BY_NAME["d64_k64_c2_s4_x2"]
    with pytest.raises(ValueError, match="holds up to 64 features; this problem has 72"):
        dispatch.forced("d64_k64_c2_s4_x2", 72)
    with pytest.raises(ValueError, match="config must be an AssignVariant or one of the variant names"):
        dispatch.forced("fastest", 64)


def test_the_kernel_path_rounds_d_up_to_8_and_stops_at_1024():
    assert [dispatch.kernel_d(d) for d in (1, 8, 12, 256, 257, 1020, 1024, 1025)] == [8, 8, 16, 256, 264, 1024, 1024, None]
    assert [variants.d_tile(d) for d in (264, 384, 392, 520, 776, 1024)] == [384, 384, 512, 768, 1024, 1024]


def _entry(shapes, times):
    return {"variant": min(times[0], key=times[0].get), "shape": shapes[0], "shapes": shapes, "times_ms_by_shape": times}


def test_an_entrys_candidate_is_refit_to_the_shapes_blocks_of_points():
    # The B 1600 N 1170 K 14 D 16 row: the bucket's winner (1024 points a block) was timed at one problem of 2M
    # points; at 1170 points a problem its second block is 86% empty, and 256-point blocks waste 9%.
    big, small = "d16_k32_c4_s4_x2_r4", "d16_k32_c4_s4_x2"
    entry = _entry([{"B": 1, "N": 2097152, "K": 24, "D": 16}], [{big: 0.057, small: 0.069}])
    db = TuningDB("kmeans_assign", "NVIDIA H200", "t", entries={"D0/K1/R5": entry}, path="h200.json")
    p = dispatch.Picker([db], plan={})
    assert p.pick(1600, 1170, 14, 16) == (variants.BY_NAME[small], "tuned (h200.json; fits N 1170 K 14 over %s)" % big)
    assert p.pick(1, 2000000, 14, 16) == (variants.BY_NAME[big], "tuned (h200.json)")  # the tuned regime keeps it


def test_an_entrys_candidate_is_refit_to_the_shapes_centroid_tiles_within_the_margin():
    # K 103 on 96-wide tiles pays for 192 centroids, on 128-wide ones for 128 (the B 4 N 374148 K 103 D 24 row).
    k96, k128 = "d32_k96_c4_s4_x2", "d32_k128_c4_s4_x2"
    entry = _entry([{"B": 1, "N": 2097152, "K": 92, "D": 32}, {"B": 1, "N": 2097152, "K": 182, "D": 32}],
                   [{k96: 0.100, k128: 0.113}, {k96: 0.152, k128: 0.177}])
    assert dispatch.fit(entry, variants.BY_NAME[k96], 24, 374148, 103) == variants.BY_NAME[k128]
    assert dispatch.fit(entry, variants.BY_NAME[k96], 24, 374148, 90) == variants.BY_NAME[k96]
    entry["times_ms_by_shape"][0][k128] = 0.150  # slower than the margin allows: the winner stays
    assert dispatch.fit(entry, variants.BY_NAME[k96], 24, 374148, 103) == variants.BY_NAME[k96]


def test_an_entry_without_per_candidate_times_keeps_its_winner():
    v = variants.BY_NAME["d32_k96_c4_s4_x2"]
    assert dispatch.fit({"variant": v.name, "shape": {"B": 1, "N": 4, "K": 4, "D": 32}, "times_ms": {}}, v, 32, 9, 9) == v
    assert dispatch.fit({"variant": v.name}, v, 32, 9, 9) == v


def test_picking_costs_at_most_5_microseconds():
    db = TuningDB("kmeans_assign", "NVIDIA H200", "t")
    for key, _ in dispatch.kernel_buckets():
        db.remember(key, variants.GENERIC.name, {}, {}, "test")
    p = dispatch.Picker([db], plan={})
    shapes = [(b, n, k, 128) for b in (1, 3) for n in (5000, 70001, 3000000) for k in (7, 293, 5000)]
    fresh = iter(range(10 ** 9))

    def unseen():  # a new exact shape each call: bucket, database lookup, admissibility, memo store
        i = next(fresh)
        p.pick(1, 4096 + i % 100000, 2 + i % 97, 128)

    memo = _best_us(lambda: [p.pick(*s) for s in shapes], calls=50) / len(shapes)
    first = _best_us(unseen, calls=200)
    print("picker: %.2f us per call seen before, %.2f us for a new shape" % (memo, first))
    assert memo <= 5 and first <= 5


@pytest.fixture
def cpu_state(monkeypatch):
    """A launch state for CPU tensors on the real assignment kernel's metadata, the driver a no-op recorder."""
    v = variants.BY_NAME["d32_k32_c1_s4_x2"]
    md = lower(v.kernel()).launch
    runner = CompiledKernelRunner.__new__(CompiledKernelRunner)
    runner.md, runner._block, runner._cluster = md, tuple(md.block), None
    runner.kernel = type("K", (), {"function": driver.CUfunction(1)})()
    launch = fast_launch.FastLaunch(runner, late=("labels",))
    calls = []

    class Driver:
        @staticmethod
        def cuLaunchKernel(*args):  # noqa: N802 (the driver's name)
            calls.append(args)
            return 0

    stub = Driver()
    monkeypatch.setattr(fast_launch, "_driver", lambda: stub)
    monkeypatch.setattr(fast_launch, "_raw_stream", lambda index: 0)
    x, c = torch.randn(1, 1024, 32).to(torch.bfloat16), torch.randn(1, 16, 32).to(torch.bfloat16)
    args = [ctypes.c_void_p(0) for _ in md.args]
    late = {a.source: obj for a, obj in zip(md.args, args) if a.kind == artifact_pb2.ARG_KIND_POINTER and a.source == "labels"}
    prepared = fast_launch.Prepared((132,), runner._block, md.dynamic_shared_bytes, args, late,
                                    {"labels": ((1, 1024), torch.int32)})
    c_sq = torch.full((1, v.kp(16)), float("inf"))
    state = dispatch._State(v, "test", launch, prepared, c_sq, 16, None)
    key = (x.data_ptr(), c.data_ptr(), 1, 1024, 16, 32, x.dtype, x.get_device())
    monkeypatch.setitem(dispatch._states, key, state)
    return x, c, state, calls


def test_the_per_call_path_launches_once_and_refreshes_norms_only_when_c_changes(cpu_state):
    x, c, state, calls = cpu_state
    labels = dispatch.fast_assign(x, c)
    assert labels.shape == (1, 1024) and labels.dtype == torch.int32 and len(calls) == 1
    want = (c.float() ** 2).sum(-1)
    torch.testing.assert_close(state.c_sq[:, :16], want)
    assert torch.isinf(state.c_sq[:, 16:]).all()  # padded centroids never win
    state.c_sq.zero_()
    dispatch.fast_assign(x, c)
    assert (state.c_sq[:, :16] == 0).all()  # same tensor, same version: not recomputed
    c.mul_(2)  # an in-place write moves the version counter
    dispatch.fast_assign(x, c)
    torch.testing.assert_close(state.c_sq[:, :16], 4 * want)
    other = c.clone()  # another tensor: never served by the first one's state
    assert dispatch.fast_assign(x, other) is None


def test_padded_features_run_on_copies_kept_with_the_state_c_copied_only_when_it_changes(cpu_state):
    _, _, state, calls = cpu_state
    x, c = torch.randn(1, 1024, 27).to(torch.bfloat16), torch.randn(1, 16, 27).to(torch.bfloat16)
    state.xp, state.cp = torch.zeros(1, 1024, 32, dtype=torch.bfloat16), torch.zeros(1, 16, 32, dtype=torch.bfloat16)
    labels = torch.empty(1, 1024, dtype=torch.int32)
    dispatch._run(state, x, c, labels)
    assert torch.equal(state.xp[..., :27], x) and (state.xp[..., 27:] == 0).all() and torch.equal(state.cp[..., :27], c)
    torch.testing.assert_close(state.c_sq[:, :16], (c.float() ** 2).sum(-1))
    state.cp.zero_()
    x.add_(1)
    dispatch._run(state, x, c, labels)
    assert torch.equal(state.xp[..., :27], x) and (state.cp == 0).all()  # x copied every call, c only when it moved
    c.mul_(2)
    dispatch._run(state, x, c, labels)
    assert torch.equal(state.cp[..., :27], c) and len(calls) == 3


def test_the_per_call_path_costs_at_most_15_microseconds_before_the_driver(cpu_state):
    x, c, _, _ = cpu_state
    dispatch.fast_assign(x, c)
    us = _best_us(lambda: dispatch.fast_assign(x, c))
    print("kmeans_assign per-call path on CPU tensors, up to the driver call: %.2f us" % us)
    assert us <= 15
