"""Math printers: shared scans run one running sum per line (short lines read into registers first); an inverse into registers is blocked; refusals name paths."""

import re

import pytest

from compiler.ir.builder import KernelBuilder
from compiler.lower import LoweringError, lower


def _solve_and_scan(shape=(64, 128), dst_shape=None, axis=0, into_shared=False):
    """One compute warpgroup: a scan of a shared tile and the inverse of a lower-triangular tile into registers."""
    k = KernelBuilder("math", target="sm_90a")
    k.contract(math="y = cumsum(x); t = inverse(a)", reference="none", metric="rel_l2", tolerance=1e-5)
    src = k.shared("src", "f32", list(shape))
    dst = k.shared("dst", "f32", list(dst_shape or shape))
    a = k.shared("a", "f32", [64, 64])
    t = k.shared("t", "f32", [64, 64]) if into_shared else k.registers("t", "f32", [64, 64], layout="wgmma_acc", owner="c")
    with k.role("c", "compute", warpgroups=1) as r:
        r.fill(src.all, 1.0)
        r.fill(a.all, 0.5)
        r.block_sync()
        r.scan(src.all, dst.all, axis, "role")
        r.tri_solve(a.all, t.all, lower=True, unit_diagonal=True)
    return k.build()


def _body(source, op):
    """The lines printed for the first op of kind `op`, up to the next op's IR path comment."""
    start = source.index("].%s\n" % op)
    end = source.find("// kernel.roles", start + 1)
    return source[start:end]


def test_shared_scan_is_one_running_sum_per_column_read_whole_into_registers_first():
    body = _body(lower(_solve_and_scan()).source, "scan")
    assert "for (int l = cake_thread; l < 128; l += 128)" in body
    # a 64-element line: all its reads, then the running sum and the writes
    assert "float x[64];" in body and "(run += x[k])" in body
    assert body.index("x[k] = cake::to_float") < body.index("(run += x[k])")
    assert body.count("for (") == 3  # each element is read once: no per-element prefix loop


def test_scan_along_long_rows_reads_as_it_sums():
    body = _body(lower(_solve_and_scan(axis=1)).source, "scan")
    assert "for (int l = cake_thread; l < 64; l += 128)" in body and "k < 128" in body
    assert "float x[" not in body and "run += x;" in body  # 128 floats a line: too many registers


def test_scan_into_another_shape_is_refused_at_its_path():
    with pytest.raises(LoweringError) as e:
        lower(_solve_and_scan(dst_shape=(64, 64)))
    assert e.value.path == "kernel.roles[0].body[3].scan"


def test_inverse_into_registers_is_blocked_by_16_rows():
    body = _body(lower(_solve_and_scan()).source, "tri_solve")
    assert "const int i0 = (j / 16) * 16;" in body  # diagonal blocks by substitution
    # three distances between the four 16-row blocks, each two element-parallel products
    assert len(re.findall(r"block sums of distance \d stored", body)) == 3
    assert "blocks of distance 3 stored" in body


def test_inverse_into_shared_memory_is_a_substitution():
    body = _body(lower(_solve_and_scan(into_shared=True)).source, "tri_solve")
    assert "i0" not in body and "for (int k = 0; k < i; ++k)" in body


def _accumulated_row_sum(scope, per_thread=False):
    """dst = dst + the row sums of an accumulator fragment (or of per-thread data), combined across `scope`."""
    k = KernelBuilder("rows", target="sm_90a")
    k.contract(math="n += rowsum(x)", reference="none", metric="rel_l2", tolerance=1e-5)
    if per_thread:
        x = k.registers("x", "f32", [4, 8], layout="per_thread", owner="c")
        n = k.registers("n", "f32", [4], layout="per_thread", owner="c")
    else:
        x = k.registers("x", "f32", [64, 64], layout="wgmma_acc", owner="c")
        n = k.registers("n", "f32", [64], layout="wgmma_rows", owner="c")
    with k.role("c", "compute", warpgroups=1) as r:
        r.fill(x.all, 1.0)
        r.fill(n.all, 2.0)
        r.reduce("sum", x.all, n.all, 1, scope, accumulate=True)
    return k.build()


def test_an_accumulating_row_reduction_adds_dst_once_after_the_lanes_combine():
    body = _body(lower(_accumulated_row_sum("lanes")).source, "reduce")
    # the quad's partial sums first, then dst's value: adding it before the shuffles counted it four times
    assert "t[s] = 0.0f;" in body
    assert body.index("cake::warp::allreduce") < body.index("cake::warp::Sum::apply(cake::to_float(r_n[s]), t[s])")


def test_an_accumulating_warp_reduction_adds_dst_once_after_the_warp_combines():
    body = _body(lower(_accumulated_row_sum("warp", per_thread=True)).source, "reduce")
    assert "float t = 0.0f;" in body
    assert body.index("cake::warp::allreduce") < body.index("t = cake::warp::Sum::apply(cake::to_float(")
