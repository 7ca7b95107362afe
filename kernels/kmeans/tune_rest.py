"""Tune the KMeans buckets the first tuning run left, and measure the rule that stands in for them.

bench_dispatch tuned the buckets of domain.json whose representative shape is under its
work cap, until its time budget ended (kernels/kmeans/tuning/h200.json). For the others
the dispatcher takes the winner of the bucket one B*N step smaller, else one larger
(dispatch.neighbour_keys), else the cost model's first choice. One run, in this order:
1. tune: every bucket without an entry whose representative (dispatch.representative)
   takes at most --max-ms at our rate. Candidates: the cost model's first choice, each
   neighbour's winner, then the cost model's next ones up to 3; each timed by
   runtime.timing.time_kernel (cold L2, CUDA events, median, outputs verified); the
   fastest verified one is the bucket's entry in the database written to --db
   (tuning/h200_rest.json). Each row keeps which candidate the neighbour rule and the
   cost model would have run, so the rule is measured on every bucket tuned here;
2. validate: at a second shape inside each tuned bucket (B = 2, B*N at the bucket's
   lower third, K and D off the tiles: never the tuning shape), the new entry against
   flashlib 0.4.0's euclid_assign_triton, each checked by the runtime's oracle (normal
   and clustered inputs) before timing (bench_dispatch.measure), until --deadline-s.
Kernels are compiled first, all at once. The result file is
benchmarks/results/kmeans_rest_h200.json (bench_dispatch's layout).

    python3 -m kernels.kmeans.tune_rest --out $OUT/kmeans_rest_h200.json --db $OUT/h200_rest.json
"""

import argparse
import concurrent.futures
import json
import time

from kernels.kmeans import bench_dispatch, dispatch, variants

OUR_RATE_FLOPS_PER_MS = 5e11  # what the kernels reach at large shapes: skips buckets past --max-ms
CANDIDATES = 3


def untuned_buckets(picker, max_ms, buckets=None):
    """(key, representative, candidate variants, neighbour rule's variant, cost model's variant) per untuned bucket
    of `buckets` ((key, representative) pairs; default every kernel-path bucket)."""
    out = []
    for key, shape in dispatch.kernel_buckets() if buckets is None else buckets:
        if any(db.lookup(key) for db in picker.dbs):
            continue
        if bench_dispatch.flops(shape) / OUR_RATE_FLOPS_PER_MS > max_ms:
            continue
        ranked = variants.rank(shape)
        cost_model = variants.BY_NAME.get(picker.plan.get(key)) or ranked[0]
        rule, how = picker.pick(shape["B"], shape["N"], shape["K"], shape["D"])
        neighbours = [picker.measured(k, shape["D"]) for k in dispatch.neighbour_keys(shape["B"], shape["N"], shape["K"], shape["D"])]
        cands = [cost_model]
        for v in [n[0] for n in neighbours if n] + ranked:
            if len(cands) >= CANDIDATES:
                break
            if v not in cands:
                cands.append(v)
        out.append((key, shape, cands, rule if how.startswith("tuned neighbour") else None, cost_model))
    return out


