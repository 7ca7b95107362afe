"""The loader's argument validation, which runs before any driver call (no GPU needed)."""

import pytest

from runtime import loader


def test_launch_dims_pads_to_three():
    assert loader.launch_dims((4,), (128, 2)) == ((4, 1, 1), (128, 2, 1))
    assert loader.launch_dims([1, 2, 3], [1, 1, 1]) == ((1, 2, 3), (1, 1, 1))


@pytest.mark.parametrize(
    "grid, block, match",
    [
        ((0,), (32,), "grid dimensions must be positive"),
        ((1,), (32, 0), "block dimensions must be positive"),
        ((), (32,), "grid must have 1 to 3"),
        ((1, 1, 1, 1), (32,), "grid must have 1 to 3"),
        ((1,), (2.5,), "block dimensions must be positive integers"),
        ((1,), (64, 32), "2048 threads; the limit is 1024"),
    ],
)
def test_launch_dims_rejects(grid, block, match):
    with pytest.raises(ValueError, match=match):
        loader.launch_dims(grid, block)


def test_shared_bytes_limit():
    loader.check_shared_bytes(227 * 1024, 227 * 1024)
    with pytest.raises(ValueError, match="232449 bytes is outside .* \\(0..232448\\)"):
        loader.check_shared_bytes(227 * 1024 + 1, 227 * 1024)
