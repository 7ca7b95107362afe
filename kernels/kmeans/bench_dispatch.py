"""Tune the KMeans dispatcher on the GPU, then validate it beside flashlib on shapes the tuning never saw.

One run, in this order:
1. tune: for every bucket of domain.json (D tile x K x B*N) whose representative shape
   is under the work cap, time the cost model's top candidates with the runtime's timer
   (cold L2, CUDA events, median; the timed outputs verified) and keep the fastest:
   the tuning database (--db, kernels/kmeans/tuning/h200.json's layout);
2. validate: shapes drawn from the domain (log-uniform per symbol, seeded, under the
   work cap, none of them a tuning shape), each checked by the runtime's oracle
   (normal and clustered inputs) and then timed, ours through kmeans_assign's dispatcher
   and flashlib 0.4.0's `euclid_assign_triton(x, c, out=labels)` as its users call it
   by default (use_heuristic=True: its H200 table picks the config, no autotune; it
   computes c_sq on every call). Its Triton kernels take N, K and D as constexprs, so
   each new shape compiles once: worker processes compile them ahead (compile-only
   launches) while step 1 runs, and no compile time is in any figure. Where the picker
   took another of a bucket entry's candidates than its winner (dispatch.fit), the
   winner is timed beside it (`bucket_winner`: what the refit gained or lost);
3. host cost: 1,000 back-to-back calls at a tiny shape, host clock, ours and flashlib's (the median of five
   such batches), and the parts of ours: the picker, the labels' allocation, the driver launch.
Rows are appended to --out as they finish (JSON lines) and gathered into the result
file (benchmarks/results/kmeans_dispatch_h200.json's layout) at the end or the deadline.
With --tune-s 0 step 1 is skipped and the committed databases (tuning/*.json) are
validated; no shape any of their entries was timed at (nor any bucket's representative)
is drawn. The shapes whose D is off the aligned tiles go first: four fixed ones (D % 8 != 0, D > 256:
"fallback paths", the torch reference's before the wide tiles) and --off-tile more drawn from the domain with D
as drawn where D % 8 != 0 or D > 256 (seed 31, "off-tile D, drawn"); the summary counts every set. --compile-only only
compiles flashlib's kernels for the shapes (its Triton cache then holds them) and exits:
a run can do that beside the GPU tests.

    python3 -m kernels.kmeans.bench_dispatch --out-dir $OUT [--shapes 440] [--deadline-s 170] [--tune-s 0]

--shapes 0 measures the off-tile sets only; --merge BASE NEWER [--changed-only] (no GPU) writes BASE's result with
the rows NEWER re-measured replaced (only those whose pick changed), each row naming the run (commit, date) that
measured it, and the summary over all of them.
"""

import argparse
import json
import math
import multiprocessing
import os
import random
import re
import sys
import time

WORK_CAP_FLOPS = 4e11  # 2 B N K D: about 0.7 ms at our rate; keeps 440 shapes inside the device budget
BYTES_CAP = 2 << 30  # points and centroids: 2 GiB
SEED = 16


def flops(s):
    return 2.0 * s["B"] * s["N"] * s["K"] * s["D"]


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def versus_flashlib(compared, checked, names=("cake", "flashlib")):
    """The summary a validation against flashlib reports: over the `compared` rows their speedups' geometric
    mean, minimum and count below 1.0x; over the `checked` rows, per implementation, how many failed its check."""
    speedups = [r["speedup_vs_flashlib"] for r in compared]
    return {"geomean_speedup_vs_flashlib": geomean(speedups),
            "min_speedup_vs_flashlib": min(speedups) if speedups else None,
            "below_1x": sum(x < 1.0 for x in speedups),
            "checks_failed": {n: sum(not r["impls"].get(n, {}).get("check", {}).get("passed") for r in checked)
                              for n in names}}


