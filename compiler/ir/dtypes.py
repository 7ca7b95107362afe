"""Element sizes of CAKE IR dtypes and spans of its swizzle modes (what layouts and byte counts are made of)."""

from cake.ir.v1 import ir_pb2

from compiler.ir.enums import value_of

# Bytes per element; DTYPE_UNSPECIFIED (a verification error) has none.
DTYPE_BYTES = {
    ir_pb2.DTYPE_BF16: 2,
    ir_pb2.DTYPE_F16: 2,
    ir_pb2.DTYPE_F32: 4,
    ir_pb2.DTYPE_F64: 8,
    ir_pb2.DTYPE_FP8_E4M3: 1,
    ir_pb2.DTYPE_I8: 1,
    ir_pb2.DTYPE_I32: 4,
    ir_pb2.DTYPE_I64: 8,
    ir_pb2.DTYPE_U32: 4,
}

# Swizzle span in bytes (see Swizzle in ir.proto); no swizzle spans 0.
SWIZZLE_SPAN = {
    ir_pb2.SWIZZLE_NONE_UNSPECIFIED: 0,
    ir_pb2.SWIZZLE_32B: 32,
    ir_pb2.SWIZZLE_64B: 64,
    ir_pb2.SWIZZLE_128B: 128,
}


def element_bytes(dtype):
    """Bytes per element of a dtype given by its short name ("bf16")."""
    return DTYPE_BYTES[value_of(ir_pb2.Dtype.DESCRIPTOR, dtype)]


def widest_swizzle(row_bytes):
    """The swizzle mode of the widest span that divides a tile row of `row_bytes` (none when no span does):
    what schedules give their tiles, and what the agent's tile-shape moves choose again."""
    for mode, span in sorted(SWIZZLE_SPAN.items(), key=lambda kv: -kv[1]):
        if span and row_bytes % span == 0:
            return mode
    return ir_pb2.SWIZZLE_NONE_UNSPECIFIED
