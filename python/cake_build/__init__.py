"""The `cake-gpu` wheel's build: a PEP 517 backend (pyproject.toml) and the command Bazel runs (main.py).

    pip wheel . --no-deps          # or: pip install .   (from the monorepo's root)
    bazel build //python:wheel     # bazel-bin/python/wheel/cake_gpu-<version>-py3-none-any.whl

Both stage the same tree (stage.py, layout.py): the monorepo's compiler/, runtime/ and
kernels/ under cake/ with their imports rewritten (rewrite.py), the generated protobuf
code, the facade python/cake/, docs and protos for the MCP server, and the prebuilt
kernel stores (compiler/build/prebuilt.py). Bazel builds the stores
(//kernels/kmeans:assign_prebuilt); the PEP 517 backend builds them itself with nvcc
when CAKE_WHEEL_PREBUILD is 1, or "auto" (the default) and nvcc is installed; with 0
the wheel has none and its ops compile on first use.
"""

import os
import subprocess
import sys
import tempfile

from cake_build import layout, stage, wheel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pin(name):
    """requirements.txt's pin of `name` (the venv's, so the wheel's generated code matches plain pytest's)."""
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        for line in f:
            if line.split("==")[0].strip().lower() == name:
                return line.strip()
    return name


def get_requires_for_build_wheel(config_settings=None):
    return [_pin("grpcio-tools")]


def _want_prebuild():
    mode = os.environ.get("CAKE_WHEEL_PREBUILD", "auto")
    if mode not in ("auto", "0", "1"):
        raise ValueError("CAKE_WHEEL_PREBUILD must be auto, 0 or 1, got %r" % mode)
    if mode == "auto":
        from shutil import which

        return bool(which("nvcc") or os.path.exists(os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")))
    return mode == "1"


def prebuild(root, work):
    """Prebuilt stores of every kernel the ops run (layout.PREBUILT), compiled here with nvcc; their paths."""
    gen = os.path.join(work, "gen")
    stage._generate_protos(root, gen)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([gen, root]))
    stores = []
    for i, family in enumerate(layout.PREBUILT):
        stores.append(os.path.join(work, "prebuilt%d.zip" % i))
        subprocess.run([sys.executable, "-m", "compiler.build.prebuild", family, "--out", stores[-1],
                        "--jobs", str(os.cpu_count() or 1)], cwd=root, env=env, check=True)
    return stores


def build(root, out_dir, bundles=None):
    """Stage and write the wheel; its path. bundles=None: prebuild as CAKE_WHEEL_PREBUILD says."""
    with tempfile.TemporaryDirectory(prefix="cake-wheel-") as work:
        if bundles is None:
            bundles = prebuild(root, work) if _want_prebuild() else []
        staged = os.path.join(work, "staged")
        files = stage.stage(root, staged, bundles)
        return wheel.write_wheel(staged, files, out_dir, layout.version(root))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return os.path.basename(build(ROOT, wheel_directory))
