"""Device library tests: the generated wgmma header is current, and the library compiles per target."""

import os
import tempfile

import pytest

from compiler.build.nvcc import compile_cuda
from compiler.lower import DEVICE_INCLUDE
from compiler.lower.device import gen_wgmma
from compiler.targets import TARGETS

HERE = os.path.dirname(os.path.abspath(__file__))


def test_generated_wgmma_header_is_current():
    with open(gen_wgmma.OUT) as f:
        assert f.read() == gen_wgmma.generate(), "run python3 compiler/lower/device/gen_wgmma.py"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_library_probe_compiles_and_assembles(target):
    with tempfile.TemporaryDirectory() as tmp:
        art = compile_cuda(os.path.join(HERE, "testdata", "probe.cu"), TARGETS[target], tmp, include_dirs=[DEVICE_INCLUDE])
    assert art.cubin[:4] == b"\x7fELF"
    if target == "sm_90a":
        assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in art.ptx
        assert "setmaxnreg.inc.sync.aligned.u32" in art.ptx
