"""Bazel's tool for //python:test_store: compiler.build.prebuild over cake_build.testing.store_kernels."""

import os
import sys

if __package__ in (None, ""):  # run as a script (Bazel's py_binary): make `cake_build` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler.build import prebuild  # noqa: E402

if __name__ == "__main__":
    sys.exit(prebuild.main(["cake_build.testing:store_kernels"] + sys.argv[1:]))
