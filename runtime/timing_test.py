"""The timing protocol's arithmetic and verification (the event loop itself runs on the GPU)."""

import pytest
import torch

from runtime import poison, timing
from runtime.testing import gemv_contract


def test_quantiles_interpolate_like_numpy():
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert timing.quantile(values, 0.5) == 3.0
    assert timing.quantile(values, 0.1) == pytest.approx(1.4)
    assert timing.quantile(values, 0.9) == pytest.approx(4.6)
    assert timing.quantile([7.0], 0.9) == 7.0
    with pytest.raises(ValueError):
        timing.quantile([], 0.5)


def test_summary():
    s = timing.summarize([1.0, 2.0, 3.0, 10.0])
    assert s["median_ms"] == 2.5 and s["min_ms"] == 1.0 and s["max_ms"] == 10.0 and s["mean_ms"] == 4.0


def test_flush_is_twice_l2_rounded_to_mib():
    assert timing.flush_bytes(60 * 2**20, 2.0) == 120 * 2**20  # H200: 60 MiB L2
    assert timing.flush_bytes(40 * 2**20 + 1, 2.0) == 81 * 2**20


def test_config_is_validated():
    with pytest.raises(ValueError, match="reps >= 1"):
        timing.TimingConfig(reps=0)
    with pytest.raises(ValueError, match="flush_factor >= 1"):
        timing.TimingConfig(flush_factor=0.5)


def test_verify_timed_outputs():
    contract = gemv_contract.contract()
    a, x = torch.randn(64, 32), torch.randn(32)
    good = [a @ x]
    assert timing.verify(contract, good, [a, x])[0]
    ok, message = timing.verify(contract, [torch.zeros(64)], [a, x])
    assert not ok and message.startswith("timed outputs: ") and "outside tolerance" in message
    partly = good[0].clone()
    poison.fill(partly[:3])
    assert timing.verify(contract, [partly], [a, x]) == (False, "timed output y has unwritten elements")
    nan = good[0].clone()
    nan[5] = float("inf")
    assert timing.verify(contract, [nan], [a, x]) == (False, "timed output y has NaN or Inf")
