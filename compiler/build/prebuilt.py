"""Prebuilt kernels: CompiledKernel artifacts built ahead of time, found by (IR hash, target).

The one mechanism for "prebuilt cubins present, else JIT with a clear message": an API
asks `load(kernel)` for the artifact of an IR kernel. It is looked up, by the kernel's
IR hash and target, in the prebuilt stores on the search path; only when none holds it
is the kernel compiled here (nvcc), after one warning naming the kernel and how to get
it prebuilt. A machine with the prebuilt artifacts never needs nvcc.

A store is a directory or a .zip holding `<target>/<ir_hash>.pb` files, each a
serialized cake.compiler.v1.CompiledKernel (exactly what the JIT path builds, so both
paths launch the same thing). Bazel builds them per SM with `cake_prebuilt`
(bazel/cake.bzl), which runs `python -m compiler.build.prebuild`. The search path is,
in order: $CAKE_PREBUILT (os.pathsep-separated stores), stores added with
`add_store` (a package adds the one it ships), `prebuilt/` at the repository root, and
the stores Bazel built in this checkout (bazel-bin/kernels/*/*.prebuilt.zip).
The key has no toolchain in it: an artifact records the toolchain it was built with,
and a machine without nvcc must still find it.
"""

import glob
import os
import threading
import warnings
import zipfile

from cake.compiler.v1 import artifact_pb2

from compiler.ir.enums import short_name
from compiler.ir.hashing import ir_hash

ENV = "CAKE_PREBUILT"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPO_STORE = os.path.join(REPO_ROOT, "prebuilt")

_added = []
_lock = threading.Lock()
_indexes = {}  # store path -> {(target, ir_hash): reader}
_warned = set()


class JitCompile(UserWarning):
    """A kernel had no prebuilt artifact and is being compiled on this machine."""


class NoKernel(RuntimeError):
    """A kernel has no prebuilt artifact and cannot be compiled here."""


def add_store(path):
    """Search `path` (a directory or .zip of `<target>/<ir_hash>.pb`) after $CAKE_PREBUILT."""
    with _lock:
        if path not in _added:
            _added.append(path)


def search_path():
    """The stores searched, in order."""
    env = [p for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    built = sorted(glob.glob(os.path.join(REPO_ROOT, "bazel-bin", "kernels", "*", "*.prebuilt.zip")))
    return env + list(_added) + [REPO_STORE] + built


def entry_name(target, digest):
    return "%s/%s.pb" % (target, digest)


def _index(store):
    """{entry name: a function returning its bytes} for one store (read once per process)."""
    with _lock:
        cached = _indexes.get(store)
        if cached is not None:
            return cached
        index = {}
        if os.path.isdir(store):
            for target in os.listdir(store):
                folder = os.path.join(store, target)
                if os.path.isdir(folder):
                    for f in os.listdir(folder):
                        if f.endswith(".pb"):
                            index["%s/%s" % (target, f)] = (lambda p=os.path.join(folder, f): _read_file(p))
        elif os.path.isfile(store) and zipfile.is_zipfile(store):
            with zipfile.ZipFile(store) as z:
                names = [n for n in z.namelist() if n.endswith(".pb")]
            for n in names:
                index[n] = lambda n=n: _read_zip(store, n)
        _indexes[store] = index
        return index


def _read_file(path):
    with open(path, "rb") as f:
        return f.read()


def _read_zip(store, name):
    with zipfile.ZipFile(store) as z:
        return z.read(name)


def target_of(kernel):
    from cake.ir.v1 import ir_pb2

    return short_name(ir_pb2.Target.DESCRIPTOR, kernel.target)


def find(kernel):
    """The prebuilt CompiledKernel of `kernel`, or None when no store on the search path has it."""
    name = entry_name(target_of(kernel), ir_hash(kernel))
    for store in search_path():
        reader = _index(store).get(name)
        if reader is None:
            continue
        compiled = artifact_pb2.CompiledKernel()
        try:
            compiled.ParseFromString(reader())
        except Exception:  # noqa: BLE001  (a corrupt entry is skipped, never trusted)
            continue
        return compiled
    return None


def load(kernel, what=None):
    """The CompiledKernel of `kernel`: prebuilt when present, else compiled here after a warning.

    `what` names the kernel in messages (default: its name). Raises NoKernel when it is
    neither prebuilt nor compilable here, saying both what was searched and why the
    compile failed.
    """
    compiled = find(kernel)
    if compiled is not None:
        return compiled
    what = what or kernel.name
    target = target_of(kernel)
    warn_jit(kernel, what)
    from compiler.build import nvcc
    from compiler.build.driver import build

    try:
        result = build(kernel)
    except nvcc.NvccNotFound as e:
        raise NoKernel("%s for %s is not prebuilt on this machine and cannot be compiled here: %s" % (what, target, e)) from None
    if not result.ok:
        raise NoKernel("%s for %s failed to build: %s" % (what, target, "; ".join(d.message for d in result.diagnostics)))
    return result.compiled


def warn_jit(kernel, what=None, build_hint="e.g. `bazel build //kernels/kmeans:assign_prebuilt`"):
    """Warn (JitCompile, once per name and target) that `kernel` has no prebuilt artifact and is compiled here;
    `build_hint` says how to build it ahead of time."""
    what = what or kernel.name
    target = target_of(kernel)
    if (what, target) in _warned:
        return
    _warned.add((what, target))
    warnings.warn(JitCompile(
        "no prebuilt %s kernel %s (IR %s) in %s: compiling it with nvcc now (once per machine, then cached); "
        "build them ahead of time (%s) or set %s to a store that has them"
        % (target, what, ir_hash(kernel)[:12], os.pathsep.join(search_path()), build_hint, ENV)), stacklevel=3)


def write(store, compiled):
    """Add `compiled` to the directory store `store`; returns the entry's path."""
    path = os.path.join(store, entry_name(compiled.target, compiled.ir_hash))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(compiled.SerializeToString(deterministic=True))
    with _lock:
        _indexes.pop(store, None)
    return path
