"""Rules the known-bad corpus does not isolate, each on a small kernel; and every rule is exercised somewhere."""

import glob
import os
import re

from cake.ir.v1 import ir_pb2

from compiler.ir.expr import as_expr
from compiler.ir.paths import walk
from compiler.testing.verifier_kernels import lapping, ring
from compiler.verify import RULES, verify
from kernels.gemm.schedules import gemm_sm80, gemm_sm90a, gemm_sm100a

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")

# Rule ids this file (or simulate_test) exercises; the bad corpus covers the rest.
UNIT_TESTED = {
    "CAKE-TARGET-001", "CAKE-TARGET-004", "CAKE-TARGET-005", "CAKE-TARGET-006", "CAKE-TARGET-007",
    "CAKE-TARGET-009", "CAKE-TARGET-010", "CAKE-MEM-001", "CAKE-MEM-002", "CAKE-RES-006", "CAKE-STRUCT-001",
    "CAKE-STRUCT-013", "CAKE-STRUCT-024", "CAKE-SYNC-008", "CAKE-SYNC-015", "CAKE-SYNC-016", "CAKE-CONTRACT-006",
}  # fmt: skip


def _ids(k):
    return {d.id for d in verify(k)}


def _paths(k, rule_id):
    return [d.path for d in verify(k) if d.id == rule_id]


def test_sm90a_instructions_on_sm80():
    k = ring()
    k.target = ir_pb2.TARGET_SM_80
    assert {"CAKE-TARGET-004", "CAKE-TARGET-005", "CAKE-TARGET-010"} <= _ids(k)
    (tma,) = _paths(k, "CAKE-TARGET-004")
    assert tma.endswith("tma_load")


def test_clusters_stmatrix_and_proxy_fence_on_sm80():
    k = ring()
    k.target = ir_pb2.TARGET_SM_80
    k.launch.cluster[:] = [2, 1, 1]
    use = k.roles[1].body
    use.add(fence=ir_pb2.Fence(kind=ir_pb2.FENCE_KIND_PROXY_ASYNC))
    use.add(stmatrix=ir_pb2.Stmatrix(src=ir_pb2.TileRef(region="v"), dst=ir_pb2.TileRef(region="s", stage=as_expr(0))))
    assert {"CAKE-TARGET-006", "CAKE-TARGET-007", "CAKE-TARGET-009"} <= _ids(k)
    assert _paths(k, "CAKE-TARGET-006") == ["kernel.launch"]


def test_cluster_rank_in_an_op_on_sm80():
    k = ring()
    k.target = ir_pb2.TARGET_SM_80
    k.roles[0].body[0].branch.cond.binary.rhs.CopyFrom(as_expr("cluster.rank"))
    assert _paths(k, "CAKE-TARGET-006") == ["kernel.roles[0].body[0].branch.cond.binary.rhs"]


def test_incomplete_expressions_outside_and_inside_ops():
    k = ring()
    k.launch.grid[0].Clear()
    k.roles[0].body[0].branch.cond.binary.op = 0
    assert _paths(k, "CAKE-STRUCT-005") == ["kernel.launch.grid[0]", "kernel.roles[0].body[0].branch.cond.binary"]


def test_unknown_target():
    k = ring()
    k.target = 0
    assert _paths(k, "CAKE-TARGET-001") == ["kernel"]
    k.target = 77
    assert _paths(k, "CAKE-TARGET-001") == ["kernel"]


def test_tma_box_limits():
    k = ring()
    k.regions[0].shape[0] = 512
    assert "CAKE-MEM-001" in _ids(k)
    k = ring()
    k.regions[0].shape[0] = 2  # 8 bytes
    assert "CAKE-MEM-002" in _ids(k)


def test_tensor_memory_budget():
    k = gemm_sm100a()
    tacc = next(r for r in k.regions if r.space == ir_pb2.MEMORY_SPACE_TENSOR)
    tacc.shape[:] = [128, 1024]
    assert "CAKE-RES-006" in _ids(k)


def test_names_and_roles():
    k = ring()
    k.name = "9lives"
    assert _paths(k, "CAKE-STRUCT-001") == ["kernel"]
    k = ring()
    del k.roles[:]
    assert _paths(k, "CAKE-STRUCT-013") == ["kernel"]


def test_lapped_wait():
    assert _paths(lapping(), "CAKE-SYNC-008") == ["kernel.roles[1].body[2].mbarrier_wait"]


def test_barrier_array_reference_without_slot():
    k = ring()
    arrive = k.roles[1].body[1].loop.body[3].mbarrier_arrive
    arrive.barrier.ClearField("round")
    assert [(d.id, d.path) for d in verify(k)] == [("CAKE-SYNC-015", "kernel.roles[1].body[1].loop.body[3].mbarrier_arrive")]


def test_writing_a_read_only_tensor():
    k = ring()
    k.roles[1].body[1].loop.body[4].branch.then_body[0].copy.dst_global.param = "x"
    assert "CAKE-CONTRACT-006" in _ids(k)


def test_every_rule_is_exercised_by_the_bad_corpus_or_a_unit_test():
    corpus = set()
    for path in glob.glob(os.path.join(ROOT, "compiler", "corpus", "bad", "*.cake")):
        with open(path) as f:
            corpus.add(re.match(r"# expect: (\S+)", f.read()).group(1))
    assert {r.id for r in RULES} == corpus | UNIT_TESTED


def test_a_voted_per_thread_insertion_needs_a_warp_merge_after_it():
    from compiler.ir.builder import KernelBuilder

    def kernel(merge_scope):
        k = KernelBuilder("vote_probe", target="sm_90a")
        n = k.symbol("N", min=1, max=1 << 20)
        k.contract(math="top-k probe", reference="none", metric="exact", tolerance=0)
        out = k.tensor("out", "f32", [n, 4], access="write")
        k.grid(1)
        s = k.registers("s", "f32", [8], layout="per_thread", owner="main")
        v = k.registers("v", "f32", [4], layout="per_thread", owner="main")
        i = k.registers("i", "i32", [4], layout="per_thread", owner="main")
        with k.role("main", "compute", warps=1) as r:
            r.fill(s.all, 1.0)
            r.fill(v.all, float("inf"))
            r.fill(i.all, -1)
            r.top_k(s.all, 0, 4, 0, v.all, i.all, "thread", vote=True)
            r.top_k_merge(v.all, i.all, 4, merge_scope)
            r.copy(v.all, out[0, 0])
        return k.build()

    assert _paths(kernel("thread"), "CAKE-STRUCT-024") == ["kernel.roles[0].body[3].top_k"]  # a re-sort only
    assert "CAKE-STRUCT-024" not in _ids(kernel("warp"))


def _mma_sites(k):
    """(path, Mma) of every mma op of a kernel."""
    return [(path, node) for path, node in walk(k) if path.endswith(".mma")]


def test_instr_shapes_lowering_cannot_emit_are_refused_at_the_field():
    for build, bad, good in ((gemm_sm90a, [64, 64, 8], [64, 64, 16]), (gemm_sm80, [16, 8, 8], [16, 8, 16]),
                             (gemm_sm100a, [128, 128, 16], [128, 256, 16])):
        k = build()
        (path, mma), = _mma_sites(k)
        mma.instr_shape.extend(good)
        assert "CAKE-STRUCT-027" not in _ids(k), build.__name__
        del mma.instr_shape[:]
        mma.instr_shape.extend(bad)
        assert _paths(k, "CAKE-STRUCT-027") == [path + ".instr_shape"], build.__name__
