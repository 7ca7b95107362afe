"""The wide-k search (33 <= k <= 256) on the GPU beside flashlib 0.4.0 and the exact torch path it replaces.

Shapes: the twelve k > 32 shapes of the dispatcher's sampled validation (benchmarks/results/knn_dispatch_h200.json),
more drawn from domain.json with 33 <= k <= 256 (seeded, log-uniform, under bench_dispatch's caps; not tuned on), and
the domain's cell "self-KNN graph, k = 90". Their kernels are built first, in parallel, under the deadline. Every
implementation is checked by the runtime's oracle (normal inputs) before the runtime's timer times it (cold L2, CUDA
events, median of 10): cake through knn()'s dispatcher (KnnIndex.search for search shapes, knn(x, x, k) for the
self-KNN cell), flashlib's flash_knn as bench.py calls it, and "torch_path" (kernels/knn/torch_path.py on the
index's rows). Rows go to --out after every shape, so a run stopped at its deadline keeps them.

    python3 -m kernels.knn.bench_widek --out FILE [--drawn 16] [--deadline-s 200] [--workers 16] [--build-tests]
                                       [--build-only]
"""

import argparse
import concurrent.futures
import json
import math
import random
import sys
import time

from kernels.knn import bench, bench_dispatch

SEED = 16
DISPATCH_SAMPLED = [
    {"B": 3, "Q": 3, "M": 179629, "D": 77, "k": 127, "dtype": "float16", "metric": "l2"},
    {"B": 8, "Q": 49, "M": 19089, "D": 14, "k": 256, "dtype": "float16", "metric": "l2"},
    {"B": 3, "Q": 494, "M": 534739, "D": 51, "k": 78, "dtype": "float16", "metric": "l2"},
    {"B": 7, "Q": 9664, "M": 1824, "D": 20, "k": 91, "dtype": "float16", "metric": "l2"},
    {"B": 2, "Q": 16, "M": 9201137, "D": 14, "k": 111, "dtype": "bfloat16", "metric": "l2"},
    {"B": 28, "Q": 1, "M": 52776, "D": 26, "k": 204, "dtype": "float16", "metric": "l2"},
    {"B": 4, "Q": 1554, "M": 1674, "D": 121, "k": 84, "dtype": "bfloat16", "metric": "ip"},
    {"B": 1, "Q": 72365, "M": 4555, "D": 10, "k": 173, "dtype": "bfloat16", "metric": "cosine"},
    {"B": 2, "Q": 10525, "M": 13128, "D": 185, "k": 38, "dtype": "float16", "metric": "cosine"},
    {"B": 2, "Q": 2204, "M": 39073, "D": 96, "k": 35, "dtype": "float16", "metric": "cosine"},
    {"B": 2, "Q": 1787, "M": 59382, "D": 242, "k": 178, "dtype": "bfloat16", "metric": "cosine"},
    {"B": 52, "Q": 524, "M": 16446, "D": 10, "k": 136, "dtype": "float16", "metric": "cosine"},
]
SELF_KNN_90 = {"B": 1, "Q": 70000, "M": 70000, "D": 50, "k": 90, "dtype": "bfloat16", "metric": "l2", "self": True}


def drawn_shapes(count):
    """`count` shapes from the domain with 33 <= k <= 256 under bench_dispatch's caps, a metric and dtype each."""
    from kernels.knn import dispatch

    rng = random.Random(SEED)
    shapes = dispatch.DOMAIN.sample(rng, count, accept=lambda s: bench_dispatch.in_caps(s) and 33 <= s["k"] <= s["M"],
                                    log_uniform=("B", "Q", "M", "D", "k"))
    for s in shapes:
        s["metric"] = rng.choice(("l2", "l2", "cosine", "ip"))
        s["dtype"] = "bfloat16" if s["dtype"] == "bf16" else "float16"
    return shapes


