"""tune_rest's plan on CPU: which buckets it tunes, with which candidates, and its validation shapes."""

from kernels.kmeans import dispatch, tune_rest
from runtime.tuning_db import TuningDB


def _picker():
    db = TuningDB("kmeans_assign", "NVIDIA H200", "t", path="h200.json")
    db.remember("D2/K5/R4", "d64_k128_c4_s4_x2", {}, {}, "test")
    return dispatch.Picker([db], plan={"D2/K5/R5": "d64_k128_c2_s4_x2"})


def test_untuned_buckets_start_with_the_cost_models_choice_then_the_neighbours_winner():
    row = [(k, s) for k, s in dispatch.kernel_buckets() if k.startswith("D2/K5/")]  # ranking every bucket takes 20 s
    plan = {key: (shape, cands, rule, cost) for key, shape, cands, rule, cost in tune_rest.untuned_buckets(_picker(), 6.0, row)}
    assert "D2/K5/R4" not in plan  # it has an entry
    shape, cands, rule, cost = plan["D2/K5/R5"]
    assert [v.name for v in cands[:2]] == ["d64_k128_c2_s4_x2", "d64_k128_c4_s4_x2"] and len(cands) == tune_rest.CANDIDATES
    assert len(set(cands)) == len(cands) and all(v.admits(shape["D"]) for v in cands)
    assert rule.name == "d64_k128_c4_s4_x2" and cost.name == "d64_k128_c2_s4_x2"
    assert all(tune_rest.bench_dispatch.flops(s) / tune_rest.OUR_RATE_FLOPS_PER_MS <= 6.0 for s, _, _, _ in plan.values())


def test_validation_shapes_stay_in_their_bucket_and_are_never_the_tuning_shape():
    found = 0
    for key, shape in dispatch.kernel_buckets():
        s = tune_rest.second_shape(key, shape)
        if s is None:
            continue
        found += 1
        assert dispatch.bucket_key(s["B"], s["N"], s["K"], dispatch.kernel_d(s["D"])) == key and s != shape
    assert found > len(dispatch.kernel_buckets()) // 2


def test_every_bucket_representative_lies_in_its_own_bucket():
    for key, s in dispatch.kernel_buckets():  # the largest B*N bucket needs B > 1: N stops at 2^26
        assert dispatch.bucket_key(s["B"], s["N"], s["K"], s["D"]) == key and dispatch.DOMAIN.outside(s) is None
