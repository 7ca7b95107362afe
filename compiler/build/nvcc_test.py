"""nvcc runs under a time limit and a cancellation flag; either kills it with all its children."""

import os
import threading
import time

import pytest

from compiler.build import nvcc
from compiler.targets import TARGETS

_FAST = "__global__ void k(float* out) { *out = 1.0f; }\n"


@pytest.fixture
def slow_nvcc(tmp_path, monkeypatch):
    """$CUDA_HOME/bin/nvcc that starts a child and waits: a compile that never ends by itself."""
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    fake = home / "bin" / "nvcc"
    fake.write_text("#!/bin/sh\nsleep 60 &\nsleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    return work


def _write(tmp_path, text):
    path = tmp_path / "kernel.cu"
    path.write_text(text)
    return str(path)


def _processes_in(directory):
    """Pids of processes whose working directory is `directory` (nvcc and its children run there)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink("/proc/%s/cwd" % pid) == directory:
                out.append(int(pid))
        except OSError:
            pass
    return out


def test_one_run_gives_cubin_ptx_and_the_ptxas_report(tmp_path):
    art = nvcc.compile_cuda(_write(tmp_path, _FAST), TARGETS["sm_90a"], str(tmp_path))
    assert art.cubin[:4] == b"\x7fELF"
    assert ".target sm_90a" in art.ptx and ".entry" in art.ptx
    assert "Used" in art.ptxas_report


def test_the_time_limit_kills_nvcc_and_its_children(slow_nvcc):
    start = time.monotonic()
    with pytest.raises(nvcc.NvccTimeout) as e:
        nvcc.compile_cuda(_write(slow_nvcc, _FAST), TARGETS["sm_90a"], str(slow_nvcc), timeout=0.5)
    assert e.value.seconds == 0.5 and time.monotonic() - start < 5
    assert _processes_in(str(slow_nvcc)) == []


def test_cancelling_kills_nvcc_and_its_children(slow_nvcc):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(nvcc.NvccCancelled):
        nvcc.compile_cuda(_write(slow_nvcc, _FAST), TARGETS["sm_90a"], str(slow_nvcc), cancel=cancel)
    assert time.monotonic() - start < 5
    assert _processes_in(str(slow_nvcc)) == []


def test_the_version_is_asked_once_per_process(monkeypatch):
    nvcc.nvcc_version()
    monkeypatch.setattr(nvcc.subprocess, "run", lambda *a, **k: pytest.fail("nvcc --version ran again"))
    assert nvcc.nvcc_version()
