"""prebuild: compile a family of IR kernels ahead of time into a prebuilt store (compiler/build/prebuilt.py).

    python -m compiler.build.prebuild kernels.kmeans.variants:prebuilt_kernels --out kmeans.zip [--jobs 2]

The named function returns the IR kernels to build (each for its own target). Every
kernel is verified first (an error diagnostic fails the run, naming the kernel), then
compiled with nvcc; ptxas spills are reported. The store is a .zip (what Bazel's
`cake_prebuilt` makes) or a directory, holding `<target>/<ir_hash>.pb` artifacts.
"""

import argparse
import concurrent.futures
import importlib
import os
import sys
import tempfile
import zipfile

from cake.compiler.v1 import diagnostics_pb2

from compiler.build import prebuilt
from compiler.build.cache import CompileCache
from compiler.build.driver import build
from compiler.verify import format_diagnostic, verify


def _resolve(name):
    module, _, fn = name.partition(":")
    return getattr(importlib.import_module(module), fn)


def _build_one(kernel, cache):
    errors = [d for d in verify(kernel) if d.severity == diagnostics_pb2.SEVERITY_ERROR]
    if errors:
        return kernel.name, None, "\n".join(format_diagnostic(d) for d in errors)
    result = build(kernel, cache=cache)
    if not result.ok:
        return kernel.name, None, "; ".join(d.message for d in result.diagnostics)
    return kernel.name, result.compiled, None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="prebuild", description=__doc__.splitlines()[0])
    ap.add_argument("family", help="module:function returning the IR kernels to build")
    ap.add_argument("--out", required=True, help="a .zip file or a directory")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cache", default=None, help="a compile-cache directory to reuse (default: none)")
    args = ap.parse_args(argv)
    kernels = list(_resolve(args.family)())
    with tempfile.TemporaryDirectory(prefix="cake-prebuild-") as tmp:
        cache = CompileCache(args.cache or os.path.join(tmp, "cache"))
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(lambda k: _build_one(k, cache), kernels))
        failed = [(name, why) for name, compiled, why in results if compiled is None]
        for name, why in failed:
            sys.stderr.write("prebuild: %s: %s\n" % (name, why))
        if failed:
            return 1
        store = args.out if not args.out.endswith(".zip") else os.path.join(tmp, "store")
        for _, compiled, _ in results:
            usage = compiled.resources
            if usage.spill_store_bytes or usage.spill_load_bytes:
                sys.stderr.write("prebuild: note: %s spills %d bytes (stores) / %d (loads)\n"
                                 % (compiled.launch.symbol, usage.spill_store_bytes, usage.spill_load_bytes))
            prebuilt.write(store, compiled)
        if args.out.endswith(".zip"):
            _zip(store, args.out)
    print("prebuild: %d kernels into %s" % (len(results), args.out))
    return 0


def _zip(store, out):
    """A deterministic zip of `store` (sorted entries, fixed timestamps), so Bazel outputs are reproducible."""
    names = sorted(os.path.relpath(os.path.join(root, f), store) for root, _, files in os.walk(store) for f in files)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(os.path.join(store, name), "rb") as f:
                z.writestr(info, f.read())


if __name__ == "__main__":
    sys.exit(main())
