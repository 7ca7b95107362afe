"""Accumulator fragments meet shared tiles one column pair per access where the pair is an aligned word."""

from compiler.ir.builder import KernelBuilder
from compiler.lower import lower


def _kernel(dtype="bf16", swizzle="128b", col=0, cols=128):
    """One warpgroup: a [64, 64] window of a shared tile into an accumulator, scaled by the tile, back."""
    k = KernelBuilder("pairs", target="sm_90a")
    k.contract(math="t = t * t", reference="none", metric="rel_l2", tolerance=1e-2)
    t = k.shared("t", dtype, [64, cols], swizzle=swizzle)
    x = k.registers("x", "f32", [64, 64], layout="wgmma_acc", owner="c")
    win = t.tile(window=[(0, 64), (col, 64)])
    with k.role("c", "compute", warpgroups=1) as r:
        r.fill(t.all, 1.0)
        r.block_sync()
        r.copy(win, x.all)
        r.ew("mul", x.all, x.all, win)
        r.copy(x.all, win)
    return k.build()


def _body(source, op, nth=0):
    """The lines printed for the nth op of kind `op`, up to the next op's IR path comment."""
    start = -1
    for _ in range(nth + 1):
        start = source.index("].%s\n" % op, start + 1)
    end = source.find("// kernel.roles", start + 1)
    return source[start:end]


def test_swizzled_bf16_window_is_read_and_written_a_column_pair_at_a_time():
    src = lower(_kernel()).source
    load, store = _body(src, "copy", 0), _body(src, "copy", 1)
    assert "i += 2" in load and "cake::smem::load_pair<cake::bf16, 64, 128, 128>" in load
    assert "cake::smem::store_pair<cake::bf16, 64, 128, 128>" in store
    ew = _body(src, "elementwise")
    assert "const float2 p1 =" in ew and "p1.x" in ew and "p1.y" in ew and "r_x.d[(i + 1)]" in ew


def test_unswizzled_f32_tiles_pair_too():
    src = lower(_kernel(dtype="f32", swizzle="none")).source
    assert "cake::smem::load_pair<float, 64, 128, 0>" in _body(src, "copy", 0)


def test_an_odd_window_column_or_row_length_falls_back_to_one_access_per_element():
    for kernel in (_kernel(col=1), _kernel(swizzle="none", cols=65)):
        src = lower(kernel).source
        assert "_pair<" not in src
        assert "for (int i = 0; i < 32; ++i)" in _body(src, "elementwise")