def torch_path_impl(shape):
    from kernels.knn import api, rows, torch_path

    k, metric = shape["k"], shape.get("metric", "l2")
    indexes = {}

    def launch(outputs, inputs):
        q, x = inputs
        key = (x.data_ptr(), tuple(x.shape))
        if key not in indexes:
            indexes.clear()
            indexes[key] = api.KnnIndex(x, metric=metric)
        torch_path.search_into(rows.rescoring_rows(q), indexes[key]._db, k, False, outputs[0], outputs[1])

    return launch


def build_all(shapes, workers, deadline):
    """Build every wide-k kernel the shapes run, in parallel, until `deadline` (time.time()); the failures."""
    import torch

    from kernels.knn import api, widek

    todo = set()
    for s in shapes:
        todo.update(widek.kernels_for(s["B"], s["Q"], s["M"], s["D"], s["k"], api.METRICS[s["metric"]],
                                      s.get("exclude_self", False), getattr(torch, s["dtype"])))
    failed = []
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(bench._build_one, b, p): (b, p) for b, p in sorted(todo)}
        try:
            for f in concurrent.futures.as_completed(futures, timeout=max(1.0, deadline - time.time())):
                if f.result():
                    failed.append("%s: %s" % (futures[f], f.result()))
        except concurrent.futures.TimeoutError:
            failed.append("build deadline passed")
            for f in futures:
                f.cancel()
    print("built %d kernels, %d failed" % (len(todo), len(failed)), flush=True)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--drawn", type=int, default=16)
    ap.add_argument("--deadline-s", type=float, default=200)
    ap.add_argument("--build-s", type=float, default=60)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--build-tests", action="store_true", help="build widek_gpu_test's kernels too")
    ap.add_argument("--build-only", action="store_true", help="build the kernels (into the compile cache) and stop")
    args = ap.parse_args()
    start = time.time()
    import torch

    from runtime import distributions

    groups = [("dispatch_sampled", s) for s in DISPATCH_SAMPLED] + [("self_knn_90", SELF_KNN_90)] + [
        ("drawn", s) for s in drawn_shapes(args.drawn)]
    record = {}
    built = [s for _, s in groups]
    if args.build_tests:
        from kernels.knn import widek_gpu_test

        built += widek_gpu_test.build_shapes()
    record["build_failures"] = build_all(built, args.workers, start + args.build_s)
    if args.build_only:
        print(json.dumps(record["build_failures"]), flush=True)
        return
    record.update(bench.machine())
    rows = []
    for source, shape in groups:
        if time.time() - start > args.deadline_s:
            print("deadline: %d of %d shapes measured" % (len(rows), len(groups)), file=sys.stderr)
            break
        impls = {"cake": bench.cake_impl(shape)}
        fl = bench.flashlib_impl(shape)
        if fl is not None:
            impls["flashlib"] = fl
        impls["torch_path"] = torch_path_impl(shape)
        row = bench.measure(shape, impls, 10, SEED, dists=(distributions.NORMAL,))
        row["source"] = source
        rows.append(row)
        torch.cuda.empty_cache()
        _write(args.out, rows, record, len(groups))


def _write(path, rows, record, planned):
    ratios = {"flashlib": [], "torch_path": []}
    for row in rows:
        cake = row["impls"].get("cake", {})
        for peer, out in ratios.items():
            base = row["impls"].get(peer, {})
            if base.get("check", {}).get("passed") and "median_ms" in base and "median_ms" in cake and \
                    cake.get("check", {}).get("passed"):
                cake["speedup_vs_" + peer] = base["median_ms"] / cake["median_ms"]
                out.append(cake["speedup_vs_" + peer])
    summary = {"shapes_planned": planned, "shapes_measured": len(rows),
               "checked": sum(1 for r in rows if r["impls"].get("cake", {}).get("check", {}).get("passed"))}
    for peer, sp in ratios.items():
        summary.update({"beside_" + peer: len(sp),
                        "geomean_speedup_vs_" + peer: math.exp(sum(map(math.log, sp)) / len(sp)) if sp else None,
                        "min_speedup_vs_" + peer: min(sp) if sp else None,
                        "below_1x_vs_" + peer: sum(1 for s in sp if s < 1.0)})
    with open(path, "w") as f:
        json.dump({"machine": dict(record, **summary), "search": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
