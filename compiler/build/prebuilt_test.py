"""Prebuilt stores: artifacts found by (IR hash, target) in directories and zips; JIT only when absent, and said so."""

import warnings
import zipfile

import pytest
from cake.compiler.v1 import artifact_pb2

from compiler.build import driver, nvcc, prebuilt
from compiler.ir.builder import KernelBuilder
from compiler.ir.hashing import ir_hash


def _kernel(name="prebuilt_probe"):
    kb = KernelBuilder(name, target="sm_90a")
    n = kb.symbol("N", min=1, max=1 << 20)
    kb.tensor("x", "f32", [n])
    kb.grid(1)
    with kb.role("main", "compute", warps=1):
        pass
    return kb.build()


def _artifact(kernel):
    return artifact_pb2.CompiledKernel(target="sm_90a", ir_hash=ir_hash(kernel), cubin=b"\x7fELF-probe", toolchain="test")


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv(prebuilt.ENV, "")
    monkeypatch.setattr(prebuilt, "REPO_STORE", str(tmp_path / "none"))
    monkeypatch.setattr(prebuilt, "_added", [])
    monkeypatch.setattr(prebuilt, "_indexes", {})
    monkeypatch.setattr(prebuilt, "_warned", set())
    return tmp_path


def test_a_directory_store_on_the_search_path_answers_without_building(isolated, monkeypatch):
    k = _kernel()
    prebuilt.write(str(isolated / "store"), _artifact(k))
    monkeypatch.setenv(prebuilt.ENV, str(isolated / "store"))
    monkeypatch.setattr(driver, "build", lambda *a, **kw: pytest.fail("built although prebuilt"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = prebuilt.load(k)
    assert got.cubin == b"\x7fELF-probe" and got.toolchain == "test"


def test_a_zip_store_added_by_a_package_answers(isolated):
    k = _kernel()
    path = prebuilt.write(str(isolated / "d"), _artifact(k))
    z = isolated / "kernels.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.write(path, prebuilt.entry_name("sm_90a", ir_hash(k)))
    prebuilt.add_store(str(z))
    assert prebuilt.find(k).ir_hash == ir_hash(k)
    assert prebuilt.find(_kernel("another_probe")) is None  # another IR: another hash, not found


def test_a_missing_kernel_is_compiled_after_one_warning_naming_it(isolated, monkeypatch):
    k = _kernel()
    built = _artifact(k)
    monkeypatch.setattr(driver, "build", lambda kernel, cache=None: driver.BuildResult(built, []))
    with pytest.warns(prebuilt.JitCompile, match=r"no prebuilt sm_90a kernel my probe .* compiling it with nvcc now"):
        assert prebuilt.load(k, what="my probe") is built
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second load of the same kernel does not warn again
        prebuilt.load(k, what="my probe")


def test_no_prebuilt_kernel_and_no_nvcc_is_a_clear_error(isolated, monkeypatch):
    def no_nvcc(kernel, cache=None):
        raise nvcc.NvccNotFound("nvcc not found: install the CUDA 13 toolkit or set CUDA_HOME")

    monkeypatch.setattr(driver, "build", no_nvcc)
    with pytest.warns(prebuilt.JitCompile):
        with pytest.raises(prebuilt.NoKernel, match="is not prebuilt on this machine and cannot be compiled here: nvcc not found"):
            prebuilt.load(_kernel())


def test_a_corrupt_entry_is_skipped(isolated, monkeypatch):
    k = _kernel()
    bad = isolated / "bad" / "sm_90a"
    bad.mkdir(parents=True)
    (bad / (ir_hash(k) + ".pb")).write_bytes(b"\xff\xff not a proto")
    monkeypatch.setenv(prebuilt.ENV, str(isolated / "bad"))
    assert prebuilt.find(k) is None
