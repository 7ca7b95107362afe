"""Compile-only checks (nvcc + ptxas, no GPU) of every CUDA source the runtime's GPU tests launch.

The GPU run happens elsewhere; a kernel that does not build there would waste it.
"""

import os
import re

import pytest

from compiler.build.nvcc import compile_cuda
from compiler.targets import get_target
from runtime.testing import cheat_suite

TESTING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testing")
TMA_SOURCE = os.path.join(TESTING, "tma_tile_copy.cu")
LAUNCH_SOURCE = os.path.join(TESTING, "launch_features.cu")


def _entry_points(path):
    with open(path) as f:
        return re.findall(r'extern "C" __global__ void (\w+)\(', f.read())


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_cheat_suite_compiles(target, tmp_path):
    art = compile_cuda(cheat_suite.SOURCE, get_target(target), str(tmp_path))
    entries = _entry_points(cheat_suite.SOURCE)
    assert len(entries) == 10
    for name in entries:
        assert "Compiling entry function '%s'" % name in art.ptxas_report
        assert name.encode() in art.cubin


def test_tma_tile_copy_compiles_for_sm_90a(tmp_path):
    art = compile_cuda(TMA_SOURCE, get_target("sm_90a"), str(tmp_path))
    assert "Compiling entry function 'cake_tma_tile_copy'" in art.ptxas_report
    assert "cp.async.bulk.tensor.2d" in art.ptx


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_launch_features_compile(target, tmp_path):
    art = compile_cuda(LAUNCH_SOURCE, get_target(target), str(tmp_path))
    for name in _entry_points(LAUNCH_SOURCE):
        assert "Compiling entry function '%s'" % name in art.ptxas_report
    assert ("%cluster_ctarank" in art.ptx) == (target == "sm_90a")
