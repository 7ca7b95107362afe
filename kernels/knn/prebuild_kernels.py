"""The KNN kernels built ahead of time (//kernels/knn:search_prebuilt), and Bazel's tool that builds them.

The set is finite: a score kernel is specialised to a feature tile width and a list length of
plan.py's ladders (TILE_WIDTHS, LIST_KS), a layout's parameters (which depend on the queries
only through Q's class: <= 16, then per 64 up to 256, and beyond), seeding, the metric, the
dtype and exclude_self; merges and fan-ins to the list length, metric and dtypes. So
`domain_builders()` lists every kernel of the domain (domain.json) by walking the ladders'
products at a representative shape per query class and database size, seeded and not, with
the tuned variants of their buckets; `prebuild_kernels_test.py` checks shapes drawn from the
domain need nothing else. `builders()` adds the named cells and the tuning databases' shapes
(each in both 16-bit dtypes, the three metrics, with and without exclude_self where Q == M).
Per shape it takes what the dispatcher would launch on the device the databases were measured
on: the tuned variant of the shape's bucket when a database has one, else the planner's choice
(kernels/knn/dispatch.py). A kernel missing from a store compiles on first use after a
JitCompile warning. Run as a program it is compiler.build.prebuild over that list:

    python -m kernels.knn.prebuild_kernels --out knn_sm_90a.prebuilt.zip [--jobs 2]
"""

import os
import sys

import torch

from compiler.build import prebuild
from compiler.ir.hashing import ir_hash
from kernels.knn import dispatch, schedules
from kernels.knn import plan as planner
from runtime.tuning_db import TuningDB

METRICS = ("l2", "ip", "cos")  # the kernels' names for l2, inner product and cosine
DTYPES = (torch.bfloat16, torch.float16)
INPUT_DTYPES = DTYPES + (torch.float32,)  # float32 rows rank in bf16 and rescore from f32 (the merge's rows)
INDEX_DTYPES = (torch.int32, torch.int64)
# A representative of every query class the planner tells apart (the cols layout up to 16; then the row groups a
# block's queries fill, 64 each, and whether a block holds them at once) at both of its ends, and database sizes that
# make one list per query, a few, and hundreds (the seeding pass and fan-in).
CLASS_QUERIES = (1, 16, 17, 64, 65, 128, 129, 192, 193, 256, 257, 4096, 1 << 20)
CLASS_ROWS = (1024, 65536, 10_000_000, 100_000_000)
SELF_ROWS = (1024, 65536, 1_000_000)  # self-KNN (Q == M, exclude_self)


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


def _in_domain(b, q, m, d, k):
    return dispatch.DOMAIN.outside({"B": b, "Q": q, "M": m, "D": d, "k": k, "dtype": "bf16"}) is None and k <= m


def class_shapes():
    """(B, Q, M, D, k, exclude_self) representatives of the domain's kernels: every tile width and list length of
    the ladders at every query class and database size (and self-KNN)."""
    out = []
    for d in planner.TILE_WIDTHS:
        for k in planner.LIST_KS:
            out += [(1, q, m, d, k, False) for q in CLASS_QUERIES for m in CLASS_ROWS if _in_domain(1, q, m, d, k)]
            out += [(1, m, m, d, k, True) for m in SELF_ROWS if _in_domain(1, m, m, d, k)]
    return out


def domain_builders():
    """The sorted (builder, params) pairs of every kernel the dispatcher runs over the domain, each once: per class
    shape, the planner's choice seeded or not and the tuned variant of its bucket, in every metric and input dtype,
    both index dtypes."""
    pickers = [dispatch.Picker([db]) for db in tuning_databases()]
    todo = set()
    for b, q, m, d, k, exclude_self in class_shapes():
        configs = {v.name for v, _ in (p.pick(b, q, m, d, k) for p in pickers) if v is not None}
        runs = [dict(seed=seed) for seed in (None, False, True)] + [dict(config=c) for c in configs]
        for metric in METRICS:
            for dtype in INPUT_DTYPES:
                # float32 rows rank through three terms: their tile is that of 3 D features (within its width).
                width = d if dtype != torch.float32 else min(d, 3 * planner.MAX_FP32_D) // 3
                if dtype == torch.float32 and dispatch.rank_shape(width, dtype)[0] > d:
                    continue
                for index_dtype in INDEX_DTYPES:
                    for run in runs:
                        todo.update(dispatch.kernels_for(b, q, m, width, k, metric, exclude_self, dtype, index_dtype,
                                                         **run))
    return sorted(todo)


def prebuilt_kernels():
    """The distinct IR kernels of `builders()` and `domain_builders()` (parameter sets that build the same kernel,
    once): what //kernels/knn:search_prebuilt compiles."""
    out = {}
    for name, params in sorted(set(builders()) | set(domain_builders())):
        kernel = getattr(schedules, name)(**dict(params))
        out.setdefault(ir_hash(kernel), kernel)
    return [out[h] for h in sorted(out)]


if __name__ == "__main__":
    sys.exit(prebuild.main(["kernels.knn.prebuild_kernels:prebuilt_kernels"] + sys.argv[1:]))
