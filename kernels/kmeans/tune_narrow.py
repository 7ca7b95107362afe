"""Tune the narrow-feature KMeans buckets on the small-D variants, re-time the other entries, profile the worst shape.

Where flashlib stayed ahead (benchmarks/results/kmeans_cover_blocks_h200.json: D <= 32,
K <= 128, millions of points) the family had one 64-point row block per consumer and
centroid tiles of 32, 64 and 128 only; variants.py now adds rows of 2 and 4 row blocks
per consumer and 96-wide centroid tiles on the 16- and 32-wide feature tiles.
One run, in this order:
1. tune: every bucket of the 16- and 32-wide feature tiles with K <= 256 and B*N from
   2^18 to 2^26 (the R6, R7, R5, R4 buckets in that order), at two shapes inside it
   (B = 1, B*N at the bucket's geometric centre, or a quarter of its log range where the
   centre is over bench_dispatch's caps, K at a quarter and at three quarters of the
   bucket's log range: the representative K sits on a tile edge, where half the
   bucket's shapes are not). Candidates: the bucket's entry, and per class of consumers
   and rows (4x1, 4x2, 4x4, 2x2, 2x4) the centroid tile that fits each shape's K best
   (fewest padded centroids, a pass counted as 16 of them). The cost model does not
   prune here: it predicts these shapes as memory-bound and nearly flat across the
   family (0.20-0.29 ms for every d16 variant at B 4 N 3700989 K 100, measured
   0.71-1.07 ms), so it would rank a 16-wide tile first at K = 100. Each candidate is
   timed at both shapes by runtime.timing.time_kernel (cold L2, CUDA events, median of
   TUNE_TIMING, outputs verified). The winner has the smallest geometric mean of its
   times over the fastest at each shape; the entry it replaces stays under "earlier";
2. profile: ncu on the worst shape of the last validation (B 4, N 3700989, K 100, D 16)
   with the earlier winner and the new one, written beside the result;
3. re-time: the winner of every other entry of tuning/h200.json and h200_rest.json at
   its shape, once (the entries were timed before the release fence, CAKE-DATA-011),
   recorded as the entry's "after_fence" until --deadline-s, cheapest first.
The result file is benchmarks/results/kmeans_narrow_h200.json.

    python3 -m kernels.kmeans.tune_narrow --out-dir $OUT [--tune-s 45] [--deadline-s 80] [--buckets D1/K0/R7,...]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

from kernels.kmeans import bench_dispatch, dispatch, variants

DATABASES = ("h200.json", "h200_rest.json")
D_INDICES = (0, 1)  # the 16- and 32-wide feature tiles
K_INDICES = (0, 1, 2, 3)  # K <= 256
R_ORDER = (6, 7, 5, 4)  # B*N buckets, where flashlib came closest first
CLASSES = ((4, 1), (4, 2), (4, 4), (2, 2), (2, 4))  # (consumers, rows)
PASS_COST = 16  # a centroid pass counted as this many padded centroids when fitting a tile to K
WORST = {"B": 4, "N": 3700989, "K": 100, "D": 16}
TUNE_TIMING = dict(warmup=2, reps=5, input_sets=1)  # the tuner's ranking, not a reported figure


def bucket_shapes(di, ki, ri):
    """Two shapes inside bucket (di, ki, ri): B = 1, K at 1/4 and 3/4 of the log range, B*N at the centre, or at
    1/4 of its log range where the centre is over bench_dispatch's caps (those bound the validation's shapes)."""
    k_lo, k_hi = dispatch.DOMAIN.bucket_range("K", ki)
    k_lo = max(k_lo, dispatch.DOMAIN.symbols["K"][0])
    r_lo, r_hi = dispatch.DOMAIN.bucket_range("B*N", ri)
    rep = dispatch.representative(di, ki, ri)
    out = []
    for q in (0.25, 0.75):
        k = max(k_lo, min(k_hi, round(k_lo * (k_hi / k_lo) ** q)))
        shape = dict(rep, K=k)
        if not bench_dispatch.in_caps(shape):
            shape["N"] = round(r_lo * (r_hi / r_lo) ** 0.25)
        if shape not in out:
            out.append(shape)
    return out


def fitted(tiles, k):
    """The centroid tile of `tiles` with the fewest padded centroids at K = k, a pass costing PASS_COST more."""
    return min(tiles, key=lambda t: (-(-k // t) * t + PASS_COST * -(-k // t), -t))


def candidates(incumbent, shapes):
    """The bucket's entry, then per (consumers, rows) class the tile that fits each shape's K best."""
    d = shapes[0]["D"]
    out = [incumbent] if incumbent else []
    for consumers, rows in CLASSES:
        by_tile = {v.block_k: v for v in variants.candidates(d) if (v.consumers, v.rows) == (consumers, rows)}
        for s in shapes:
            v = by_tile[fitted(sorted(by_tile), s["K"])] if by_tile else None
            if v is not None and v not in out:
                out.append(v)
    return out


def plan(dbs, only=None):
    """(key, database name or None, shapes, candidates) per bucket to tune (those of `only` if given), in R_ORDER."""
    out = []
    for ri in R_ORDER:
        for di in D_INDICES:
            for ki in K_INDICES:
                key = "D%d/K%d/R%d" % (di, ki, ri)
                if only and key not in only:
                    continue
                shapes = bucket_shapes(di, ki, ri)
                if not all(bench_dispatch.in_caps(s) for s in shapes):
                    continue
                owner = next((name for name, db in dbs.items() if db.lookup(key)), None)
                incumbent = variants.BY_NAME.get(dbs[owner].lookup(key)) if owner else None
                out.append((key, owner, shapes, candidates(incumbent, shapes)))
    return out


def winner(per_shape):
    """(name, geometric mean of time over the fastest) of the variant best over all shapes it was timed at in full."""
    names = set.intersection(*(set(t) for t in per_shape)) if per_shape else set()
    score = {n: math.exp(sum(math.log(t[n] / min(t.values())) for t in per_shape) / len(per_shape)) for n in names}
    if not score:
        return None, None
    best = min(score, key=lambda n: (score[n], n))
    return best, score


def tune(dbs, items, env, deadline, log):
    import torch

    from runtime.timing import TimingConfig

    rows = []
    for key, owner, shapes, cands in items:
        if time.time() > deadline:
            log("tune: deadline reached after %d of %d buckets" % (len(rows), len(items)))
            break
        per_shape = [bench_dispatch.time_variants(s, cands, env, log, TimingConfig(**TUNE_TIMING)) for s in shapes]
        best, score = winner(per_shape)
        row = {"bucket": key, "database": owner, "shapes": shapes, "times_ms": per_shape, "score": score,
               "earlier": dbs[owner].lookup(key) if owner else None, "variant": best}
        if best:
            name = owner or "h200_rest.json"
            earlier = dbs[name].entries.get(key)
            dbs[name].remember(key, best, shapes[0], {n: math.exp(sum(math.log(t[n]) for t in per_shape) / len(per_shape))
                                                      for n in score},
                               "runtime timer (tune_narrow): geometric mean over the entry's shapes of the small-D "
                               "candidates and the earlier winner")
            dbs[name].entries[key]["shapes"] = shapes
            dbs[name].entries[key]["times_ms_by_shape"] = per_shape
            if earlier:
                dbs[name].entries[key]["earlier"] = earlier
            if row["earlier"] in score:
                row["speedup_over_earlier"] = score[row["earlier"]] / score[best]
        rows.append(row)
        log("tune %s -> %s (was %s, x%.2f) %s" % (key, best, row["earlier"], row.get("speedup_over_earlier", 0),
                                                 {n: round(s, 3) for n, s in sorted((score or {}).items(), key=lambda x: x[1])[:4]}))
        torch.cuda.empty_cache()
    return rows


def retime(dbs, skip, env, deadline, log):
    """Each other entry's winner once at its shape (after the release fence), until `deadline`."""
    from runtime.timing import TimingConfig

    done = planned = 0
    for name, db in dbs.items():
        for key, entry in sorted(db.entries.items(), key=lambda kv: min((kv[1].get("times_ms") or {"": 0}).values())):
            v = variants.BY_NAME.get(entry.get("variant"))
            if key in skip or v is None:
                continue
            planned += 1
            if time.time() > deadline:
                continue
            shape = {s: entry["shape"][s] for s in ("B", "N", "K", "D")}
            times = bench_dispatch.time_variants(shape, [v], env, log, TimingConfig(**TUNE_TIMING))
            if v.name in times:
                entry["after_fence"] = {"median_ms": times[v.name], "date": env["date"], "commit": env.get("cake_commit"),
                                        "before_ms": (entry.get("times_ms") or {}).get(v.name)}
                done += 1
    log("re-timed %d of %d entries after the fence" % (done, planned))
    return {"retimed": done, "planned": planned}


