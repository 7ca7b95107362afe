"""KMeans schedules: build across parameters; the epilogues fold tiles into a running arg-min."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.paths import walk
from kernels.kmeans import schedules


def _ops(kernel, kind):
    return [getattr(n, kind) for _, n in walk(kernel) if isinstance(n, ir_pb2.Op) and n.WhichOneof("kind") == kind]


def _region(kernel, name):
    return next(r for r in kernel.regions if r.name == name)


@pytest.mark.parametrize(
    "build, kwargs, scope",
    [
        (schedules.assign_sm90a, dict(d=64, block_k=256, stages=2), ir_pb2.SCOPE_LANES),
        (schedules.assign_sm90a, dict(d=256, block_k=128, stages=2, dtype="f16"), ir_pb2.SCOPE_LANES),
        (schedules.assign_sm80, dict(d=64, block_n=64, block_k=128, stages=4), ir_pb2.SCOPE_LANES),
        (schedules.assign_sm100a, dict(d=64, block_k=256, epilogue_cols=64), ir_pb2.SCOPE_THREAD),
    ],
)
def test_assign_folds_every_tile_into_a_running_argmin(build, kwargs, scope):
    k = build(**kwargs)
    for arg in _ops(k, "arg_reduce"):  # one per accumulator on sm_100a
        assert arg.op == ir_pb2.ARG_REDUCE_OP_ARGMIN and arg.accumulate and arg.scope == scope and arg.axis == 1
    assert next(s for s in k.contract.symbols if s.name == "D").value == kwargs["d"]
    assert {p.name: p.access for p in k.params}["labels"] == ir_pb2.ACCESS_WRITE
    fmas = [e for e in _ops(k, "elementwise") if e.op == ir_pb2.ELEMENTWISE_OP_FMA]
    assert fmas and all(f.srcs[1].imm == -2.0 for f in fmas)  # c_sq - 2 x.c


def test_sm90a_streams_centroids_and_norms_through_one_ring():
    k = schedules.assign_sm90a(d=128, block_k=128, stages=3)
    assert list(k.pipelines[0].regions) == ["sCols", "sColSq"]
    full = next(b for b in k.barriers if b.name == "full")
    assert full.tx_bytes == 128 * 128 * 2 + 128 * 4
    assert list(_region(k, "best_i").shape) == [64] and _region(k, "best_i").dtype == ir_pb2.DTYPE_I32


def test_sm100a_ping_pongs_two_tensor_memory_accumulators():
    k = schedules.assign_sm100a(block_k=128)
    assert [list(_region(k, n).shape) for n in ("tacc0", "tacc1")] == [[128, 128], [128, 128]]
    assert [m.acc.region for m in _ops(k, "mma")] == ["tacc0", "tacc1", "tacc0"]  # tile 0, then odd / even per pair
    assert [w.size for w in _ops(k, "tmem_load")[0].src.window] == [128, 32]
    assert {n.barrier for n in _ops(k, "named_barrier_sync")} == {"wg"}


def test_update_scatters_points_and_counts_with_warp_aggregated_atomics():
    k = schedules.update(d=128, cols=32)
    atomics = _ops(k, "atomic")
    assert [a.dst.param for a in atomics] == ["counts", "sums"]
    assert all(a.index.region == "lab" and a.index_axis == 1 and a.aggregation == ir_pb2.AGGREGATION_WARP for a in atomics)
    (loop,) = _ops(k, "loop")
    assert loop.end.int == 128 // 32


def test_finalize_keeps_the_previous_centroid_of_an_empty_cluster():
    k = schedules.finalize(d=64, cols=16)
    (sel,) = [e for e in _ops(k, "elementwise") if e.op == ir_pb2.ELEMENTWISE_OP_SELECT]
    assert [s.tile.region for s in sel.srcs] == ["cnt", "s", "old"]
    assert k.contract.reference == "kernels.kmeans.reference.finalize"
