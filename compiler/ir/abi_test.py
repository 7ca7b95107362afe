"""The kernel ABI: params in order, then unspecialized symbols, then tensor maps."""

import collections

from cake.ir.v1 import ir_pb2

from compiler.ir import abi
from kernels.gemm.schedules import gemm_sm90a


def test_arguments_in_launch_order():
    k = gemm_sm90a()
    TensorMap = collections.namedtuple("TensorMap", "param arg")
    args = abi.arguments(k, [TensorMap("A", "tmap_A_0")])
    assert [(a.name, a.kind) for a in args] == [
        ("A", abi.POINTER), ("B", abi.POINTER), ("C", abi.POINTER),
        ("M_arg", abi.SYMBOL), ("N_arg", abi.SYMBOL), ("K_arg", abi.SYMBOL),
        ("tmap_A_0", abi.TENSOR_MAP),
    ]
    assert [a.read_only for a in args[:3]] == [True, True, False]
    assert args[3].dtype == ir_pb2.DTYPE_I64 and args[-1].dtype == ir_pb2.DTYPE_BF16


def test_a_fixed_symbol_is_no_argument():
    k = gemm_sm90a()
    k.contract.symbols[2].value = 4096
    assert "K_arg" not in [a.name for a in abi.arguments(k)]
