"""KDA schedules: both phases verify clean and fit at K = V = 128; their products are the chunk algorithm's."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler import verify
from compiler.ir.paths import walk
from compiler.ir.smem_layout import layout
from compiler.lower import lower
from kernels.kda import schedules


def _ops(kernel, kind):
    return [getattr(n, kind) for _, n in walk(kernel) if isinstance(n, ir_pb2.Op) and n.WhichOneof("kind") == kind]


@pytest.mark.parametrize("build", [schedules.intra_sm90a, schedules.chain_sm90a, lambda: schedules.chain_sm90a(stages=1)])
def test_verifies_without_findings(build):
    assert [verify.format_diagnostic(d) for d in verify.verify(build())] == []


def test_intra_phase_sums_four_causal_sub_chunk_products_over_two_warpgroups():
    k = schedules.intra_sm90a()
    assert [r.name for r in k.roles] == ["load", "wa", "wb"]
    mmas = [(m.a.region, m.a.stage.int, m.b.region, m.acc.region, m.accumulate.int) for m in _ops(k, "mma")]
    # wa: A over the four 16-token row blocks (the first overwrites) on alternating tile stages,
    # then W and U of its column half; wb: P alike, then W and U of its half.
    per_role = lambda left, acc, w, u: (  # noqa: E731
        [(left, i % 2, "skm", acc, int(i > 0)) for i in range(4)] + [("sT", 0, "skp", w, 0), ("sT", 0, "sqp", u, 0)])
    assert mmas == per_role("skp", "acc_wa", "out_wa", "acc_wa") + per_role("sqp", "acc_wb", "out_wb", "acc_wb")
    (solve,) = _ops(k, "tri_solve")
    assert solve.lower and solve.unit_diagonal and solve.a.region == "sA" and solve.x.region == "acc_wa"
    # Per row block and warpgroup, one exponent difference from the G kept in registers: the right
    # factor's exponent clamped, the left factors' capped at 0.
    subs = [(e.srcs[0].tile.region, e.srcs[1].tile.window[0].start.int) for e in _ops(k, "elementwise")
            if e.op == ir_pb2.ELEMENTWISE_OP_SUB and e.srcs[0].tile.region in ("G_wa", "G_wb")]
    assert subs == [("G_wa", 16 * i) for i in range(4)] + [("G_wb", 16 * i) for i in range(4)]
    mins = [e.srcs[1].imm for e in _ops(k, "elementwise") if e.op == ir_pb2.ELEMENTWISE_OP_MIN]
    assert mins == [schedules.CLAMP, 0.0] * 8
    assert k.launch.grid[0].binary.rhs.int == schedules.C  # one block per chunk


def test_intra_phase_fits_one_block_per_sm_with_double_buffered_tiles():
    k = schedules.intra_sm90a()
    assert layout(k).requested <= 232448
    assert [r.registers for r in k.roles] == [40, 232, 232]  # setmaxnreg: the producer's share to the consumers


def test_chain_carries_the_transposed_state_through_four_products_per_chunk():
    k = schedules.chain_sm90a()
    mmas = [(m.a.region, m.b.region, m.acc.region) for m in _ops(k, "mma")]
    assert mmas == [("sw", "sS", "U"), ("sqg", "sS", "O"), ("sp", "sU", "O"), ("sU", "skd", "St")]
    (ring,) = k.pipelines
    assert list(ring.regions) == ["sw", "su0", "sp", "sqg", "skd", "sgl"]
    full = next(b for b in k.barriers if b.name == "full")
    assert full.tx_bytes == 64 * 128 * 2 * 3 + 64 * 64 * 2 + 64 * 64 * 2 + 128 * 4


@pytest.mark.parametrize("stages, blocks_per_sm", [(2, 1), (1, 2)])
def test_chain_ring_depth_sets_blocks_per_sm(stages, blocks_per_sm):
    total = layout(schedules.chain_sm90a(stages=stages)).total
    assert (232448 // total) == blocks_per_sm


def test_intra_phase_lowers_its_inverse_blocked_and_its_cumsum_per_column():
    source = lower(schedules.intra_sm90a()).source
    assert "diagonal blocks inverted" in source
    assert source.count("for (int l = cake_thread; l < 64; l += 128)") == 2  # each warpgroup scans half the columns


FLA = dict(gate="sigmoid", g_dtype="bf16", l2norm=True, beta_sigmoid=True)  # FlashKDA's options, bf16 raw g


@pytest.mark.parametrize("options", [FLA, dict(FLA, gate="softplus"), dict(gate="sigmoid"), dict(g_dtype="bf16"),
                                     dict(l2norm=True), dict(beta_sigmoid=True)])
def test_fused_options_verify_without_findings_and_fit(options):
    k = schedules.intra_sm90a(**options)
    assert [verify.format_diagnostic(d) for d in verify.verify(k)] == []
    assert layout(k).requested <= 232448


def test_fused_options_run_in_the_load_phase_before_the_cumsum():
    k = schedules.intra_sm90a(**FLA)
    assert k.name == "kda_intra_sm90a_sigmoid_gate_gbf16_l2norm_beta_sigmoid"
    loads = [(t.src.param, t.dst.region, t.dst.stage.int) for t in _ops(k, "tma_load")]
    assert loads[3:] == [("g", "skm", 1), ("gate_rows", "sgate", 0)]  # bf16 g staged in a tile free until then
    full = next(b for b in k.barriers if b.name == "full")
    assert full.tx_bytes == 64 * 128 * 2 * 4 + 3 * 128 * 4  # q, k, v, g in bf16 and the gate rows
    for role in k.roles[1:]:
        kinds = [op.WhichOneof("kind") for op in role.body]
        ew = [ir_pb2.ElementwiseOp.Name(op.elementwise.op)[len("ELEMENTWISE_OP_"):] for op in role.body if op.WhichOneof("kind") == "elementwise"]
        # beta's sigmoid; two row sums per norm (this half, the other half), then the gate s f(m g + a), then the cumsum
        assert ew[:1] == ["SIGMOID"] and kinds.count("reduce") == 4
        assert ew[ew.index("FMA"):ew.index("FMA") + 3] == ["FMA", "SIGMOID", "MUL"]
        assert kinds.index("scan") > max(i for i, kd in enumerate(kinds) if kd == "reduce")


def test_plain_schedule_is_unchanged_by_the_options_machinery():
    k = schedules.intra_sm90a()
    assert k.name == "kda_intra_sm90a" and "gate_rows" not in [p.name for p in k.params]
    assert not [r for r in k.regions if r.name in ("sgate", "nq_wa")]


def test_unknown_options_are_value_errors():
    with pytest.raises(ValueError, match="^gate must be"):
        schedules.intra_sm90a(gate="relu")
    with pytest.raises(ValueError, match="^g_dtype must be"):
        schedules.intra_sm90a(g_dtype="f16")
