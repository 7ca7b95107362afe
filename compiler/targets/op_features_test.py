"""The op -> feature table: every use of an instruction family, located, in program order."""

from compiler import targets
from compiler.targets import op_features
from kernels.gemm.schedules import gemm_sm90a, gemm_sm100a


def test_the_sm90a_gemm_uses_tma_transaction_counts_wgmma_and_setmaxnreg():
    k = gemm_sm90a()
    used = {u.feature for u in op_features.uses(k)}
    assert used == {"tma", "mbarrier_tx", "wgmma", "setmaxnreg"}
    assert op_features.missing(k, targets.TARGETS["sm_90a"]) == []
    first = op_features.missing(k, targets.TARGETS["sm_80"])[0]
    assert (first.path, first.feature, first.via) == ("kernel.roles[0].body[0].branch.then_body[2].fence",
                                                      "mbarrier_tx", "fence")


def test_tensor_memory_and_its_ops_need_tcgen05():
    k = gemm_sm100a()
    on_sm90a = op_features.missing(k, targets.TARGETS["sm_90a"])
    assert {u.feature for u in on_sm90a} == {"tcgen05"}
    assert {u.via for u in on_sm90a} >= {"mma", "region"}


def test_clusters_multicast_and_every_feature_is_known():
    k = gemm_sm90a()
    k.launch.cluster.extend([2, 1, 1])
    uses = list(op_features.uses(k))
    assert uses[0] == op_features.Use("kernel.launch", "clusters", "a cluster launch", "launch")
    named = set(op_features.OP_FEATURES.values()) | set(op_features.MMA_FEATURES.values()) \
        | set(op_features.FENCE_FEATURES.values())
    assert named <= set(targets.FEATURES)
