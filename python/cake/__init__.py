"""CAKE: GPU kernels written in CAKE IR, verified, compiled ahead of time per GPU, called from PyTorch.

    import cake
    labels = cake.kmeans_assign(x, c)                 # nearest centroid of each point, int32
    centroids, labels = cake.kmeans(x, k=1024, iters=20)
    dist, idx = cake.knn(q, x, 10)                    # exact k nearest neighbours (l2, ip, cosine)
    o, state = cake.chunk_kda(q, k, v, g, beta, output_final_state=True)   # fla's chunk_kda interface

The ops are torch custom ops (`cake::...`) with fake implementations; bad arguments are
a ValueError naming the argument. KMeans' kernels ship prebuilt for the GPUs they
support (sm_90a today; others, and KNN's and KDA's, compile on first use with nvcc, or raise
UnsupportedDevice naming your GPU's compute capability). Importing `cake` is cheap: an
op's module, and torch, load when the op is first used.

Also here: `cake.compiler` (verify, analyze, lower, build), `cake.runtime` (load, check,
time kernels), `cake.kernels` (references, schedules), the generated protobuf modules
`cake.ir.v1` and `cake.compiler.v1`, and the `cake` / `cake-mcp` commands.
"""

import importlib

from .compiler.version import VERSION as __version__

# Public op -> the module that defines it (monorepo names; they live under cake. here).
# Adding an op to the package is one line.
OPS = {
    "kmeans": "kernels.kmeans.api",
    "kmeans_assign": "kernels.kmeans.api",
    "kmeans_update": "kernels.kmeans.api",
    "knn": "kernels.knn.api",
    "KnnIndex": "kernels.knn.api",
    "chunk_kda": "kernels.kda.api",
}

__all__ = sorted(OPS) + ["__version__"]


def __getattr__(name):
    module = OPS.get(name)
    if module is None:
        raise AttributeError("module 'cake' has no attribute %r (its ops: %s)" % (name, ", ".join(sorted(OPS))))
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(OPS))
