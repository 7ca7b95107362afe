"""KDA chunk schedule: builds for its parameters, and its products are the chunked oracle's."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.paths import walk
from kernels.kda.schedules import chunk_fwd_sm90a


def _ops(kernel, kind):
    return [getattr(n, kind) for _, n in walk(kernel) if isinstance(n, ir_pb2.Op) and n.WhichOneof("kind") == kind]


@pytest.mark.parametrize("head_k, stages", [(64, 2), (64, 3), (128, 1)])
def test_builds_with_the_ring_of_the_chunk_inputs(head_k, stages):
    k = chunk_fwd_sm90a(head_k=head_k, stages=stages)
    (ring,) = k.pipelines
    assert list(ring.regions) == ["sq", "sk", "sv", "sg"] and ring.stages == stages
    full = next(b for b in k.barriers if b.name == "full")
    assert full.tx_bytes == 64 * head_k * 2 * 2 + 64 * 64 * 2 + 64 * head_k * 4
    assert next(s for s in k.contract.symbols if s.name == "K").value == head_k


def test_chunk_products_scan_and_solve():
    k = chunk_fwd_sm90a()
    mmas = [(m.a.region, m.b.region, m.acc.region) for m in _ops(k, "mma")]
    assert mmas == [
        ("skp", "skm", "acc1"),  # A
        ("sqp", "skm", "acc2"),  # P
        ("sT", "skbg", "Y"),  # W
        ("sT", "svb", "acc2"),  # U = T (beta v) ...
        ("sW", "sS", "acc2"),  # ... - W S
        ("sqg", "sS", "acc1"),  # O = qg S ...
        ("sP", "sU", "acc1"),  # ... + P U
        ("sU", "skd", "St"),  # St += U^T kd
    ]
    (solve,) = _ops(k, "tri_solve")
    assert solve.lower and solve.unit_diagonal and not solve.HasField("b")
    (scan,) = _ops(k, "scan")
    assert scan.axis == 0 and not scan.exclusive and scan.dst.region == "sG"


def test_value_dim_other_than_64_is_refused():
    with pytest.raises(AssertionError, match="one warpgroup"):
        chunk_fwd_sm90a(head_v=128)
