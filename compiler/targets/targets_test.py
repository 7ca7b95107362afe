"""Which targets' cubins run on a GPU, and the error that names the GPU when an op has none for it."""

import pytest

from compiler import targets


@pytest.mark.parametrize("capability, offered, want", [
    ((9, 0), ("sm_90a",), "sm_90a"),
    ((9, 0), ("sm_80", "sm_90a"), "sm_90a"),
    ((8, 6), ("sm_80", "sm_90a"), "sm_80"),
    ((8, 0), ("sm_80", "sm_90a", "sm_100a"), "sm_80"),
    ((10, 0), ("sm_80", "sm_90a", "sm_100a"), "sm_100a"),
])
def test_pick_takes_the_newest_target_that_runs(capability, offered, want):
    assert targets.pick(capability, offered, "op") == want


def test_an_unsupported_gpu_names_its_capability_and_what_is_supported():
    with pytest.raises(targets.UnsupportedDevice) as e:
        targets.pick((12, 0), ("sm_80", "sm_90a"), "kmeans_assign", "NVIDIA GeForce RTX 5090")
    assert str(e.value) == ("kmeans_assign has no kernel for this GPU (NVIDIA GeForce RTX 5090, compute capability "
                            "12.0): it has kernels for sm_80 (compute capability 8.x), sm_90a (compute capability 9.0)")
    with pytest.raises(targets.UnsupportedDevice, match=r"\(compute capability 9.0\): it has kernels for sm_80"):
        targets.pick((9, 0), ("sm_80",), "kmeans_update")  # sm_80 cubins do not run on 9.0 (an 8.x-only binary)