def in_caps(s):
    return flops(s) <= WORK_CAP_FLOPS and 2 * s["B"] * (s["N"] + s["K"]) * s["D"] <= BYTES_CAP


def tuning_plan():
    """The buckets tuned on the GPU: (key, representative shape) for those under the caps."""
    from kernels.kmeans import dispatch

    return [(key, shape) for key, shape in dispatch.kernel_buckets() if in_caps(shape)]


def database_shapes():
    """Every shape an entry of the committed tuning databases was timed at (its shape and any others it lists)."""
    from kernels.kmeans import dispatch

    out = []
    for f in sorted(os.listdir(dispatch.TUNING_DIR)):
        path = os.path.join(dispatch.TUNING_DIR, f)
        if not f.endswith(".json") or path == dispatch.CANDIDATES:
            continue
        with open(path) as fh:
            for entry in json.load(fh)["entries"].values():
                for s in [entry["shape"]] + list(entry.get("shapes", ())):
                    out.append((None, {k: s[k] for k in ("B", "N", "K", "D")}))
    return out


def validation_shapes(count, tuned):
    """`count` kernel-path shapes (D a multiple of 8 up to 256) from the domain, none of them a tuning shape
    (`tuned`: (key, shape) pairs)."""
    from kernels.kmeans import dispatch

    rng = random.Random(SEED)
    seen = {tuple(sorted((k, v) for k, v in s.items() if k != "dtype")) for _, s in tuned}

    def accept(s):
        return s["D"] % 8 == 0 and s["D"] <= 256 and in_caps(s) and tuple(sorted((k, v) for k, v in s.items() if k != "dtype")) not in seen

    dom = dispatch.DOMAIN
    shapes = []
    while len(shapes) < count:
        (s,) = dom.sample(rng, 1, accept=lambda s: accept(dict(s, D=-(-s["D"] // 8) * 8)))
        s["D"] = -(-s["D"] // 8) * 8
        shapes.append(s)
    return shapes


def fallback_shapes():
    """Shapes off the aligned kernel path of the first runs: D % 8 != 0 (zero-padded copies) and D > 256 (the wide
    feature tiles since; the torch reference before)."""
    return [{"B": 1, "N": 100000, "K": 100, "D": 3, "dtype": "bf16"}, {"B": 4, "N": 50000, "K": 64, "D": 100, "dtype": "bf16"},
            {"B": 1, "N": 200000, "K": 256, "D": 300, "dtype": "bf16"}, {"B": 1, "N": 100000, "K": 100, "D": 768, "dtype": "f16"}]


OFF_TILE_SEED = 31


def off_tile_shapes(count, tuned):
    """`count` shapes from the domain with D as drawn where it is not a multiple of 8 or above 256 (what
    validation_shapes rounds or leaves out), under the caps and none a tuning shape; their own seed."""
    from kernels.kmeans import dispatch

    rng = random.Random(OFF_TILE_SEED)
    seen = {tuple(sorted((k, v) for k, v in s.items() if k != "dtype")) for _, s in tuned}

    def accept(s):
        return (s["D"] % 8 or s["D"] > 256) and in_caps(s) and \
            tuple(sorted((k, v) for k, v in s.items() if k != "dtype")) not in seen

    return [dispatch.DOMAIN.sample(rng, 1, accept=accept)[0] for _ in range(count)]


def _flashlib_compile(shapes):
    """Worker: compile flashlib's kernels for `shapes` without launching them (its wrapper's own arguments)."""
    import torch
    import triton.runtime.jit as jit

    def compile_only(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=True, **kwargs)

    jit.JITFunction.__getitem__ = compile_only
    from flashlib.primitives.kmeans.triton.assign import euclid_assign_triton

    done = 0
    for s in shapes:
        dt = getattr(torch, {"bf16": "bfloat16", "f16": "float16"}[s["dtype"]])
        x = torch.empty((s["B"], s["N"], s["D"]), dtype=dt, device="cuda")
        c = torch.empty((s["B"], s["K"], s["D"]), dtype=dt, device="cuda")
        out = torch.empty((s["B"], s["N"]), dtype=torch.int32, device="cuda")
        try:
            euclid_assign_triton(x, c, out=out)
            done += 1
        except Exception as e:  # noqa: BLE001  (the main process meets the same error and records it)
            print("flashlib compile %s: %s" % (s, e), file=sys.stderr)
        del x, c, out
        torch.cuda.empty_cache()  # twelve workers' cached blocks left the oracle 21 of 140 GiB (B 118 K 79992)
    return done


def start_flashlib_compiles(shapes, workers):
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(workers)
    chunks = [shapes[i::workers] for i in range(workers)]
    return pool, pool.map_async(_flashlib_compile, chunks)


def timing_config(shape):
    """Fewer reps (and one input set) as a shape's work grows: its spread shrinks, and its inputs and reference
    dominate the time a shape takes (the validation's throughput)."""
    from runtime.timing import TimingConfig

    f = flops(shape)
    if f < 2e9:
        return TimingConfig(warmup=3, reps=15, input_sets=2)
    if f < 5e10:
        return TimingConfig(warmup=2, reps=8, input_sets=2)
    return TimingConfig(warmup=2, reps=5, input_sets=1)


def write_candidates(path=None, top=3, missing_only=False):
    """Every kernel-path bucket's cost-model ranking at its representative shape (made on CPU, committed);
    `missing_only`: only the buckets the file lacks (new feature tiles), the others kept as they were ranked."""
    from kernels.kmeans import dispatch, variants

    path = path or dispatch.CANDIDATES
    plan = {}
    if missing_only:
        with open(path) as f:
            plan = json.load(f)["buckets"]
    for key, shape in dispatch.kernel_buckets():
        if key in plan:
            continue
        ranked = variants.rank(shape)
        plan[key] = {"shape": shape, "top": [v.name for v in ranked[:top]], "tuned_on_gpu": in_caps(shape),
                     "predicted_us": {v.name: round(variants.predicted_seconds(v, shape) * 1e6, 2) for v in ranked}}
    plan = {key: plan[key] for key, _ in dispatch.kernel_buckets()}
    with open(path, "w") as f:
        json.dump({"how": "compiler.analysis cost model (calibration.json, device sm_90a/H200) at each bucket's "
                          "representative shape (dispatch.representative), every admissible variant ranked; the "
                          "tuner times the top %d where tuned_on_gpu, the dispatcher takes the first elsewhere" % top,
                   "buckets": plan}, f, indent=1)
        f.write("\n")


def forced(variant):
    """A launch of kmeans_assign with `variant` forced (config=), in the runtime timer's signature."""
    from kernels.kmeans import api

    return lambda outputs, inputs: api.assign_into(inputs[0], inputs[1], outputs[0], config=variant.name)


def time_variants(shape, candidates, env, log, config=None):
    """{variant name: median ms} of each of `candidates` at `shape` whose timed outputs verified (the runtime's
    timer: cold L2, CUDA events; `config`, else timing_config(shape)); a variant that fails is logged and left out."""
    from kernels.kmeans.contract import assign_contract
    from runtime.timing import time_kernel

    contract = assign_contract([shape])
    times = {}
    for v in candidates:
        try:
            t = time_kernel(contract, forced(v), config or timing_config(shape), environment_record=env)
        except Exception as e:  # noqa: BLE001  (one variant's failure costs only its entry)
            log("tune %s %s: %s" % (shape, v.name, e))
            continue
        if t.verified:
            times[v.name] = t.median_ms
    return times


def tune(env, deadline, log):
    """The tuning database: per bucket, the fastest of the cost model's top 3 by the runtime's timer."""
    import torch

    from kernels.kmeans import dispatch, variants
    from runtime.tuning_db import TuningDB

    db = TuningDB(dispatch.DOMAIN.op, torch.cuda.get_device_name(0), dispatch.toolchain() or "",
                  made={"by": "kernels/kmeans/bench_dispatch.py (tune)",
                        "how": "per bucket of domain.json: the representative shape (B=1, N and K at the geometric centre "
                               "of the bucket, D at the tile), the cost model's top 3 admissible variants, each timed "
                               "by runtime.timing.time_kernel (cold L2, CUDA events, median, outputs verified); the "
                               "fastest verified one wins. Buckets whose representative is above %.0e flops keep the "
                               "cost model's choice." % WORK_CAP_FLOPS,
                        "date": env["date"], "commit": env["cake_commit"]})
    with open(dispatch.CANDIDATES) as f:
        plan = json.load(f)["buckets"]
    for key, item in plan.items():
        shape = item["shape"]
        if not item["tuned_on_gpu"]:
            continue
        if time.time() > deadline:
            log("tune: deadline reached; remaining buckets keep the cost model's choice")
            break
        times = time_variants(shape, [variants.BY_NAME[name] for name in item["top"]], env, log)
        if times:
            best = min(times, key=times.get)
            db.remember(key, best, shape, times, "runtime timer, top 3 by the cost model")
            log("tune %s -> %s %s" % (key, best, {k: round(v, 4) for k, v in times.items()}))
    return db


def measure(shape, impls, env):
    import dataclasses

    import torch

    from kernels.kmeans.contract import assign_contract
    from runtime.check import check_kernel
    from runtime.distributions import CLUSTERED, NORMAL
    from runtime.timing import time_kernel

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[shape["dtype"]]
    dims = {k: shape[k] for k in ("B", "N", "K", "D")}
    contract = dataclasses.replace(assign_contract([dims], dtype), distributions=(NORMAL, CLUSTERED))
    row = {"shape": dict(shape), "impls": {}}
    for name, launch in impls.items():
        entry = {}
        try:
            checked = check_kernel(contract, launch)
            entry["check"] = {"passed": checked.passed, "message": checked.message}
            if checked.passed:
                t = time_kernel(contract, launch, timing_config(shape), environment_record=env)
                entry.update(median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms, reps=t.reps, verified=t.verified,
                             tflops=flops(shape) / t.median_ms / 1e9)
        except Exception as e:  # noqa: BLE001  (one implementation's failure costs only its entry)
            entry["check"] = {"passed": False, "message": "error: %s" % str(e)[:500]}
        row["impls"][name] = entry
    base = row["impls"].get("flashlib", {}).get("median_ms")
    ours = row["impls"].get("cake", {}).get("median_ms")
    if base and ours:
        row["speedup_vs_flashlib"] = base / ours
    return row


def refit_from(how):
    """The bucket entry's winner a pick replaced (dispatch.Picker.measured's "fits N .. K .. over NAME"), or None."""
    found = re.search(r"; fits N \d+ K \d+ over (\w+)", how)
    return found.group(1) if found else None


def impls():
    from flashlib.primitives.kmeans.triton.assign import euclid_assign_triton

    from kernels.kmeans import api

    def cake(outputs, inputs):
        api.assign_into(inputs[0], inputs[1], outputs[0])

    def flashlib(outputs, inputs):
        euclid_assign_triton(inputs[0], inputs[1], out=outputs[0])

    return {"cake": cake, "flashlib": flashlib}


HOST_BATCHES = 5


def host_cost(calls=1000):
    """Host microseconds per call: `calls` back-to-back calls at a tiny shape (B=1, N=1024, K=16, D=32)."""
    import torch

    from flashlib.primitives.kmeans.triton.assign import euclid_assign_triton

    from kernels.kmeans import api, dispatch

    x = torch.randn(1, 1024, 32, device="cuda").to(torch.bfloat16)
    c = torch.randn(1, 16, 32, device="cuda").to(torch.bfloat16)
    api.kmeans_assign(x, c)
    state = dispatch._states.get((x.data_ptr(), c.data_ptr(), 1, 1024, 16, 32, x.dtype, x.get_device()))
    labels = torch.empty((1, 1024), dtype=torch.int32, device="cuda")
    fns = {"cake": lambda: api.kmeans_assign(x, c), "flashlib": lambda: euclid_assign_triton(x, c),
           "cake_picker_only": lambda: dispatch.picker(0).pick(1, 1024, 16, 32),
           "torch_empty_labels_only": lambda: x.new_empty((1, 1024), dtype=torch.int32)}
    if state is not None:  # the driver launch alone, on the prepared state (labels allocated once)
        stream = dispatch.raw_stream(0)
        fns["cake_launch_only"] = lambda: state.launch.launch_on(state.prepared, stream, labels.data_ptr())
    out, batches = {}, {}
    for name, fn in fns.items():
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        for _ in range(HOST_BATCHES):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            batches.setdefault(name, []).append((t1 - t0) / calls * 1e6)
        out[name] = sorted(batches[name])[HOST_BATCHES // 2]
    # A CUDA graph of the same call: what is left when the host is out of the loop.
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        api.kmeans_assign(x, c)
    g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        g.replay()
    torch.cuda.synchronize()
    out["cake_graph_replay_with_sync"] = (time.perf_counter() - t0) / calls * 1e6
    return {"shape": {"B": 1, "N": 1024, "K": 16, "D": 32, "dtype": "bf16"}, "calls": calls, "us_per_call": out,
            "batches_us_per_call": batches,
            "how": "time.perf_counter around %d back-to-back calls after 50 warm-up calls, no synchronisation inside; "
                   "the median of %d such batches (each followed by a synchronisation)" % (calls, HOST_BATCHES)}


SETS = ("kernel path, untuned", "off-tile D, drawn", "fallback paths")


def summarize(rows, names=("cake", "flashlib")):
    """The result file's summary of validation `rows`: every row whose implementations all passed counts."""
    compared = [r for r in rows if "speedup_vs_flashlib" in r
                and all(e.get("check", {}).get("passed") for e in r["impls"].values())]
    slow = [r for r in compared if r["impls"]["flashlib"]["median_ms"] >= 0.2]
    refit = [r for r in rows if r.get("bucket_winner", {}).get("median_ms")]
    return {
        "shapes_measured": len(rows),
        "shapes_compared": len(compared),
        **versus_flashlib(compared, rows, names),
        "by_set": {name: {"shapes": len(sub), **versus_flashlib(sub, [], ())}
                   for name in SETS for sub in [[r for r in compared if r["set"] == name]]},
        "refit_picks": {"shapes": len(refit), "geomean_speedup_over_bucket_winner": geomean(
            [r["bucket_winner"]["median_ms"] / r["impls"]["cake"]["median_ms"] for r in refit])},
        "fallback_paths": [{"shape": r["shape"], "path": r.get("path"),
                            "passed": all(e.get("check", {}).get("passed") for e in r["impls"].values()),
                            "speedup_vs_flashlib": r.get("speedup_vs_flashlib")} for r in rows if r["set"] == "fallback paths"],
        "kernel_path_shapes_compared": sum(r["set"].startswith("kernel") for r in compared),
        "where_flashlib_takes_at_least_0.2ms": {"shapes": len(slow), **versus_flashlib(slow, [], ())},
    }


def merge(base_path, newer_path, out_path, changed_only=False):
    """`base_path`'s result with every row `newer_path` re-measured (same shape) replaced, the newer run's
    machine, commit and host cost beside it; each row says which run measured it; the summary over all rows.
    `changed_only`: only the rows whose variant the newer run's dispatcher picked differently (the others ran
    the same code in both runs, and keep the base run's figures)."""
    with open(base_path) as f:
        base = json.load(f)
    with open(newer_path) as f:
        newer = json.load(f)

    def key(row):
        return tuple(sorted(row["shape"].items()))

    def run(result):
        return {"commit": result["machine"].get("cake_commit"), "date": result["machine"].get("date")}

    before = {key(r): r.get("variant") for r in base["assign"]}
    again = {key(r): dict(r, measured_in=run(newer)) for r in newer["assign"]
             if not changed_only or before.get(key(r)) != r.get("variant")}
    rows = [again.pop(key(r), None) or dict(r, measured_in=r.get("measured_in") or run(base)) for r in base["assign"]]
    rows += list(again.values())
    out = dict(base, assign=rows, host_us=newer["host_us"], summary=summarize(rows))
    out["runs"] = base.get("runs") or [{**run(base), "machine": base["machine"], "how": base["how"],
                                        "summary": base["summary"], "host_us": base["host_us"]}]
    out["runs"] = out["runs"] + [{**run(newer), "machine": newer["machine"], "rows_measured": len(newer["assign"]),
                                  "rows_taken": sum(r.get("measured_in") == run(newer) for r in rows),
                                  "changed_only": changed_only, "summary": newer["summary"], "host_us": newer["host_us"]}]
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1, default=str)
    return out


def run_log(path, t_start):
    """log(msg): each line stamped with the seconds since `t_start`, printed and appended to `path` as it comes
    (so a run cut off at its device deadline keeps what it logged)."""
    log_file = open(path, "a")

    def log(msg):
        line = "[%6.1fs] %s" % (time.time() - t_start, msg)
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    return log


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--shapes", type=int, default=440)
    ap.add_argument("--deadline-s", type=float, default=170.0)
    ap.add_argument("--tune-s", type=float, default=45.0)
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--off-tile", type=int, default=40, help="shapes drawn with D %% 8 != 0 or D > 256")
    ap.add_argument("--compile-only", action="store_true", help="compile flashlib's kernels for the shapes, then exit")
    ap.add_argument("--merge", nargs=2, metavar=("BASE", "NEWER"),
                    help="write BASE's result with NEWER's re-measured rows into --out-dir (no GPU)")
    ap.add_argument("--changed-only", action="store_true", help="--merge: only the rows whose pick changed")
    args = ap.parse_args()
    if args.merge:
        merge(args.merge[0], args.merge[1], os.path.join(args.out_dir, "kmeans_dispatch_h200.json"), args.changed_only)
        return
    t_start = time.time()
    deadline = t_start + args.deadline_s
    os.makedirs(args.out_dir, exist_ok=True)
    tuned = tuning_plan() + (database_shapes() if args.tune_s <= 0 else [])
    shapes = validation_shapes(args.shapes, tuned)
    fallback = fallback_shapes() + off_tile_shapes(args.off_tile, tuned)
    host_shape = {"B": 1, "N": 1024, "K": 16, "D": 32, "dtype": "bf16"}
    if args.compile_only:
        pool, pending = start_flashlib_compiles(fallback + shapes + [host_shape], args.workers)
        print("flashlib: compiled %d shapes in %.1f s" % (sum(pending.get()), time.time() - t_start), flush=True)
        pool.terminate()
        return
    rows_path = os.path.join(args.out_dir, "kmeans_dispatch_rows.jsonl")
    log = run_log(os.path.join(args.out_dir, "kmeans_dispatch.log"), t_start)

    pool, pending = start_flashlib_compiles(fallback + shapes + [host_shape], args.workers)
    log("flashlib compiles started: %d shapes on %d workers" % (len(shapes) + len(fallback), args.workers))

    import torch

    from kernels.kmeans import dispatch
    from runtime import environment

    from compiler.build import prebuilt
    from kernels.kmeans import variants

    missing = [k.name for k in variants.prebuilt_all() if prebuilt.find(k) is None]
    log("prebuilt kernels: %d of %d found%s" % (len(variants.prebuilt_all()) - len(missing), len(variants.prebuilt_all()),
                                                "; missing (JIT): %s" % missing[:5] if missing else ""))
    env = environment.machine_record()
    log("machine: %s" % json.dumps(env))
    if args.tune_s > 0:
        db = tune(env, min(deadline, time.time() + args.tune_s), log)
        db_path = os.path.join(dispatch.TUNING_DIR, "h200.json")
        db.save(db_path)
        db.save(os.path.join(args.out_dir, "kmeans_tuning_h200.json"))
        dispatch._pickers.clear()
        dispatch._states.clear()
        log("tuned %d buckets; database at %s" % (len(db.entries), db_path))
        tuning_how = db.made["how"]
    else:
        tuning_how = "the committed databases (kernels/kmeans/tuning/*.json, each with how it was made); none of " \
                     "the %d shapes their entries and the buckets' representatives stand for was drawn" % len(tuned)

    # No wait: the workers take the shapes in validation order, ahead of the main process;
    # one it reaches first it compiles itself (Triton's cache makes the two compiles agree).
    log("flashlib compiles %s" % ("finished: %d" % sum(pending.get()) if pending.ready() else "still running"))

    rows = []
    fns = impls()
    with open(rows_path, "w") as rows_file:
        for i, shape in enumerate(fallback + shapes):
            if time.time() > deadline - 12:
                log("validation: deadline reached after %d shapes" % i)
                break
            if pool is not None and pending.ready():
                pool.terminate()  # the workers' CUDA contexts hold GPU memory the largest shapes' checks need
                pool = None
            path = dispatch.explain(shape)
            row = measure(shape, fns, env)
            row.update(path)
            row["bucket"] = dispatch.bucket_key(shape["B"], shape["N"], shape["K"], -(-shape["D"] // 8) * 8)
            row["set"] = "fallback paths" if shape in fallback[:4] else "off-tile D, drawn" if shape in fallback \
                else "kernel path, untuned"
            was = refit_from(path["how"] or "")
            if was and row["impls"]["cake"].get("median_ms"):  # the entry's own winner beside the refit pick
                times = time_variants({k: shape[k] for k in "BNKD"}, [variants.BY_NAME[was]], env, log)
                row["bucket_winner"] = {"variant": was, "median_ms": times.get(was)}
            row["flops"] = flops(shape)
            rows.append(row)
            rows_file.write(json.dumps(row) + "\n")
            rows_file.flush()
            if i % 20 == 0:
                log("%d/%d %s %s" % (i, len(shapes) + len(fallback), shape, row.get("speedup_vs_flashlib")))
    log("flashlib compiles %s" % ("finished: %d" % sum(pending.get()) if pending.ready() else "unfinished"))
    if pool is not None:
        pool.terminate()  # before the host-clock measurement: no other process on the CPUs
    host = host_cost()
    log("host: %s" % json.dumps(host))
    summary = dict(summarize(rows, tuple(fns)), shapes_planned=len(shapes) + len(fallback),
                   device_seconds_in_script=time.time() - t_start)
    log("summary: %s" % json.dumps(summary))
    result = {
        "machine": env,
        "how": {"tuning": tuning_how, "validation": __doc__.split("2. ")[1].split("3. ")[0].strip(),
                "work_cap_flops": WORK_CAP_FLOPS, "bytes_cap": BYTES_CAP, "seed": SEED,
                "norms": "cake computes ||c||^2 once per centroid tensor and version (reps reuse it); flashlib "
                         "computes c_sq inside every call, as its default does"},
        "summary": summary,
        "host_us": host,
        "assign": rows,
    }
    with open(os.path.join(args.out_dir, "kmeans_dispatch_h200.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    log("wrote %s" % os.path.join(args.out_dir, "kmeans_dispatch_h200.json"))


if __name__ == "__main__":
    main()
