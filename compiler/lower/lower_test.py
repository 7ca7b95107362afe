"""Lowering tests: golden output for a small program, determinism, derived details, errors."""

import os

import pytest

from compiler.ir.builder import KernelBuilder, block
from compiler.lower import LoweringError, lower
from kernels.gemm.schedules import gemm_sm90a

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "testdata", "ring_copy.cu.golden")


def ring_copy():
    """A two-stage TMA ring feeding a consumer that copies tiles out: every sync idiom, small."""
    k = KernelBuilder("ring_copy", target="sm_90a")
    n = k.symbol("N", min=64, max=1 << 24)
    k.contract(math="y[i] = x[i]", reference="none", metric="exact", tolerance=0)
    k.require(n % 64 == 0, "whole tiles")
    x = k.tensor("x", "f32", [n])
    y = k.tensor("y", "f32", [n], access="write")
    k.grid(n // 256)
    tile = k.shared("tile", "f32", [64], stages=2)
    full = k.mbarrier("full", arrivals=1, count=2, tx_bytes=256)
    empty = k.mbarrier("empty", arrivals=1, count=2)
    k.pipeline("ring", 2, full, empty, [tile], producer="load", consumers=["store"])
    with k.role("load", "producer", warps=1) as r:
        with r.if_(r.thread == 0):
            r.mbarrier_init(full)
            r.mbarrier_init(empty)
            r.fence("mbarrier_init")
        r.block_sync()
        with r.if_(r.elected):
            with r.loop("i", 0, 4) as i:
                r.wait(empty.round(i))
                r.expect_tx(full.round(i), 256)
                r.tma_load(x[block.x * 256 + i * 64], tile[i % 2], full.round(i))
    with k.role("store", "consumer", warps=2) as r:
        r.block_sync()
        with r.loop("i", 0, 4) as i:
            r.wait(full.round(i))
            r.copy(tile[i % 2], y[block.x * 256 + i * 64])
            r.fence("proxy_async")  # the generic reads of the stage before its TMA refill
            r.named_sync(k.named_barrier("drained", threads=64))
            with r.if_((r.warp == 0) & r.elected):
                r.arrive(empty.round(i))
    return k.build()


def test_golden_ring_copy():
    source = lower(ring_copy()).source
    if os.environ.get("CAKE_UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as f:
            f.write(source)
    with open(GOLDEN) as f:
        assert source == f.read(), "lowering output changed; rerun with CAKE_UPDATE_GOLDEN=1 if intended"


def test_output_is_deterministic():
    assert lower(gemm_sm90a()).source == lower(gemm_sm90a()).source


def test_derived_layout_barriers_and_parities():
    ctx = lower(ring_copy())
    assert ctx.shared["tile"].offset == 0 and ctx.shared["tile"].stage_bytes == 256
    assert ctx.mbarriers["full"][0] == 512 and ctx.mbarriers["empty"][0] == 528
    assert ctx.named_barriers["drained"][0] == 1
    src = ctx.source
    # The consumer waits parity (i / 2) % 2 on full; the producer (i / 2 + 1) % 2 on empty.
    assert "cake::mbarrier::wait((bar_full + (v_i) % 2), ((v_i) / 2 + 0) & 1);" in src
    assert "cake::mbarrier::wait((bar_empty + (v_i) % 2), ((v_i) / 2 + 1) & 1);" in src
    assert "cake::block::named_sync(1, 64);" in src
    assert ctx.launch.dynamic_shared_bytes == 544 + 1024


def test_every_op_is_preceded_by_its_ir_path():
    src = lower(gemm_sm90a()).source
    assert "// kernel.roles[1].body[1].loop.body[1].mma" in src
    assert "// kernel.roles[0].body[2].branch.then_body[0].loop.body[2].tma_load" in src


def test_wgmma_k_steps_advance_descriptors_by_32_bytes():
    src = lower(gemm_sm90a()).source
    for j in range(4):
        assert "cake_desc_a + %d, cake_desc_b + %d" % (2 * j, 2 * j) in src


def test_wgmma_instr_shape_splits_each_k_step_into_instructions_of_its_n():
    k = gemm_sm90a()
    mma = next(op.mma for op in k.roles[1].body[1].loop.body if op.WhichOneof("kind") == "mma")
    mma.instr_shape.extend([64, 128, 16])
    src = "".join(lower(k).source.split())  # (the writer wraps long calls)
    assert "m64n256k16" not in src
    for j in range(4):  # B rows 128.. start 128 rows of 128-byte swizzled rows later: 16384 bytes, 1024 in 16s
        assert "m64n128k16<0,0>(*reinterpret_cast<float(*)[64]>(&r_acc.d[0]),cake_desc_a+%d,cake_desc_b+%d," % (
            2 * j, 2 * j) in src
        assert "m64n128k16<0,0>(*reinterpret_cast<float(*)[64]>(&r_acc.d[64]),cake_desc_a+%d,cake_desc_b+%d," % (
            2 * j, 1024 + 2 * j) in src


def test_a_wgmma_instr_shape_that_does_not_tile_n_is_a_lowering_error():
    k = gemm_sm90a()
    mma = next(op.mma for op in k.roles[1].body[1].loop.body if op.WhichOneof("kind") == "mma")
    mma.instr_shape.extend([64, 96, 16])
    with pytest.raises(LoweringError, match="instr_shape N=96 does not tile the accumulator's N=256"):
        lower(k)


def test_unlowerable_op_names_its_path():
    k = gemm_sm90a()
    k.regions[2].layout = 1  # accumulator declared per_thread: wgmma cannot use it
    with pytest.raises(LoweringError) as e:
        lower(k)
    assert e.value.path == "kernel.roles[1].body[1].loop.body[1].mma.acc"


def test_unknown_target_value_is_a_lowering_error():
    k = ring_copy()
    k.target = 77  # proto3 keeps unknown enum values as ints
    with pytest.raises(LoweringError) as e:
        lower(k)
    assert e.value.path == "kernel.target" and "value 77" in e.value.message


def test_mma_sync_from_shared_tiles_steps_both_operands_along_k():
    # The B operand's ldmatrix once read k columns 0..15 at every step: the naive KMeans seed agreed with the
    # reference on 1.5% of the labels on the H200.
    from kernels.kmeans.naive import assign_naive

    src = lower(assign_naive()).source
    statements = "".join(src.split()).split(";")  # whole statements (the writer breaks long ones), no spaces
    loads = [s for s in statements if "cake::warp::ldmatrix_x4(f" in s]
    assert len(loads) == 2 and all("kk*16+" in s for s in loads), "\n".join(loads)
