"""TMA tensor maps (CUtensorMap) built from torch tensors with cuTensorMapEncodeTiled.

`tiled_args` derives and validates every argument in plain Python, so a wrong box,
stride or swizzle fails with a message naming the rule instead of the driver's bare
CUDA_ERROR_INVALID_VALUE (and so the rules are unit-tested without a GPU).
`encode_tiled` hands them to the driver.

Orders: `box` and `element_strides` are given like the tensor's shape, outermost
dimension first. The driver wants innermost first; the derived TiledArgs are in the
driver's order. The kernel's TMA coordinates are innermost first too.
"""

import ctypes
import dataclasses

import torch
from cake.ir.v1 import ir_pb2

from compiler.ir.dtypes import SWIZZLE_SPAN

MAX_RANK = 5
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
MAX_GLOBAL_DIM = 1 << 32
MAX_GLOBAL_STRIDE = 1 << 40
TENSOR_MAP_BYTES = 128

# torch dtype -> CU_TENSOR_MAP_DATA_TYPE_* suffix. TMA moves bits: 1-byte types (int8, fp8)
# travel as UINT8 and int16 as UINT16, which copy them unchanged.
DATA_TYPES = {
    torch.uint8: "UINT8",
    torch.int8: "UINT8",
    torch.bool: "UINT8",
    torch.int16: "UINT16",
    torch.int32: "INT32",
    torch.int64: "INT64",
    torch.float16: "FLOAT16",
    torch.bfloat16: "BFLOAT16",
    torch.float32: "FLOAT32",
    torch.float64: "FLOAT64",
}
_RECENT_DTYPES = {"float8_e4m3fn": "UINT8", "float8_e5m2": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64"}
DATA_TYPES.update({getattr(torch, n): t for n, t in _RECENT_DTYPES.items() if hasattr(torch, n)})

# IR swizzle mode -> its name here ("128B"), the driver's (CU_TENSOR_MAP_SWIZZLE_128B) and its span in bytes
# (compiler/ir/dtypes.py).
SWIZZLE_NAMES = {
    ir_pb2.SWIZZLE_NONE_UNSPECIFIED: "none",
    ir_pb2.SWIZZLE_32B: "32B",
    ir_pb2.SWIZZLE_64B: "64B",
    ir_pb2.SWIZZLE_128B: "128B",
}
SWIZZLE = {name: name.upper() for name in SWIZZLE_NAMES.values()}
SWIZZLE_BYTES = {SWIZZLE_NAMES[mode]: span for mode, span in SWIZZLE_SPAN.items()}
INTERLEAVE = {"none": "NONE", "16B": "16B", "32B": "32B"}
L2_PROMOTION = {"none": "NONE", "64B": "L2_64B", "128B": "L2_128B", "256B": "L2_256B"}
OOB_FILL = {"zero": "NONE", "nan": "NAN_REQUEST_ZERO_FMA"}  # NONE fills zeros


class TensorMapError(ValueError):
    """A tensor map argument breaks one of cuTensorMapEncodeTiled's rules."""


@dataclasses.dataclass(frozen=True)
class TiledArgs:
    """cuTensorMapEncodeTiled's arguments, innermost dimension first, enums by name."""

    data_type: str  # CU_TENSOR_MAP_DATA_TYPE_<data_type>
    rank: int
    global_address: int
    global_dim: tuple  # elements per dimension
    global_strides: tuple  # bytes, for dimensions 1..rank-1 (dimension 0 is contiguous)
    box_dim: tuple
    element_strides: tuple
    interleave: str  # CU_TENSOR_MAP_INTERLEAVE_<interleave>
    swizzle: str  # CU_TENSOR_MAP_SWIZZLE_<swizzle>
    l2_promotion: str  # CU_TENSOR_MAP_L2_PROMOTION_<l2_promotion>
    oob_fill: str  # CU_TENSOR_MAP_FLOAT_OOB_FILL_<oob_fill>


def _choice(what, value, table):
    if value not in table:
        raise TensorMapError("%s must be one of %s, got %r" % (what, ", ".join(map(repr, table)), value))
    return table[value]


def tiled_args(tensor, box, swizzle="none", interleave="none", l2_promotion="256B", oob_fill="zero", element_strides=None):
    """Validated cuTensorMapEncodeTiled arguments for `tensor` (see the module docstring)."""
    rank = tensor.dim()
    if not 1 <= rank <= MAX_RANK:
        raise TensorMapError("tensor rank must be 1..%d, got %d" % (MAX_RANK, rank))
    if tensor.dtype not in DATA_TYPES:
        raise TensorMapError("TMA has no data type for %s (supported: %s)" % (tensor.dtype, ", ".join(map(str, DATA_TYPES))))
    interleave_name = _choice("interleave", interleave, INTERLEAVE)
    swizzle_name = _choice("swizzle", swizzle, SWIZZLE)
    swizzle_bytes = SWIZZLE_BYTES[swizzle]
    l2_name = _choice("l2_promotion", l2_promotion, L2_PROMOTION)
    oob_name = _choice("oob_fill", oob_fill, OOB_FILL)
    if interleave != "none" and rank < 3:
        raise TensorMapError("interleaved layouts need rank >= 3, got %d" % rank)
    if oob_fill == "nan" and not tensor.dtype.is_floating_point:
        raise TensorMapError("oob_fill='nan' needs a floating-point tensor, got %s" % tensor.dtype)

    esize = tensor.element_size()
    align = 32 if interleave == "32B" else 16
    address = tensor.data_ptr()
    if address % align:
        raise TensorMapError("tensor data must be %d-byte aligned; address 0x%x is off by %d" % (align, address, address % align))

    shape, strides = list(tensor.shape), list(tensor.stride())
    if strides[-1] != 1 and shape[-1] != 1:
        raise TensorMapError("the innermost dimension must be contiguous (stride 1), got strides %s" % (tuple(strides),))
    for i, size in enumerate(shape):
        if not 1 <= size <= MAX_GLOBAL_DIM:
            raise TensorMapError("dimension %d has size %d; TMA needs 1..2^32" % (i, size))
    # Strides in bytes, innermost first, without dimension 0's (implicitly the element size).
    byte_strides, extent = [], shape[-1] * esize
    for d in range(rank - 2, -1, -1):
        # A size-1 dimension is never stepped over, so its stride is free: use the packed one.
        stride = strides[d] * esize if shape[d] > 1 else -(-extent // align) * align
        if stride % align or not 0 < stride < MAX_GLOBAL_STRIDE:
            raise TensorMapError(
                "dimension %d's stride is %d bytes; TMA needs a positive multiple of %d below 2^40 "
                "(pad the inner dimension or make the tensor contiguous)" % (d, stride, align)
            )
        byte_strides.append(stride)
        extent = stride * shape[d]

    box = tuple(box)
    if len(box) != rank:
        raise TensorMapError("box has %d dimensions, the tensor %d" % (len(box), rank))
    box_dim = tuple(reversed(box))
    for d, b in zip(range(rank - 1, -1, -1), box_dim):
        if not 1 <= b <= MAX_BOX:
            raise TensorMapError("box dimension %d is %d; TMA needs 1..%d" % (d, b, MAX_BOX))
    inner_bytes = box_dim[0] * esize
    if interleave == "none":
        if inner_bytes % 16:
            raise TensorMapError("the box's inner dimension spans %d bytes; it must be a multiple of 16" % inner_bytes)
        if swizzle_bytes and inner_bytes > swizzle_bytes:
            raise TensorMapError(
                "the box's inner dimension spans %d bytes, more than the %s swizzle span" % (inner_bytes, swizzle)
            )
    elif interleave == "32B" and swizzle != "32B":
        raise TensorMapError("interleave='32B' requires swizzle='32B', got %r" % swizzle)

    estrides = tuple(reversed(tuple(element_strides))) if element_strides is not None else (1,) * rank
    if len(estrides) != rank or not all(1 <= e <= MAX_ELEMENT_STRIDE for e in estrides):
        raise TensorMapError("element_strides must be %d values in 1..%d, got %r" % (rank, MAX_ELEMENT_STRIDE, element_strides))

    return TiledArgs(
        data_type=DATA_TYPES[tensor.dtype],
        rank=rank,
        global_address=address,
        global_dim=tuple(reversed(shape)),
        global_strides=tuple(byte_strides),
        box_dim=box_dim,
        element_strides=estrides,
        interleave=interleave_name,
        swizzle=swizzle_name,
        l2_promotion=l2_name,
        oob_fill=oob_name,
    )


class TensorMap:
    """An encoded CUtensorMap, with the tensor it describes kept alive.

    `arg` is the 128-byte by-value kernel argument for runtime.loader.Kernel.launch
    (declare the parameter `const __grid_constant__ CUtensorMap`).
    """

    def __init__(self, tensor, args, encoded):
        self.tensor = tensor  # the map holds a raw address: the tensor must outlive it
        self.args = args
        self.encoded = encoded
        self.arg = (ctypes.c_uint64 * (TENSOR_MAP_BYTES // 8))()
        ctypes.memmove(self.arg, encoded.getPtr(), TENSOR_MAP_BYTES)


def encode_tiled(tensor, box, **options):
    """A TensorMap for `tensor` (on the GPU) tiled by `box`; options as for tiled_args."""
    from cuda.bindings import driver

    from runtime.loader import check, ensure_context

    if tensor.device.type != "cuda":
        raise TensorMapError("tensor maps describe GPU memory; the tensor is on %s" % tensor.device)
    a = tiled_args(tensor, box, **options)
    ensure_context()
    encoded = check(
        "cuTensorMapEncodeTiled",
        driver.cuTensorMapEncodeTiled(
            getattr(driver.CUtensorMapDataType, "CU_TENSOR_MAP_DATA_TYPE_" + a.data_type),
            a.rank,
            a.global_address,
            [driver.cuuint64_t(v) for v in a.global_dim],
            [driver.cuuint64_t(v) for v in a.global_strides],
            [driver.cuuint32_t(v) for v in a.box_dim],
            [driver.cuuint32_t(v) for v in a.element_strides],
            getattr(driver.CUtensorMapInterleave, "CU_TENSOR_MAP_INTERLEAVE_" + a.interleave),
            getattr(driver.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + a.swizzle),
            getattr(driver.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_" + a.l2_promotion),
            getattr(driver.CUtensorMapFloatOOBfill, "CU_TENSOR_MAP_FLOAT_OOB_FILL_" + a.oob_fill),
        ),
    )
    return TensorMap(tensor, a, encoded)
