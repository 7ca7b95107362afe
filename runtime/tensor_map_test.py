"""Tensor map argument derivation and validation (pure Python; encoding itself needs a GPU)."""

import pytest
import torch

from runtime import tensor_map
from runtime.tensor_map import TensorMapError, tiled_args


def test_contiguous_2d_reverses_to_driver_order():
    t = torch.empty(100, 200, dtype=torch.float16)
    a = tiled_args(t, box=(64, 64), swizzle="128B")
    assert a.data_type == "FLOAT16" and a.rank == 2
    assert a.global_dim == (200, 100)
    assert a.global_strides == (400,)
    assert a.box_dim == (64, 64)
    assert a.element_strides == (1, 1)
    assert (a.interleave, a.swizzle, a.l2_promotion, a.oob_fill) == ("NONE", "128B", "L2_256B", "NONE")
    assert a.global_address == t.data_ptr()


def test_strided_view_keeps_parent_row_pitch():
    parent = torch.empty(64, 256, dtype=torch.float32)
    view = parent[:, 32:96]
    a = tiled_args(view, box=(16, 32))
    assert a.global_dim == (64, 64) and a.global_strides == (1024,)
    assert a.global_address == parent.data_ptr() + 32 * 4


def test_rank3_and_element_strides_and_nan_fill():
    t = torch.empty(4, 8, 32, dtype=torch.bfloat16)
    a = tiled_args(t, box=(1, 8, 32), element_strides=(1, 2, 1), oob_fill="nan", l2_promotion="none")
    assert a.global_dim == (32, 8, 4) and a.global_strides == (64, 512)
    assert a.box_dim == (32, 8, 1) and a.element_strides == (1, 2, 1)
    assert a.oob_fill == "NAN_REQUEST_ZERO_FMA" and a.l2_promotion == "NONE"


def test_size_one_dimension_gets_a_packed_stride():
    t = torch.empty(1, 3, 8, dtype=torch.float32).as_strided((1, 3, 8), (7, 8, 1))
    assert tiled_args(t, box=(1, 3, 8)).global_strides == (32, 96)


@pytest.mark.parametrize(
    "dtype, name",
    [(torch.int8, "UINT8"), (torch.uint8, "UINT8"), (torch.int32, "INT32"), (torch.int64, "INT64"), (torch.float64, "FLOAT64")],
)
def test_data_types(dtype, name):
    assert tiled_args(torch.zeros(8, 64, dtype=dtype), box=(8, 16)).data_type == name


def _rejects(match, tensor, box, **kw):
    with pytest.raises(TensorMapError, match=match):
        tiled_args(tensor, box, **kw)


def test_rank_and_dtype_rules():
    _rejects("rank must be 1..5", torch.zeros(()), ())
    _rejects("rank must be 1..5", torch.zeros((1,) * 6), (1,) * 6)
    _rejects("no data type for torch.complex64", torch.zeros(4, 4, dtype=torch.complex64), (4, 4))
    _rejects("interleaved layouts need rank >= 3", torch.zeros(8, 64), (8, 16), interleave="16B")
    _rejects("needs a floating-point tensor", torch.zeros(8, 64, dtype=torch.int32), (8, 16), oob_fill="nan")


def test_alignment_and_stride_rules():
    base = torch.zeros(8, 65)
    _rejects("16-byte aligned; address .* off by 4", base.flatten()[1:513].view(8, 64), (8, 4))
    _rejects("dimension 0's stride is 260 bytes", base[:, :64], (8, 4))
    _rejects("innermost dimension must be contiguous", torch.zeros(64, 8).T, (8, 16))


def test_box_rules():
    t = torch.zeros(64, 512, dtype=torch.float16)
    _rejects("box has 1 dimensions, the tensor 2", t, (64,))
    _rejects("box dimension 0 is 300", t, (300, 64))
    _rejects("box dimension 1 is 0", t, (64, 0))
    _rejects("spans 6 bytes; it must be a multiple of 16", t, (64, 3))
    _rejects("spans 256 bytes, more than the 128B swizzle span", t, (64, 128), swizzle="128B")
    _rejects("spans 128 bytes, more than the 64B swizzle span", t, (64, 64), swizzle="64B")
    assert tiled_args(t, (64, 256)).box_dim == (256, 64)  # no swizzle: any multiple of 16 bytes


def test_interleave_rules():
    t = torch.zeros(2, 4, 8, 16, dtype=torch.float16)
    _rejects("interleave='32B' requires swizzle='32B'", t, (1, 1, 8, 16), interleave="32B")
    assert tiled_args(t, (1, 1, 8, 16), interleave="32B", swizzle="32B").interleave == "32B"


def test_option_names_are_checked():
    t = torch.zeros(8, 64)
    _rejects("swizzle must be one of", t, (8, 16), swizzle="128")
    _rejects("l2_promotion must be one of", t, (8, 16), l2_promotion="512B")
    _rejects("element_strides must be 2 values in 1..8", t, (8, 16), element_strides=(1, 9))


def test_encode_refuses_cpu_tensors():
    with pytest.raises(TensorMapError, match="describe GPU memory"):
        tensor_map.encode_tiled(torch.zeros(8, 64), (8, 16))
