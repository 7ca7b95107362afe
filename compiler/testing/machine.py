"""Where the compiler's CPU benchmarks write, and the machine record they write (compiler/host.py's, with grpcio).

Results go to benchmarks/results/ of the checkout (`bazel run` included).
"""

import os

from compiler import host


def results_path(name):
    """benchmarks/results/`name` in the checkout: the workspace under `bazel run`, else this tree."""
    return os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY") or host.ROOT, "benchmarks", "results", name)


def machine():
    """The host record (compiler/host.py) with the grpcio version the service benchmarks ran on."""
    return host.record("grpcio")
