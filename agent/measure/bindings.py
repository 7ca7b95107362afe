"""Measurement bindings (worker side): how a compiled candidate is launched as launch(outputs, inputs).

A binding receives the loaded runner (runtime.compiled.CompiledKernelRunner) and the
job's payload and returns the launch function the oracle and the timer call. The
KMeans assignment kernels take the squared centroid norms precomputed; the work of
computing them is inside the timed launch, as it is for the peers. A kernel with a
KP symbol (the tuned family) takes them padded with +inf to whole centroid tiles.
"""

import math


def kmeans_assign(runner, payload):
    import torch

    padded = any(s.name == "KP" for s in runner.md.symbols)
    tile = payload.get("centroid_tile") or 1

    def launch(outputs, inputs):
        x, c = inputs
        cf = c.float()
        norms = torch.linalg.vecdot(cf, cf, dim=-1)
        if padded:
            b, k = norms.shape
            kp = -(-k // tile) * tile
            c_sq = torch.full((b, kp), math.inf, dtype=torch.float32, device=c.device)
            c_sq[:, :k] = norms
        else:
            c_sq = norms.contiguous()
        runner(x=x, c=c, c_sq=c_sq, labels=outputs[0])

    return launch
