"""Validate the KNN dispatcher on the GPU beside flashlib, on shapes drawn from its domain, and measure host cost.

One run, in this order:
1. build: every kernel the drawn shapes run (the ladders' buckets of kernels/knn/plan.py: a few
   hundred for 400 shapes), in parallel, into the compile cache (`--build-only` does just this,
   beside other work);
2. host cost: 1,000 back-to-back calls at a tiny shape (Q 1, M 4096, D 64, k 10), host clock
   (perf_counter around the loop, one synchronize at its end), for KnnIndex.search, knn() and
   flashlib 0.4.0's flash_knn; and the picker alone;
3. validate: shapes drawn from domain.json (log-uniform per symbol, seeded, under a work
   cap, none of them a tuning shape), the kernels' (k <= 32) first, then those of the exact
   torch path (k > 32); each checked by the runtime's oracle (normal inputs) and then timed by
   the runtime's timer (cold L2, CUDA events, median of 10), ours through knn()'s dispatcher
   (KnnIndex.search for search shapes) and flashlib's flash_knn (L2; cosine through normalised
   rows, which fails its recall check; it has no inner product) as bench.py times them.
Rows are written to --out after every shape, so a run stopped at its deadline keeps them; the
summary counts all shapes and the kernels' (k <= 32) apart.

    python3 -m kernels.knn.bench_dispatch --out FILE [--shapes 400] [--deadline-s 150] [--build-only]
"""

import argparse
import json
import random
import sys
import time

from kernels.knn import bench

WORK_CAP = 1e11  # B Q M D: about 0.4 ms of tensor-core work at our rate
BYTES_CAP = 2 << 30  # database rows: 2 GiB
SEED = 14
TINY = {"B": 1, "Q": 1, "M": 4096, "D": 64, "k": 10}


def in_caps(s):
    return s["B"] * s["Q"] * s["M"] * s["D"] <= WORK_CAP and 2 * s["B"] * s["M"] * s["D"] <= BYTES_CAP


def validation_shapes(count):
    """`count` shapes from the domain under the caps, with a metric each, none of them a tuning shape."""
    from kernels.knn import dispatch

    tuned = set()
    for entry in json.load(open(dispatch.os.path.join(dispatch.TUNING_DIR, "h200.json")))["entries"].values():
        tuned.add(tuple(entry["shape"][n] for n in ("B", "Q", "M", "D", "k")))
    rng = random.Random(SEED)
    shapes = dispatch.DOMAIN.sample(rng, count, accept=lambda s: in_caps(s) and s["k"] <= s["M"] and (
        s["B"], s["Q"], s["M"], s["D"], s["k"]) not in tuned, log_uniform=("B", "Q", "M", "D", "k"))
    for s in shapes:
        s["metric"] = rng.choice(("l2", "l2", "cosine", "ip"))
        s["dtype"] = "bfloat16" if s["dtype"] == "bf16" else "float16"
    return shapes


def host_cost(calls=1000):
    """Microseconds per call of back-to-back calls at the tiny shape, host clock."""
    import torch

    from kernels.knn import api, dispatch

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(TINY["M"], TINY["D"], device="cuda", generator=g).to(torch.bfloat16)
    q = torch.randn(TINY["Q"], TINY["D"], device="cuda", generator=g).to(torch.bfloat16)
    index = api.KnnIndex(x)
    fns = {"cake KnnIndex.search": lambda: index.search(q, TINY["k"]), "cake knn": lambda: api.knn(q, x, TINY["k"])}
    try:
        from flashlib.primitives.knn import flash_knn

        fns["flashlib flash_knn"] = lambda: flash_knn(q, x, TINY["k"], return_distances=True)
    except ImportError:
        pass
    out = {"shape": TINY, "calls": calls}
    for name, fn in fns.items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        out[name + " us"] = (time.perf_counter() - t0) / calls * 1e6
    p = dispatch.picker(0)
    t0 = time.perf_counter()
    for i in range(calls):
        p.pick(1, 1 + i % 7, 4096, 64, 10)
    out["picker us"] = (time.perf_counter() - t0) / calls * 1e6
    return out