def profile(out_dir, names, timeout):
    """ncu's speed-of-light and warp-state sections of `names` at WORST (a subprocess, cut at `timeout`)."""
    report = os.path.join(out_dir, "kmeans_narrow_ncu.txt")
    cmd = ["ncu", "-k", "regex:kmeans_assign", "-c", str(len(names)), "--section", "SpeedOfLight", "--section",
           "WarpStateStats", "--section", "MemoryWorkloadAnalysis",
           sys.executable, "-m", "kernels.kmeans.tune_narrow", "--launch"] + names
    try:
        with open(report, "w") as f:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        with open(report, "a") as f:
            f.write("\nprofile stopped: %s\n" % e)
    return report


def launch_once(names):
    """One launch of each named variant at WORST (what ncu profiles)."""
    import torch

    from kernels.kmeans import api

    x = torch.randn(WORST["B"], WORST["N"], WORST["D"], device="cuda").to(torch.bfloat16)
    c = torch.randn(WORST["B"], WORST["K"], WORST["D"], device="cuda").to(torch.bfloat16)
    for name in names:
        api.kmeans_assign(x, c, config=name)
    torch.cuda.synchronize()


def session(out_dir, log_name, t_start):
    """(log, machine record, {name: TuningDB} of DATABASES) for a tuning run writing under `out_dir`: what
    every tune_* script starts from."""
    from runtime.environment import machine_record
    from runtime.tuning_db import TuningDB

    os.makedirs(out_dir, exist_ok=True)
    log = bench_dispatch.run_log(os.path.join(out_dir, log_name), t_start)
    return log, machine_record(), {name: TuningDB.load(os.path.join(dispatch.TUNING_DIR, name)) for name in DATABASES}


