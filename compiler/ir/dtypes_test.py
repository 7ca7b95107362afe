"""Element sizes by short name, and the widest swizzle a tile row allows."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.dtypes import element_bytes, widest_swizzle


def test_element_sizes_by_short_name():
    assert [element_bytes(n) for n in ("bf16", "f16", "f32", "fp8_e4m3", "i64")] == [2, 2, 4, 1, 8]
    with pytest.raises(ValueError, match="expected one of"):
        element_bytes("f12")


@pytest.mark.parametrize("row_bytes, mode", [(256, ir_pb2.SWIZZLE_128B), (128, ir_pb2.SWIZZLE_128B),
                                              (192, ir_pb2.SWIZZLE_64B), (96, ir_pb2.SWIZZLE_32B),
                                              (48, ir_pb2.SWIZZLE_NONE_UNSPECIFIED)])
def test_the_widest_span_that_divides_the_row(row_bytes, mode):
    assert widest_swizzle(row_bytes) == mode