def kernel_shapes(shapes):
    """The drawn shapes the kernels run (k <= 32) first, then the exact torch path's, each in drawn order."""
    from kernels.knn import plan as planner

    return [s for s in shapes if s["k"] <= planner.MAX_K] + [s for s in shapes if s["k"] > planner.MAX_K]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", type=int, default=400)
    ap.add_argument("--deadline-s", type=float, default=150)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--build-only", action="store_true", help="build the drawn shapes' kernels, measure nothing")
    args = ap.parse_args()
    start = time.time()
    shapes = kernel_shapes(validation_shapes(args.shapes))
    t0 = time.time()
    failed = bench.build_all(shapes + [dict(TINY)], args.workers)
    built = {"seconds": time.time() - t0, "failed": failed}
    if args.build_only:
        print(json.dumps(built), flush=True)
        return
    import torch

    from runtime import distributions

    from runtime.environment import machine_record

    record = dict(machine_record(), host_cost=host_cost(), build=built)
    print(json.dumps(record["host_cost"]), flush=True)
    _write(args.out, [], record, len(shapes))
    rows = []
    for shape in shapes:
        if time.time() - start > args.deadline_s:
            break
        impls = {"cake": bench.cake_impl(shape)}
        fl = bench.flashlib_impl(shape)
        if fl is not None:
            impls["flashlib"] = fl
        rows.append(bench.measure(shape, impls, 10, SEED, dists=(distributions.NORMAL,)))
        torch.cuda.empty_cache()
        _write(args.out, rows, record, len(shapes))
    print("%d shapes measured of %d drawn" % (len(rows), len(shapes)), file=sys.stderr)


def summary(rows):
    """Speedups over flashlib where both passed the oracle: geometric mean, min, how many below 1.0x; and what kept
    a row out of the ratio (flashlib has no inner product; its cosine through normalised rows fails the recall check)."""
    import math

    sp = [r["impls"]["cake"]["speedup_vs_flashlib"] for r in rows if "speedup_vs_flashlib" in r["impls"].get("cake", {})]
    return {"shapes_measured": len(rows), "beside_flashlib": len(sp),
            "checked": sum(1 for r in rows if r["impls"].get("cake", {}).get("check", {}).get("passed")),
            "cake_failed_check": sum(1 for r in rows if not r["impls"].get("cake", {}).get("check", {}).get("passed")),
            "flashlib_absent (ip)": sum(1 for r in rows if "flashlib" not in r["impls"]),
            "flashlib_failed_check": sum(1 for r in rows if "flashlib" in r["impls"]
                                         and not r["impls"]["flashlib"].get("check", {}).get("passed")),
            "geomean_speedup_vs_flashlib": math.exp(sum(math.log(s) for s in sp) / len(sp)) if sp else None,
            "min_speedup_vs_flashlib": min(sp) if sp else None,
            "below_1x": sum(1 for s in sp if s < 1.0)}


def _write(path, rows, record, drawn):
    from kernels.knn import plan as planner

    for row in rows:
        base = row["impls"].get("flashlib", {})
        cake = row["impls"].get("cake", {})
        if base.get("check", {}).get("passed") and cake.get("check", {}).get("passed") and "median_ms" in base \
                and "median_ms" in cake:
            cake["speedup_vs_flashlib"] = base["median_ms"] / cake["median_ms"]
    summaries = {"all": summary(rows),
                 "kernels (k <= %d)" % planner.MAX_K: summary([r for r in rows if r["shape"]["k"] <= planner.MAX_K]),
                 "torch path (k > %d)" % planner.MAX_K: summary([r for r in rows if r["shape"]["k"] > planner.MAX_K])}
    with open(path, "w") as f:
        json.dump({"machine": dict(record, shapes_drawn=drawn, summary=summaries), "search": rows}, f, indent=1,
                  default=str)


if __name__ == "__main__":
    main()
