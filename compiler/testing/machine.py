"""The machine record every CPU benchmark of the compiler writes beside its figures, and where.

CPU, cores, Python, grpcio, the platform, the checkout's commit, the date, and the load
average when the figures were taken: other work on a shared machine inflates them.
Results go to benchmarks/results/ of the checkout (`bazel run` included).
"""

import os
import platform
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def results_path(name):
    """benchmarks/results/`name` in the checkout: the workspace under `bazel run`, else this tree."""
    return os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY") or ROOT, "benchmarks", "results", name)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit():
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine():
    import grpc

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "platform": platform.platform(),
        "cake_commit": commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
