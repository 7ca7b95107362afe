"""TMA tensor maps on a Hopper GPU: boxes loaded through maps from runtime/tensor_map.py
round-trip a tensor exactly, strided views keep their row pitch, and out-of-bounds
elements are filled as asked (zeros, or NaN)."""

import ctypes
import os

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.sm_90a]

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testing", "tma_tile_copy.cu")
BOX = (16, 32)  # rows, columns: as compiled into the kernel


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    from compiler.build.nvcc import compile_cuda
    from compiler.targets import get_target
    from runtime.loader import Module

    art = compile_cuda(SOURCE, get_target("sm_90a"), str(tmp_path_factory.mktemp("tma")))
    return Module(art.cubin).kernel("cake_tma_tile_copy")


def _round_trip(kernel, src, **options):
    """The padded output: every box of `src` as the kernel read it through a tensor map."""
    import torch

    from runtime import poison, tensor_map

    rows, cols = src.shape
    grid = (-(-cols // BOX[1]), -(-rows // BOX[0]))
    out = poison.fill(torch.empty(grid[1] * BOX[0], grid[0] * BOX[1], device="cuda"))
    tmap = tensor_map.encode_tiled(src, box=BOX, **options)
    kernel.launch(grid=grid, block=(128,), args=[tmap.arg, ctypes.c_void_p(out.data_ptr()), ctypes.c_int(out.shape[1])])
    torch.cuda.synchronize()
    return out


def test_tiles_round_trip_with_zero_fill(kernel):
    import torch

    src = torch.randn(100, 200, device="cuda")
    out = _round_trip(kernel, src)
    assert torch.equal(out[:100, :200], src)
    assert (out[100:] == 0).all() and (out[:, 200:] == 0).all()


def test_strided_view_keeps_its_row_pitch_and_bounds(kernel):
    import torch

    parent = torch.randn(100, 256, device="cuda")
    view = parent[:, 32:232]
    out = _round_trip(kernel, view)
    assert torch.equal(out[:100, :200], view)
    assert (out[:, 200:] == 0).all()  # outside the view, though the parent's memory goes on


def test_nan_fill(kernel):
    import torch

    from runtime import poison

    src = torch.randn(100, 200, device="cuda")
    out = _round_trip(kernel, src, oob_fill="nan")
    assert torch.equal(out[:100, :200], src)
    oob = out[100:]
    assert torch.isnan(oob).all() and not poison.poisoned_mask(oob).any()  # written by TMA, not left over
