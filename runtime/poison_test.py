"""Poison values and bit-exact comparison."""

import pytest
import torch

from runtime import poison


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_float_poison_is_a_nan_no_arithmetic_produces(dtype):
    t = poison.fill(torch.empty(5, dtype=dtype))
    assert torch.isnan(t).all()
    assert poison.poisoned_mask(t).all()
    computed = torch.full((5,), float("nan"), dtype=dtype)  # torch's canonical NaN
    computed[1] = torch.tensor(0.0, dtype=dtype) / 0.0
    assert not poison.poisoned_mask(computed).any()


def test_cuda_canonical_nan_is_not_poison():
    t = torch.tensor([0x7FFFFFFF], dtype=torch.int32).view(torch.float32)  # what CUDA writes for NaN
    assert torch.isnan(t).all() and not poison.poisoned_mask(t).any()


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_integer_poison_is_the_minimum(dtype):
    t = poison.fill(torch.zeros(3, dtype=dtype))
    assert (t == torch.iinfo(dtype).min).all() and poison.poisoned_mask(t).all()


def test_partially_written_output_is_detected():
    t = poison.fill(torch.empty(10))
    t[:7] = 1.0
    assert poison.poisoned_mask(t).sum().item() == 3


def test_bool_has_no_poison():
    with pytest.raises(TypeError, match="no poison"):
        poison.fill(torch.empty(2, dtype=torch.bool))


def test_bitwise_equal_sees_nan_payloads_and_signed_zeros():
    a = torch.tensor([0.0, float("nan"), 1.0])
    assert poison.bitwise_equal(a, a.clone())
    assert not poison.bitwise_equal(a, torch.tensor([-0.0, float("nan"), 1.0]))
    b = a.clone()
    poison.fill(b[1:2])
    assert not poison.bitwise_equal(a, b)
    assert not poison.bitwise_equal(a, a[:2])
    assert not poison.bitwise_equal(a, a.double())
