"""The KNN kernels built ahead of time (//kernels/knn:search_prebuilt), and Bazel's tool that builds them.

`prebuilt_kernels()` lists the kernels that searches of the shapes users are known to bring
run: every named cell of the shape domain (domain.json) and every shape of the tuning
databases (tuning/*.json), in both 16-bit dtypes, for the three metrics (with and without
exclude_self where Q == M), int32 indices. Per shape it takes what the dispatcher would
launch on the device the databases were measured on: the tuned variant of the shape's
bucket when a database has one, else the planner's choice (kernels/knn/dispatch.py). Other
shapes compile on first use after a JitCompile warning. Run as a program it is
compiler.build.prebuild over that list:

    python -m kernels.knn.prebuild_kernels --out knn_sm_90a.prebuilt.zip [--jobs 2]
"""

import os
import sys

import torch

from compiler.build import prebuild
from compiler.ir.hashing import ir_hash
from kernels.knn import dispatch, schedules
from runtime.tuning_db import TuningDB

METRICS = ("l2", "ip", "cos")  # the kernels' names for l2, inner product and cosine
DTYPES = (torch.bfloat16, torch.float16)


def tuning_databases():
    """Every KNN tuning database of kernels/knn/tuning (one per device it was measured on)."""
    paths = sorted(os.path.join(dispatch.TUNING_DIR, f) for f in os.listdir(dispatch.TUNING_DIR) if f.endswith(".json"))
    return [db for db in map(TuningDB.load, paths) if db.op == dispatch.DOMAIN.op]


def shapes():
    """(B, Q, M, D, k) of the domain's named cells and of the tuning databases' measured shapes."""
    out = [dict(c["shape"]) for c in dispatch.DOMAIN.cells]
    for db in tuning_databases():
        out += [dict(e["shape"]) for e in db.entries.values()]
    return sorted({(s["B"], s["Q"], s["M"], s["D"], s["k"]) for s in out})


def builders():
    """The sorted (builder, params) pairs of every kernel the listed shapes run, each once."""
    pickers = [dispatch.Picker([db]) for db in tuning_databases()]
    todo = set()
    for b, q, m, d, k in shapes():
        rank_d = dispatch.rank_shape(d, torch.bfloat16)[0]
        configs = {v.name for v, _ in (p.pick(b, q, m, rank_d, k) for p in pickers) if v is not None} or {None}
        for metric in METRICS:
            for dtype in DTYPES:
                for exclude_self in (False, True) if q == m else (False,):
                    for config in configs:
                        todo.update(dispatch.kernels_for(b, q, m, d, k, metric, exclude_self, dtype, config=config))
    return sorted(todo)


def prebuilt_kernels():
    """The distinct IR kernels of `builders()` (parameter sets that build the same kernel, once): what
    //kernels/knn:search_prebuilt compiles."""
    out = {}
    for name, params in builders():
        kernel = getattr(schedules, name)(**dict(params))
        out.setdefault(ir_hash(kernel), kernel)
    return [out[h] for h in sorted(out)]


if __name__ == "__main__":
    sys.exit(prebuild.main(["kernels.knn.prebuild_kernels:prebuilt_kernels"] + sys.argv[1:]))
