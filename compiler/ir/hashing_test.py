"""Kernel hashes: equal IR gives equal hashes, any change gives a different one."""

import hashlib

from cake.ir.v1 import ir_pb2

from compiler.ir.hashing import ir_hash, short_hash
from compiler.ir.text import parse_kernel, print_kernel


def _kernel():
    kernel = ir_pb2.Kernel(name="k", target=ir_pb2.TARGET_SM_90A)
    kernel.params.add(name="A", dtype=ir_pb2.DTYPE_BF16)
    kernel.contract.tolerance = 0.01
    return kernel


def test_full_and_short_forms():
    digest = ir_hash(_kernel())
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert short_hash(_kernel()) == "ir-" + digest[:16]
    assert ir_hash(ir_pb2.Kernel()) == hashlib.sha256(b"").hexdigest()


def test_equal_kernels_hash_equal_through_text():
    kernel = _kernel()
    text = print_kernel(kernel)
    reordered = text.replace("  target: sm_90a\n", "").replace("{\n", "{\n  target: sm_90a  # moved\n", 1)
    assert ir_hash(parse_kernel(reordered).kernel) == ir_hash(kernel)


def test_any_change_changes_the_hash():
    base = ir_hash(_kernel())
    for change in (
        lambda k: setattr(k, "name", "k2"),
        lambda k: setattr(k.params[0], "dtype", ir_pb2.DTYPE_F16),
        lambda k: setattr(k.contract, "tolerance", 0.010000000000000002),
        lambda k: k.launch.SetInParent(),
    ):
        kernel = _kernel()
        change(kernel)
        assert ir_hash(kernel) != base


def test_negative_zero_is_not_zero():
    assert ir_hash(ir_pb2.Kernel(contract=ir_pb2.Contract(tolerance=-0.0))) != ir_hash(
        ir_pb2.Kernel(contract=ir_pb2.Contract(tolerance=0.0))
    )
