"""The custom-op registry on CPU: schema, poisoned outputs, fake tensors, opcheck."""

import pytest
import torch

from runtime import ops, poison
from runtime.contract import Contract, TensorSpec
from runtime.testing import gemv_contract

GEMV = gemv_contract.contract()


def mv(outputs, inputs):
    torch.mv(*inputs, out=outputs[0])


def test_schema_from_contract():
    assert ops.schema(GEMV) == "(Tensor A, Tensor x) -> Tensor"
    two = Contract("t", ("a",), ("lo", "hi"), ({"n": 1},), None, None, None, None)
    assert ops.schema(two) == "(Tensor a) -> (Tensor, Tensor)"


def test_registered_op_computes_and_passes_opcheck():
    op = ops.register("gemv_cpu_test", GEMV, mv, device_types="cpu")
    a, x = torch.randn(33, 17), torch.randn(17)
    torch.testing.assert_close(op(a, x), a @ x)
    torch.testing.assert_close(torch.ops.cake.gemv_cpu_test(a, x), a @ x)
    assert ops.get("gemv_cpu_test") is op
    result = torch.library.opcheck(op, (a, x))
    assert all(v == "SUCCESS" for v in result.values()), result


def test_unwritten_outputs_come_back_poisoned():
    op = ops.register("gemv_cpu_lazy_test", GEMV, lambda outputs, inputs: None, device_types="cpu")
    y = op(torch.randn(4, 3), torch.randn(3))
    assert poison.poisoned_mask(y).all()


def test_multiple_outputs_return_a_tuple():
    def minmax_outputs(inputs):
        return [TensorSpec((inputs[0].shape[0],), torch.float32)] * 2

    def minmax(outputs, inputs):
        torch.amin(inputs[0], dim=1, out=outputs[0])
        torch.amax(inputs[0], dim=1, out=outputs[1])

    c = Contract("minmax", ("a",), ("lo", "hi"), ({"m": 4, "n": 8},), None, minmax_outputs, None, None)
    op = ops.register("minmax_cpu_test", c, minmax, device_types="cpu")
    a = torch.randn(4, 8)
    lo, hi = op(a)
    assert torch.equal(lo, a.amin(1)) and torch.equal(hi, a.amax(1))
    assert all(v == "SUCCESS" for v in torch.library.opcheck(op, (a,)).values())


def test_duplicate_and_unknown_names():
    ops.register("gemv_cpu_dup_test", GEMV, mv, device_types="cpu")
    with pytest.raises(ValueError, match="cake::gemv_cpu_dup_test is already registered"):
        ops.register("gemv_cpu_dup_test", GEMV, mv, device_types="cpu")
    with pytest.raises(KeyError, match="no op cake::nope registered"):
        ops.get("nope")
