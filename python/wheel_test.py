"""The wheel as a user gets it: installed into a new venv, `import cake` and its CPU paths work with no
PYTHONPATH and no generated files; it installs nothing but cake/; its prebuilt store holds every kernel the ops run."""

import glob
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

from cake_build import layout, stage
from cake_build.testing import CleanVenv
from cake_build.testing import store_kernels
from compiler.ir.hashing import ir_hash

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _bazel_wheel():
    found = glob.glob(os.path.join(HERE, "test_wheel", "*.whl"))
    if not found:
        pytest.skip("no //python:test_wheel output (plain pytest: bazel build //python:test_wheel first)")
    return found[0]


@pytest.fixture(scope="module")
def wheel():
    return _bazel_wheel()


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    v = CleanVenv(tmp_path_factory.mktemp("clean") / "venv")
    v.install(wheel)
    return v


def test_the_wheel_installs_only_cake_and_no_tests(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    version = layout.version(ROOT)
    assert os.path.basename(wheel) == "cake_gpu-%s-py3-none-any.whl" % version
    assert {n.split("/")[0] for n in names} == {"cake", "cake_gpu-%s.dist-info" % version}
    assert not [n for n in names if n.endswith("_test.py") or "/testing/" in n or "/testdata/" in n
                or n.endswith(("BUILD.bazel", "bench.py"))]
    for needed in ("cake/py.typed", "cake/__init__.pyi", "cake/ir/v1/ir_pb2.py", "cake/compiler/v1/artifact_pb2.py",
                   "cake/compiler/lower/device/include/cake/cake.cuh", "cake/compiler/targets/targets.json",
                   "cake/proto/cake/ir/v1/ir.proto", "cake/docs/ir_text.md"):
        assert needed in names, needed


def test_the_stub_types_every_op(wheel):
    stub = zipfile.ZipFile(wheel).read("cake/__init__.pyi").decode()
    for name, module in stage.ops_table(os.path.join(ROOT, layout.FACADE, "__init__.py")).items():
        assert "from cake.%s import %s as %s\n" % (module, name, name) in stub


def test_the_store_holds_exactly_the_stores_kernels(wheel):
    from compiler.build import prebuilt

    prefix = layout.BUNDLE_DIR + "/"
    shipped = {n[len(prefix):] for n in zipfile.ZipFile(wheel).namelist() if n.startswith(prefix)}
    assert shipped == {prebuilt.entry_name(prebuilt.target_of(k), ir_hash(k)) for k in store_kernels()}


CPU_PATHS = textwrap.dedent("""
    import importlib.util, json, os, sys, warnings
    import cake
    out = {"version": cake.__version__, "file": cake.__file__,
           "top_level": {m: importlib.util.find_spec(m) is not None for m in ("compiler", "runtime", "kernels", "agent")}}
    import torch
    try:
        cake.kmeans_assign(torch.zeros(8, 16, dtype=torch.bfloat16), torch.zeros(2, 16, dtype=torch.bfloat16))
    except ValueError as e:
        out["cpu_error"] = str(e)
    try:
        cake.kmeans(torch.zeros(8, 16, dtype=torch.bfloat16, device="meta"), k=0)
    except ValueError as e:
        out["k_error"] = str(e)
    from cake.kernels.kmeans import api, reference, tuned
    x, c = torch.randn(1, 50, 16), torch.randn(1, 4, 16)
    out["reference"] = bool((reference.assign(x, c) == torch.cdist(x, c).argmin(-1)).all())
    from cake.compiler import targets
    from cake.compiler.build import nvcc, prebuilt
    hit = prebuilt.find(tuned.update_sorted(d=32, dtype="bf16"))
    out["prebuilt_hit"] = hit is not None and hit.cubin[:4] == b"\\x7fELF"
    out["store"] = prebuilt.REPO_STORE
    def no_nvcc():
        raise nvcc.NvccNotFound("nvcc not found (test)")
    nvcc.find_nvcc = no_nvcc
    warnings.simplefilter("ignore", prebuilt.JitCompile)
    try:
        prebuilt.load(tuned.assign_sm90a_tuned(d=64, block_k=64, stages=2), what="kmeans assign (not prebuilt)")
    except prebuilt.NoKernel as e:
        out["no_kernel"] = str(e)
    try:
        targets.pick((12, 0), api.TARGETS, "cake.kmeans", "NVIDIA RTX PRO 6000")
    except targets.UnsupportedDevice as e:
        out["unsupported"] = str(e)
    import pkgutil
    failed = []
    for m in pkgutil.walk_packages(cake.__path__, "cake."):
        try:
            importlib.import_module(m.name)
        except Exception as e:
            failed.append("%s: %r" % (m.name, e))
    out["import_failures"] = failed
    print(json.dumps(out))
""")


def test_import_cake_and_its_cpu_paths_in_a_clean_venv(venv):
    r = venv.run("-c", CPU_PATHS)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["version"] == layout.version(ROOT)
    assert out["file"].startswith(venv.site)
    assert out["top_level"] == {"compiler": False, "runtime": False, "kernels": False, "agent": False}
    assert out["cpu_error"] == "x must be on a CUDA device, got cpu"
    assert out["k_error"] == "k must be a positive int, got 0"
    assert out["reference"] is True
    assert out["prebuilt_hit"] is True and out["store"] == os.path.join(os.path.dirname(out["file"]), "prebuilt")
    assert "is not prebuilt on this machine and cannot be compiled here: nvcc not found" in out["no_kernel"]
    assert out["unsupported"] == ("cake.kmeans has no kernel for this GPU (NVIDIA RTX PRO 6000, compute capability "
                                  "12.0): it has kernels for sm_90a (compute capability 9.0)")
    assert out["import_failures"] == []


def test_the_cake_command_works_from_the_venv(venv):
    r = venv.command("cake", "--version")
    assert (r.returncode, r.stdout) == (0, "cake %s\n" % layout.version(ROOT))
    bad = os.path.join(ROOT, "compiler", "corpus", "bad", "sync_deadlock_no_release.cake")
    r = venv.command("cake", "verify", bad)
    assert r.returncode == 1 and ": error[CAKE-SYNC-004]: " in r.stderr, r.stderr


def test_the_pep517_backend_builds_the_same_files_but_the_store(wheel, tmp_path):
    out = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-q",
                        "--disable-pip-version-check", "-w", str(out), ROOT],
                       env=dict(os.environ, CAKE_WHEEL_PREBUILD="0"), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    built = glob.glob(str(out / "*.whl"))
    assert [os.path.basename(b) for b in built] == [os.path.basename(wheel)]
    def files(path):
        return {n for n in zipfile.ZipFile(path).namelist()
                if not n.startswith(layout.BUNDLE_DIR + "/") and not n.endswith("/RECORD")}

    assert files(built[0]) == files(wheel)
