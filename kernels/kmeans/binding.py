"""How a compiled KMeans assignment is launched by the oracle and the timer (worker side).

`assign(runner, options)` returns launch(outputs, inputs) over a loaded runner
(runtime.compiled.CompiledKernelRunner). The kernels take the squared centroid norms
precomputed; computing them is inside the timed launch, as it is for the peers. A
kernel with a KP symbol (the tuned family) takes them padded with +inf to whole
centroid tiles (`symbols`: KP is K rounded up to the rows of the tile `c` loads into,
options["tile_rows"]["c"] as agent/ir_edit.tile_rows reads the IR, else the rows of
the TMA box it loads `c` with, as its launch metadata says).
"""

import math

from cake.compiler.v1 import artifact_pb2


def centroid_tile(runner):
    """Rows of the tile the kernel loads `c` in (the c_sq padding unit); 1 when it does not load c by TMA."""
    for a in runner.md.args:
        if a.kind == artifact_pb2.ARG_KIND_TENSOR_MAP and a.source == "c" and len(a.box) >= 2:
            return a.box[-2]
    return 1


def symbols(shapes, tile_rows):
    """{"KP": K rounded up to whole centroid tiles}: what the binding derives (the contract file's `symbols`)."""
    tile = tile_rows.get("c") or 1
    return {"KP": -(-shapes["K"] // tile) * tile}


def assign(runner, options):
    import torch

    padded = any(s.name == "KP" for s in runner.md.symbols)
    tile = (options.get("tile_rows") or {}).get("c") or centroid_tile(runner)

    def launch(outputs, inputs):
        x, c = inputs
        cf = c.float()
        norms = torch.linalg.vecdot(cf, cf, dim=-1)
        if padded:
            b, k = norms.shape
            kp = symbols({"K": k}, {"c": tile})["KP"]
            c_sq = torch.full((b, kp), math.inf, dtype=torch.float32, device=c.device)
            c_sq[:, :k] = norms
        else:
            c_sq = norms.contiguous()
        runner(x=x, c=c, c_sq=c_sq, labels=outputs[0])

    return launch