def finish(args, dbs, env, t_start, items, tuned, log, by, how, out_name, result_how=None, made=None, summary=None):
    """End a tuning run: note it (`by`, `how`, and `made`) in every database's history, save them under
    args.out_dir (and into kernels/kmeans/tuning with args.install), and write `out_name`: the machine, how
    (`result_how`, else `how`), a summary (with `summary` added) and the tuned rows."""
    for name, db in dbs.items():
        db.made.setdefault("later", []).append(
            {"by": by, "how": how, "date": env["date"], "commit": env.get("cake_commit"), "buckets_tuned": len(tuned),
             **(made or {})})
        db.save(os.path.join(args.out_dir, name))
        if args.install:
            db.save(os.path.join(dispatch.TUNING_DIR, name))
    gains = [r["speedup_over_earlier"] for r in tuned if "speedup_over_earlier" in r]
    result = {"machine": env, "how": result_how or how,
              "summary": {"buckets_planned": len(items), "buckets_tuned": len(tuned),
                          "entries_changed": sum(r["variant"] != r["earlier"] for r in tuned if r["variant"]),
                          "geomean_speedup_over_earlier_winner": bench_dispatch.geomean(gains), **(summary or {}),
                          "script_s": time.time() - t_start},
              "tune": tuned}
    with open(os.path.join(args.out_dir, out_name), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    log(json.dumps(result["summary"]))


def main():
    if sys.argv[1:2] == ["--launch"]:
        return launch_once(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--tune-s", type=float, default=45.0)
    ap.add_argument("--deadline-s", type=float, default=80.0)
    ap.add_argument("--profile-s", type=float, default=20.0, help="0: no profile")
    ap.add_argument("--buckets", default="", help="comma-separated keys: tune only these")
    ap.add_argument("--no-retime", action="store_true")
    ap.add_argument("--install", action="store_true", help="also write the databases into kernels/kmeans/tuning")
    args = ap.parse_args()
    t_start = time.time()
    log, env, dbs = session(args.out_dir, "kmeans_narrow.log", t_start)
    items = plan(dbs, set(filter(None, args.buckets.split(","))))
    log("%d buckets to tune, %d timings planned" % (len(items), sum(len(i[2]) * len(i[3]) for i in items)))
    tuned = tune(dbs, items, env, t_start + args.tune_s, log)
    t_tuned = time.time()
    worst = dispatch.bucket_key(WORST["B"], WORST["N"], WORST["K"], WORST["D"])
    row = next((r for r in tuned if r["bucket"] == worst), None)
    names = [n for n in ((row or {}).get("earlier"), (row or {}).get("variant")) if n]
    report = profile(args.out_dir, list(dict.fromkeys(names)), args.profile_s) if names and args.profile_s > 0 else None
    log("profiled %s" % (names if report else None))
    retimed = {} if args.no_retime else retime(dbs, {r["bucket"] for r in tuned}, env, t_start + args.deadline_s, log)
    finish(args, dbs, env, t_start, items, tuned, log, "kernels/kmeans/tune_narrow.py",
           __doc__.split("1. ")[1].split("The result")[0].strip(), "kmeans_narrow_h200.json",
           result_how=__doc__.split("One run, in this order:")[1].split("The result")[0].strip(), made=retimed,
           summary=dict(retimed, tune_s=t_tuned - t_start, profile=os.path.basename(report) if report else None))


if __name__ == "__main__":
    main()
