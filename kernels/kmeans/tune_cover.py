"""Time the consumer counts the KMeans tunings never tried, and re-measure the shapes where flashlib won.

bench_dispatch and tune_rest timed, per bucket, the cost model's first choices. The cost
model ranks the consumer count (warpgroups of 64 points per block) poorly where the
epilogue is short: in the small-D, small-K buckets it never offered four consumers, and
there the tuned kernels were slower than flashlib on 29 of 416 validation shapes. One
run, in this order:
1. cover: for every entry of tuning/h200.json and tuning/h200_rest.json whose winner takes
   at least --min-ms and whose timed candidates lack a consumer count, time at the
   entry's shape, in the same run, its winner and, for each missing count, the winner
   with that count (else the cost model's best with it on the same feature tile):
   runtime.timing.time_kernel (cold L2, CUDA events, median, outputs verified), narrow
   features first, until --cover-s. The entry becomes this run's fastest, with this
   run's times; the entry it replaces is kept under "earlier";
2. validate: the shapes of the earlier results (RESULTS; a shape's latest figure counts)
   where flashlib was faster, then the others whose bucket's entry changed, each checked
   by the runtime's oracle (normal and clustered inputs) and then timed beside flashlib
   0.4.0 (bench_dispatch.measure), until --deadline-s.
The result file is benchmarks/results/kmeans_cover_h200.json (bench_dispatch's layout).
kmeans_cover_blocks_h200.json is a later run of it over a family with 2-4 blocks per SM
for narrow tiles (07755b2), kept for its figures: those variants lost at every entry and
were removed.

    python3 -m kernels.kmeans.tune_cover --out $OUT/kmeans_cover_h200.json --db-dir $OUT/tuning
"""

import argparse
import json
import os
import time

from kernels.kmeans import bench_dispatch, dispatch, tune_rest, variants

DATABASES = ("h200.json", "h200_rest.json")
RESULTS = ("kmeans_dispatch_first_h200.json", "kmeans_rest_h200.json", "kmeans_cover_h200.json",
           "kmeans_cover_blocks_h200.json")  # oldest first
RESULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(dispatch.HERE)), "benchmarks", "results")


def consumers_of(name):
    v = variants.BY_NAME.get(name)
    return v.consumers if v else None


def along_consumers(winner, consumers, shape):
    """The winner with another consumer count (one parameter moved), else the cost model's best with that count."""
    v = variants.make(winner.d, winner.block_k, consumers)
    if v in variants.VARIANTS:
        return v
    return next((v for v in variants.rank(shape) if v.d == winner.d and v.consumers == consumers), None)


def tried(entry):
    """Every variant name an entry's tunings timed: its own times and those of the entries it replaced."""
    names = set()
    while entry:
        names |= set(entry.get("times_ms") or {})
        entry = entry.get("earlier")
    return names


def cover_plan(dbs, min_ms):
    """(database name, key, shape, candidates) for each entry whose timed candidates miss a consumer count."""
    out = []
    for name, db in dbs.items():
        for key, entry in sorted(db.entries.items()):
            times = entry.get("times_ms") or {}
            winner = variants.BY_NAME.get(entry.get("variant"))
            if winner is None or not times or min(times.values()) < min_ms:
                continue
            missing = set(variants.CONSUMERS) - {consumers_of(n) for n in tried(entry)}
            if not missing:
                continue
            shape = {s: entry["shape"][s] for s in ("B", "N", "K", "D")}
            cands = [winner] + [v for v in (along_consumers(winner, c, shape) for c in sorted(missing)) if v]
            if len(cands) > 1:
                out.append((name, key, shape, cands))
    # Narrow features first: that is where flashlib won (a run that stops early has covered those).
    return sorted(out, key=lambda item: (item[3][0].d, item[2]["K"], item[2]["B"] * item[2]["N"]))


def cover(dbs, plan, env, deadline, log):
    """Each planned entry re-timed with its missing consumer counts, until `deadline`; rows of what was timed."""
    import torch

    rows = []
    for name, key, shape, cands in plan:
        if time.time() > deadline:
            log("cover: deadline reached after %d of %d entries; the others keep their entries" % (len(rows), len(plan)))
            break
        times = bench_dispatch.time_variants(shape, cands, env, log)
        row = {"database": name, "bucket": key, "shape": shape, "times_ms": times, "earlier": dbs[name].entries[key]["variant"]}
        if times:
            best = min(times, key=times.get)
            earlier = dbs[name].entries[key]
            dbs[name].remember(key, best, shape, times, "runtime timer (tune_cover): the earlier winner, and the winner "
                               "with each consumer count the earlier tuning left untried")
            dbs[name].entries[key]["earlier"] = earlier
            row["variant"] = best
            if earlier["variant"] in times:
                row["speedup_over_earlier"] = times[earlier["variant"]] / times[best]
        rows.append(row)
        log("cover %s %s -> %s %s" % (name, key, row.get("variant"), {k: round(v, 4) for k, v in times.items()}))
        torch.cuda.empty_cache()
    return rows


