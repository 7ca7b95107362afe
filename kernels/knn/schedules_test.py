"""KNN schedule: builds across k and tile sizes; the epilogue merges every tile into running top-k lists."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.paths import walk
from kernels.knn.schedules import topk_sm90a


def _ops(kernel, kind):
    return [getattr(n, kind) for _, n in walk(kernel) if isinstance(n, ir_pb2.Op) and n.WhichOneof("kind") == kind]


@pytest.mark.parametrize("k, block_m, consumers", [(1, 256, 2), (16, 128, 2), (32, 64, 1)])
def test_topk_merges_every_database_tile(k, block_m, consumers):
    kernel = topk_sm90a(k=k, block_m=block_m, consumers=consumers, stages=2)
    (top,) = _ops(kernel, "top_k")
    assert top.k == k and not top.largest and top.scope == ir_pb2.SCOPE_LANES
    shapes = {r.name: list(r.shape) for r in kernel.regions}
    assert shapes["best_v"] == [64, k] and shapes["score"] == [64, block_m]
    assert {p.name: list(p.shape) for p in kernel.params}["dist"][1].sym == "k"


def test_stored_distances_add_the_query_norm():
    adds = [e for e in _ops(topk_sm90a(), "elementwise") if e.op == ir_pb2.ELEMENTWISE_OP_ADD]
    assert [s.tile.region for s in adds[0].srcs] == ["best_v", "qs"]


def test_k_above_32_is_refused():
    with pytest.raises(AssertionError, match="at most 32"):
        topk_sm90a(k=33)
