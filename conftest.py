"""Repo-wide pytest setup, shared by Bazel's pytest_test and plain `pytest` from the root.

- Puts the generated protobuf/gRPC code on sys.path. Under Bazel it comes from the
  build (//proto); under plain pytest (the GPU machine has no Bazel) it is generated
  into .gen/ by proto/generate.py whenever .gen/ is missing or older than proto/
  (SOURCES.sha256), or carried there already built.
- Keeps plain pytest as hermetic as Bazel's sandbox: CAKE's cache and state
  (compiler/locations.py) go to a fresh directory for the session, never to the
  user's ~/.cache/cake or ~/.local/state/cake, so nothing an earlier run left can make
  a test pass (or fail) that would not under `bazel test`.
- Keeps python/ (the wheel's sources, whose `cake` package would hide the generated one) off sys.path
  outside python/'s own test files, when collecting and when running.
- Turns gRPC's fork support off before any test imports grpc (compiler/service/__init__.py says why: a
  test that starts a subprocess after using a channel would otherwise lose it, now and then, to SIGABRT).
- GPU tests (`@pytest.mark.gpu`) skip cleanly without a GPU, and fail with a clear
  "no GPU" message when REQUIRE_GPU=1 (bazel test --config=gpu sets it).
"""

import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
import warnings

import pytest

import compiler.service  # noqa: F401  (before any test imports grpc: it turns gRPC's fork support off)

ROOT = os.path.dirname(os.path.abspath(__file__))


def _load_generate():
    """proto/generate.py as a module (without putting proto/ on sys.path)."""
    spec = importlib.util.spec_from_file_location("cake_proto_generate", os.path.join(ROOT, "proto", "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ensure_generated_protos():
    gen = os.path.join(ROOT, ".gen")
    try:
        from cake.ir.v1 import ir_pb2
    except ImportError:
        ir_pb2 = None
    if ir_pb2 is not None and not os.path.abspath(ir_pb2.__file__).startswith(gen + os.sep):
        return  # Bazel's build-time code (or generated code the caller put on the path)
    generate = _load_generate()
    if not generate.is_current(gen):
        try:
            generate.generate(gen)
        except ImportError as e:  # no grpc_tools (the GPU machine): use the carried code as it is
            if not os.path.isdir(gen):
                raise RuntimeError("no generated protobuf code in %s and no grpc_tools to generate it (%s): run "
                                   "`python3 proto/generate.py` where grpcio-tools is installed" % (gen, e)) from None
            warnings.warn("%s was not generated from the current proto/ files and cannot be regenerated here "
                          "(%s)" % (gen, e))
        for name in [m for m in sys.modules if m == "cake" or m.startswith("cake.")]:
            del sys.modules[name]
    if gen not in sys.path:
        sys.path.insert(0, gen)
    sys.path_importer_cache.clear()


_ensure_generated_protos()


def _isolate_cake_directories():
    if "TEST_TMPDIR" in os.environ:
        return  # under bazel test: compiler/locations.py already uses the test's own directory
    session = tempfile.mkdtemp(prefix="cake-pytest-")
    atexit.register(shutil.rmtree, session, True)
    os.environ["CAKE_CACHE_DIR"] = os.path.join(session, "cache")
    os.environ["CAKE_STATE_DIR"] = os.path.join(session, "state")
    os.environ.pop("CAKE_RUNS_ROOT", None)


_isolate_cake_directories()


FACADE = os.path.join(ROOT, "python")


def _under_facade(path):
    return os.path.abspath(str(path or "")).startswith(FACADE + os.sep)


def _drop_facade():
    """python/cake, the wheel's facade, is a regular package named `cake`: while python/ is on sys.path it hides
    the generated namespace package `cake` (.gen: cake.ir.v1, cake.compiler.v1) from every later import, and from
    every subprocess handed this sys.path (a compiler server started by a test). pytest puts python/ there to
    import python/'s test files (and again to set up the cake_build package for its tests)."""
    kept = [p for p in sys.path if os.path.abspath(p or os.curdir) != FACADE]
    if len(kept) == len(sys.path):
        return  # not on sys.path, so nothing was imported from it since it last left
    sys.path[:] = kept
    for name in [m for m in sys.modules if m == "cake" or m.startswith("cake.")]:
        if _under_facade(getattr(sys.modules[name], "__file__", None)):
            del sys.modules[name]
    sys.path_importer_cache.clear()


def pytest_collectreport(report):
    """A test file under python/ is imported: python/ leaves sys.path before the next file is."""
    path = str(getattr(report, "fspath", "") or "")
    if path.endswith(".py") and _under_facade(path):
        _drop_facade()


def gpu_available():
    """True when an NVIDIA GPU answers through the CUDA driver."""
    try:
        from cuda.bindings import driver

        err, = driver.cuInit(0)
    except (ImportError, RuntimeError):  # no cuda-python, or no libcuda.so.1 (no driver)
        return False
    if err != driver.CUresult.CUDA_SUCCESS:
        return False
    err, count = driver.cuDeviceGetCount()
    return err == driver.CUresult.CUDA_SUCCESS and count > 0


def gpu_compute_capability():
    from cuda.bindings import driver

    driver.cuInit(0)
    _, dev = driver.cuDeviceGet(0)
    attr = driver.CUdevice_attribute
    _, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    return major, minor


def _missing_gpu_reason(item):
    """Why `item` cannot run on this machine, or None when it can."""
    if not gpu_available():
        return "no GPU: the CUDA driver found no NVIDIA device on this machine"
    if item.get_closest_marker("sm_90a") and gpu_compute_capability() != (9, 0):
        return "no sm_90a GPU: this test needs compute capability 9.0, found %d.%d" % gpu_compute_capability()
    return None


def pytest_runtest_setup(item):
    if not _under_facade(item.path):
        _drop_facade()  # every test outside python/ runs without python/ on sys.path
    if not (item.get_closest_marker("gpu") or item.get_closest_marker("sm_90a")):
        return
    why = _missing_gpu_reason(item)
    if why is None:
        return
    if os.environ.get("REQUIRE_GPU") == "1":
        pytest.fail("REQUIRE_GPU=1 but " + why, pytrace=False)
    pytest.skip(why)