def validation_shapes(buckets):
    """The shapes of the earlier results whose latest figure has flashlib faster, then the others in `buckets`.

    Each shape's latest figure counts: a later file of RESULTS re-measured it."""
    latest = {}
    for f in RESULTS:
        with open(os.path.join(RESULTS_DIR, f)) as fh:
            rows = json.load(fh)["assign"]
        for r in rows:
            if not str(r.get("set", "kernel")).startswith("kernel") or "speedup_vs_flashlib" not in r:
                continue
            s = dict(r["shape"])
            latest[tuple(sorted(s.items()))] = (s, {"file": f, "speedup_vs_flashlib": r["speedup_vs_flashlib"],
                                                    "variant": r.get("variant")})
    slow = [item for item in latest.values() if item[1]["speedup_vs_flashlib"] < 1.0]
    others = [item for item in latest.values() if item[1]["speedup_vs_flashlib"] >= 1.0
              and dispatch.bucket_key(item[0]["B"], item[0]["N"], item[0]["K"], dispatch.kernel_d(item[0]["D"])) in buckets]
    return slow + others


def validate(shapes, env, deadline, log):
    import torch

    fns = bench_dispatch.impls()
    rows = []
    for shape, earlier in shapes:
        if time.time() > deadline:
            log("validate: deadline reached after %d of %d shapes" % (len(rows), len(shapes)))
            break
        row = bench_dispatch.measure(shape, fns, env)
        row.update(dispatch.explain(shape))
        row.update(bucket=dispatch.bucket_key(shape["B"], shape["N"], shape["K"], dispatch.kernel_d(shape["D"])),
                   set="kernel path, untuned", flops=bench_dispatch.flops(shape), earlier=earlier)
        rows.append(row)
        log("validate %s %s x%.2f (was x%.2f)" % (shape, row.get("variant"), row.get("speedup_vs_flashlib") or 0,
                                                  earlier["speedup_vs_flashlib"]))
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--db-dir", required=True, help="where the updated databases are written (and used from)")
    ap.add_argument("--min-ms", type=float, default=0.05)
    ap.add_argument("--cover-s", type=float, default=120.0, help="time for step 1 after the compiles")
    ap.add_argument("--deadline-s", type=float, default=250.0, help="time for the whole run")
    args = ap.parse_args()

    from runtime.environment import machine_record
    from runtime.tuning_db import TuningDB

    t_start = time.time()
    env = machine_record()

    def log(msg):
        print("[%6.1fs] %s" % (time.time() - t_start, msg), flush=True)

    dbs = {name: TuningDB.load(os.path.join(dispatch.TUNING_DIR, name)) for name in DATABASES}
    plan = cover_plan(dbs, args.min_ms)
    log("%d entries to cover" % len(plan))
    # flashlib's Triton kernels compile once per shape: in worker processes while step 1 runs.
    pool, _ = bench_dispatch.start_flashlib_compiles([s for s, _ in validation_shapes({key for _, key, _, _ in plan})], 12)
    env["toolchain"] = " | ".join(sorted(tune_rest.compile_all({(v, dt) for _, _, _, cands in plan
                                                               for v in cands for dt in variants.DTYPES})))
    t_compiled = time.time()
    tuned = cover(dbs, plan, env, t_compiled + args.cover_s, log)
    os.makedirs(args.db_dir, exist_ok=True)
    for name, db in dbs.items():
        db.save(os.path.join(args.db_dir, name))
        db.save(os.path.join(dispatch.TUNING_DIR, name))  # the dispatcher validated below reads these
    dispatch._pickers.clear()
    dispatch._states.clear()
    t_tuned = time.time()
    changed = {r["bucket"] for r in tuned if r.get("variant") and r["variant"] != r["earlier"]}
    shapes = validation_shapes(changed)
    pool.terminate()
    checked = validate(shapes, env, t_start + args.deadline_s, log)
    gains = [r["speedup_over_earlier"] for r in tuned if "speedup_over_earlier" in r]
    result = {
        "machine": env,
        "how": {"cover": __doc__.split("1. ")[1].split("2. ")[0].strip(),
                "validation": __doc__.split("2. ")[1].split("The result")[0].strip(), "min_ms": args.min_ms},
        "summary": {"entries_covered": len(tuned), "entries_changed": len(changed),
                    "geomean_speedup_over_earlier_winner": bench_dispatch.geomean(gains),
                    "entries_planned": len(plan), "shapes_planned": len(shapes), "shapes_validated": len(checked),
                    "previously_below_1x": sum(e["speedup_vs_flashlib"] < 1.0 for _, e in shapes),
                    "previously_below_1x_now_below_1x": sum(r["speedup_vs_flashlib"] < 1.0 for r in checked
                                                            if "speedup_vs_flashlib" in r and r["earlier"]["speedup_vs_flashlib"] < 1.0),
                    **bench_dispatch.versus_flashlib([r for r in checked if "speedup_vs_flashlib" in r], checked),
                    "compile_s": t_compiled - t_start, "cover_s": t_tuned - t_compiled, "script_s": time.time() - t_start},
        "cover": tuned,
        "assign": checked,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    log(json.dumps(result["summary"]))


if __name__ == "__main__":
    main()
