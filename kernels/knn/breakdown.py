"""Where a KNN call's time goes on the GPU: host cost, device time per kernel, and schedule variants.

Per shape: the host cost of one call (the GPU idle before it, so the call returns when its
launches are queued), the cold-L2 time of a call (CUDA events around it after an L2 flush,
median, as runtime/timing.py times), the time per call of back-to-back calls, and the
device time of each kernel of one call (torch.profiler). flashlib 0.4.0 flash_knn is timed
the same way beside it. `--variants` adds every schedule variant of bench.variant_plans,
with and without the seeding pass. Results go to --out as JSON; a table is printed last.

    python3 -m kernels.knn.breakdown [--out FILE] [--variants] [--shapes small|headline|all]
"""

import argparse
import json
import statistics
import sys
import time

from kernels.knn import bench

SMALL = [
    {"B": 1, "Q": 1, "M": 1_000_000, "D": 128, "k": 10, "metric": "l2"},
    {"B": 1, "Q": 16, "M": 4_000_000, "D": 64, "k": 16, "metric": "l2"},
    {"B": 1, "Q": 4096, "M": 4096, "D": 512, "k": 8, "metric": "l2", "self": True},
    {"B": 1, "Q": 64, "M": 20_000_000, "D": 32, "k": 5, "metric": "l2"},
]
SETS = {"small": SMALL, "headline": [bench.SEARCH, bench.ALL_PAIRS], "all": SMALL + [bench.SEARCH, bench.ALL_PAIRS]}


def _inputs(shape, torch):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(shape["B"], shape["M"], shape["D"], device="cuda", generator=g).to(torch.bfloat16)
    q = x if shape.get("self") else torch.randn(shape["B"], shape["Q"], shape["D"], device="cuda", generator=g).to(torch.bfloat16)
    return q, x


def _calls(shape, q, x, torch):
    """name -> a function running one call (outputs into preallocated tensors where the API allows)."""
    from kernels.knn import api, dispatch

    k, metric = shape["k"], shape.get("metric", "l2")
    out = {}
    if shape.get("self"):
        out["cake"] = lambda: api.knn(x, x, k, metric=metric)
    else:
        index = api.KnnIndex(x, metric=metric)
        out["cake"] = lambda: index.search(q, k)
    try:
        from flashlib.primitives.knn import flash_knn

        if metric == "l2":
            out["flashlib"] = lambda: flash_knn(q, x, k, return_distances=True)
    except ImportError:
        pass
    return out


def _variant_calls(shape, q, x, torch):
    from kernels.knn import api, dispatch

    k, metric = shape["k"], shape.get("metric", "l2")
    db = api.knn_rows.Database(x, api.METRICS[metric])
    db.max_norm()
    dist = torch.empty(shape["B"], shape["Q"], k, device="cuda")
    idx = torch.empty(shape["B"], shape["Q"], k, device="cuda", dtype=torch.int32)
    out = {}
    for name, v in bench.variant_plans(shape).items():
        out[name] = lambda v=v: dispatch.search_into(q, db, k, False, dist, idx, config=v)
    return out


def _measure(fn, torch, flush, reps=15):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    host = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        host.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    cold = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        cold.append(s.elapsed_time(e))
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return {"host_us": statistics.median(host), "cold_ms": statistics.median(cold), "cold_p10_ms": sorted(cold)[reps // 10],
            "back_to_back_ms": s.elapsed_time(e) / reps}


def _kernels(fn, torch):
    """[(kernel name, device us)] of one call (torch.profiler, CUDA activity)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = []
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            out.append((ev.name[:60], round(ev.device_time, 1) if hasattr(ev, "device_time") else round(ev.cuda_time, 1)))
    return out


def main():
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--shapes", default="all", choices=sorted(SETS))
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--build-workers", type=int, default=16)
    args = ap.parse_args()
    shapes = SETS[args.shapes]
    failed = bench.build_all(shapes, args.build_workers, shapes if args.variants else ())
    if failed:
        print("\n".join(failed), file=sys.stderr)
    flush = torch.empty(2 * 60 * 1024 * 1024, dtype=torch.int8, device="cuda")
    rows = []
    for shape in shapes:
        q, x = _inputs(shape, torch)
        calls = _calls(shape, q, x, torch)
        if args.variants:
            calls.update(_variant_calls(shape, q, x, torch))
        row = {"shape": shape, "impls": {}}
        for name, fn in calls.items():
            try:
                entry = _measure(fn, torch, flush)
                if name in ("cake", "flashlib"):
                    entry["kernels"] = _kernels(fn, torch)
            except Exception as e:  # noqa: BLE001  (a variant that fails says why; the others go on)
                entry = {"error": "%s: %s" % (type(e).__name__, str(e)[:500])}
            row["impls"][name] = entry
            print(bench._short(shape), name, {k: v for k, v in entry.items() if k != "kernels"}, file=sys.stderr, flush=True)
        rows.append(row)
        del q, x, calls
        torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    for row in rows:
        print(bench._short(row["shape"]))
        for name, e in row["impls"].items():
            if "error" in e:
                print("  %-28s %s" % (name, e["error"][:150]))
                continue
            print("  %-28s host %7.1f us  cold %.4f ms  b2b %.4f ms" % (name, e["host_us"], e["cold_ms"], e["back_to_back_ms"]))
            for kname, us in e.get("kernels", []):
                print("      %8.1f us  %s" % (us, kname))


if __name__ == "__main__":
    main()
