"""On a GPU: the installed wheel runs kmeans_assign from its prebuilt cubins, with no nvcc to fall back on.

Finds the wheel in $CAKE_WHEEL, dist/ or Bazel's output (docs/package.md says how
to build and carry it), installs it into a clean venv that sees this machine's torch (and
the carried wheels in .whl/ for what the image lacks), then, with nvcc off PATH, CUDA_HOME
pointing nowhere, nvcc's lookup made to fail and a JIT warning made an error (any kernel
not prebuilt fails the run), runs kmeans_assign and kmeans_update on fresh inputs and
compares them with the torch reference. Prints the first call's time.
"""

import glob
import json
import os
import textwrap

import pytest

from cake_build.testing import CleanVenv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import json, time, warnings, torch, cake
    from cake.compiler.build import nvcc, prebuilt
    from cake.kernels.kmeans import reference
    def no_nvcc():
        raise nvcc.NvccNotFound("this test allows no nvcc")
    nvcc.find_nvcc = no_nvcc
    warnings.simplefilter("error", prebuilt.JitCompile)
    torch.manual_seed(0)
    out = {"capability": list(torch.cuda.get_device_capability()), "cases": []}
    for b, n, k, d, dtype in [(1, 100000, 1000, 128, torch.bfloat16), (2, 4099, 77, 40, torch.float16),
                              (1, 65536, 1024, 256, torch.bfloat16)]:
        x = torch.randn(b, n, d, device="cuda", dtype=dtype)
        c = torch.randn(b, k, d, device="cuda", dtype=dtype)
        t0 = time.perf_counter()
        labels = cake.kmeans_assign(x, c)
        torch.cuda.synchronize()
        first_s = time.perf_counter() - t0
        ref = reference.assign(x.double(), c.double())
        d_got = torch.gather(torch.cdist(x.double(), c.double()), 2, labels.long()[..., None])[..., 0]
        d_ref = torch.gather(torch.cdist(x.double(), c.double()), 2, ref.long()[..., None])[..., 0]
        same = float(((labels == ref) | ((d_got - d_ref).abs() <= 1e-6 * d_ref.abs().clamp_min(1))).float().mean())
        c_new = cake.kmeans_update(x, labels, c)
        ref_c, _ = reference.update(x.float(), labels, c.float())
        upd = float((c_new.float() - ref_c).norm() / ref_c.norm().clamp_min(1e-30))
        out["cases"].append({"shape": [b, n, k, d], "dtype": str(dtype), "first_call_s": round(first_s, 4),
                             "agreement": same, "update_rel_l2": upd})
    print(json.dumps(out))
""")


def _wheel():
    places = ("dist", "python/wheel", "bazel-bin/python/wheel")  # carried; Bazel's runfiles; a Bazel checkout
    found = ([os.environ["CAKE_WHEEL"]] if os.environ.get("CAKE_WHEEL") else []) + [
        w for p in places for w in sorted(glob.glob(os.path.join(ROOT, p, "cake_gpu-*.whl")))]
    if not found:
        message = "no cake wheel: set CAKE_WHEEL or put it in dist/ (bazel build //python:wheel; docs/package.md)"
        if os.environ.get("REQUIRE_GPU") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found[0]


@pytest.mark.sm_90a
def test_the_installed_wheel_runs_kmeans_without_nvcc(tmp_path):
    venv = CleanVenv(tmp_path / "venv")
    carried = os.path.join(ROOT, ".whl")
    venv.install(_wheel(), *(["--find-links", carried] if os.path.isdir(carried) else []))
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if p and not os.path.exists(os.path.join(p, "nvcc")))
    r = venv.run("-c", SCRIPT, env={"CUDA_HOME": str(tmp_path / "no-cuda"), "PATH": path, "CAKE_PREBUILT": "",
                                    "CAKE_CACHE_DIR": str(tmp_path / "cache")}, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print("wheel on the GPU:", json.dumps(out))
    for case in out["cases"]:
        assert case["agreement"] >= 0.999, case
        assert case["update_rel_l2"] < 1e-2, case
    assert not os.path.exists(tmp_path / "cache" / "compile"), "something was compiled"