def second_shape(key, shape):
    """A shape inside the same bucket, off the representative: B = 2, B*N at the lower third, K and D not on a tile."""
    di, ki, ri = (int(part[1:]) for part in key.split("/"))
    r_lo, r_hi = dispatch.DOMAIN.bucket_range("B*N", ri)
    k_lo, k_hi = dispatch.DOMAIN.bucket_range("K", ki)
    d = shape["D"] - 8 if shape["D"] > 16 else shape["D"]
    s = {"B": 2, "N": max(1024, int(r_lo ** (2 / 3) * r_hi ** (1 / 3)) // 2), "K": max(k_lo, min(k_hi, shape["K"] * 3 // 4 | 1)), "D": d}
    return s if dispatch.bucket_key(s["B"], s["N"], s["K"], dispatch.kernel_d(s["D"])) == key else None


def compile_all(kernels):
    """Build every (variant, dtype) kernel at once (nvcc in parallel), so no timing waits on a compile.

    Returns the toolchains the kernels were built with (what the database is keyed by)."""
    from compiler.build import prebuilt

    def one(pair):
        v, dt = pair
        try:
            return prebuilt.load(v.kernel(dt), what="kmeans assign %s %s" % (v.name, dt)).toolchain
        except Exception as e:  # noqa: BLE001  (the timing meets the same error and records it)
            print("compile %s: %s" % (v.name, e), flush=True)
            return None

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        return {t for t in pool.map(one, sorted(kernels, key=lambda p: (p[0].name, p[1]))) if t}


def tune(plan, env, toolchain, log):
    """(database, rows): the fastest verified candidate per bucket, and every candidate's time."""
    import torch

    from runtime.tuning_db import TuningDB

    db = TuningDB(dispatch.DOMAIN.op, torch.cuda.get_device_name(0), toolchain,
                  made={"by": "kernels/kmeans/tune_rest.py (tune)", "how": __doc__.split("1. ")[1].split("2. ")[0].strip(),
                        "date": env["date"], "commit": env["cake_commit"]})
    rows = []
    for key, shape, cands, rule, cost_model in plan:
        times = bench_dispatch.time_variants(shape, cands, env, log)
        row = {"bucket": key, "shape": shape, "times_ms": times, "cost_model_variant": cost_model.name,
               "neighbour_rule_variant": rule.name if rule else None}
        if times:
            best = min(times, key=times.get)
            db.remember(key, best, shape, times, "runtime timer: the cost model's first, the neighbours' winners, the cost model's next")
            row["variant"] = best
            if rule is not None and rule.name in times and cost_model.name in times:
                row["neighbour_over_cost_model"] = times[cost_model.name] / times[rule.name]
        rows.append(row)
        log("tune %s -> %s %s" % (key, row.get("variant"), {k: round(v, 4) for k, v in times.items()}))
        torch.cuda.empty_cache()
    return db, rows


def validate(db, plan, env, deadline, log):
    """Rows of bench_dispatch's layout: each tuned bucket's entry beside flashlib at a second shape."""
    import torch

    flashlib = bench_dispatch.impls()["flashlib"]
    rows = []
    for key, shape, _, _, _ in plan:
        s = second_shape(key, shape)
        v = variants.BY_NAME.get(db.lookup(key))
        if s is None or v is None:
            continue
        if time.time() > deadline:
            log("validate: deadline reached")
            break
        impls = {"cake": bench_dispatch.forced(v), "flashlib": flashlib}
        row = bench_dispatch.measure(dict(s, dtype="bf16"), impls, env)
        row.update(bucket=key, variant=v.name, how="tuned (h200_rest.json)", set="kernel path, untuned",
                   flops=bench_dispatch.flops(s))
        rows.append(row)
        log("validate %s %s x%.2f" % (key, s, row.get("speedup_vs_flashlib") or 0))
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--max-ms", type=float, default=6.0)
    ap.add_argument("--deadline-s", type=float, default=170.0)
    args = ap.parse_args()

    from runtime.environment import machine_record

    t_start = time.time()
    deadline = t_start + args.deadline_s
    env = machine_record()

    def log(msg):
        print("[%6.1fs] %s" % (time.time() - t_start, msg), flush=True)

    plan = untuned_buckets(dispatch.picker(0), args.max_ms)
    log("%d untuned buckets under %.1f ms" % (len(plan), args.max_ms))
    toolchains = compile_all({(v, "bf16") for _, _, cands, _, _ in plan for v in cands})
    t_compiled = time.time()
    db, tuned = tune(plan, env, " | ".join(sorted(toolchains)), log)
    db.save(args.db)
    t_tuned = time.time()
    checked = validate(db, plan, env, deadline, log)
    ratios = [r["neighbour_over_cost_model"] for r in tuned if "neighbour_over_cost_model" in r]
    result = {
        "machine": env,
        "how": {"tuning": db.made["how"], "validation": __doc__.split("2. ")[1].split("Kernels are")[0].strip(),
                "max_ms": args.max_ms, "our_rate_flops_per_ms": OUR_RATE_FLOPS_PER_MS},
        "summary": {"buckets_tuned": len(db.entries), "buckets_planned": len(plan),
                    "neighbour_rule_measured": len(ratios),
                    "geomean_neighbour_over_cost_model": bench_dispatch.geomean(ratios),
                    "neighbour_faster": sum(x > 1 for x in ratios), "neighbour_slower": sum(x < 1 for x in ratios),
                    "shapes_validated": len(checked),
                    **bench_dispatch.versus_flashlib([r for r in checked if "speedup_vs_flashlib" in r], checked),
                    "compile_s": t_compiled - t_start, "tune_s": t_tuned - t_compiled, "script_s": time.time() - t_start},
        "tuning": tuned,
        "assign": checked,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    log(json.dumps(result["summary"]))


if __name__ == "__main__":
    main()
