"""Flash-KMeans benchmark on the GPU: ours beside flashlib 0.4.0 and flash-kmeans 0.3.1.

Every implementation is checked with the runtime's oracle on fresh inputs at the shape
before it is timed with the runtime's timer (cold L2, CUDA events, median), all in
one run. Results (with the machine record) go to --out as JSON.

    python3 -m kernels.kmeans.bench [--out FILE] [--shapes paper,large,sweep] [--variants]
"""

import argparse
import json
import subprocess
import sys

import torch

from kernels.kmeans import api, schedules
from kernels.kmeans.contract import assign_contract
from runtime.check import check_kernel
from runtime.timing import TimingConfig, time_kernel

LLOYD = "__lloyd__"
PAPER = {"B": 32, "N": 65536, "K": 1024, "D": 128}
LARGE = {"B": 1, "N": 8388608, "K": 1024, "D": 128}
SWEEP = [
    {"B": 1, "N": 65536, "K": 64, "D": 64},
    {"B": 1, "N": 65536, "K": 1024, "D": 128},
    {"B": 4, "N": 262144, "K": 256, "D": 128},
    {"B": 8, "N": 131072, "K": 4096, "D": 128},
    {"B": 1, "N": 1048576, "K": 8192, "D": 128},
    {"B": 16, "N": 65536, "K": 512, "D": 256},
    {"B": 2, "N": 2097152, "K": 128, "D": 64},
    {"B": 1, "N": 4194304, "K": 2048, "D": 64},
    {"B": 32, "N": 65536, "K": 2048, "D": 128},
    {"B": 1, "N": 16777216, "K": 256, "D": 128},
    {"B": 4, "N": 1048576, "K": 1024, "D": 256},
    {"B": 1, "N": 262144, "K": 8192, "D": 256},
]


def peers():
    """name -> launch(outputs, inputs) for each peer that imports on this machine."""
    out = {}
    try:
        from flashlib.primitives.kmeans.triton.assign import euclid_assign_triton as fl

        out["flashlib"] = lambda outputs, inputs: fl(inputs[0], inputs[1], out=outputs[0])
    except ImportError as e:
        print("flashlib unavailable:", e)
    try:
        from flash_kmeans.assign_euclid_triton import euclid_assign_triton as fk

        def flash_kmeans(outputs, inputs):
            x = inputs[0]
            x_sq = (x.float() ** 2).sum(-1)
            outputs[0].copy_(fk(x, inputs[1], x_sq))

        out["flash-kmeans"] = flash_kmeans
    except ImportError as e:
        print("flash-kmeans unavailable:", e)
    return out


def ours(outputs, inputs):
    """kmeans_assign into the harness's (poisoned) output buffer: c_sq, then the kernel."""
    api.assign_into(inputs[0], inputs[1], outputs[0])


def tuned_peers():
    """{"cake-tuned": ours}: the hand-tuned kernels the KMeans API dispatches to, as a peer the agent times."""
    return {"cake-tuned": ours}


def measure(shape, impls, config):
    flops = 2.0 * shape["B"] * shape["N"] * shape["K"] * shape["D"]
    row = {"shape": shape, "impls": {}}
    check_contract = assign_contract([shape])
    for name, launch in impls.items():
        entry = {}
        checked = check_kernel(check_contract, launch)
        entry["check"] = {"passed": checked.passed, "kind": str(checked.kind), "message": checked.message}
        if checked.passed:
            t = time_kernel(check_contract, launch, config)
            entry.update(median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms, tflops=flops / t.median_ms / 1e9,
                         verified=t.verified)
            row["environment"] = t.environment
        row["impls"][name] = entry
    base = row["impls"].get("flashlib", {}).get("median_ms")
    for entry in row["impls"].values():
        if base and "median_ms" in entry:
            entry["speedup_vs_flashlib"] = base / entry["median_ms"]
    return row


def all_impls(variants):
    impls = {"cake": ours}
    impls.update(peers())
    if variants:
        impls.update(variant_impls())
    return impls


def child(name, shapes, reps):
    """Measure one implementation at every shape; one JSON line per shape on stdout."""
    if name == LLOYD:
        print("RESULT " + json.dumps(lloyd_rows([PAPER, LARGE]), default=str), flush=True)
        return
    impls = all_impls(variants=name not in ("cake", "flashlib", "flash-kmeans"))
    config = TimingConfig(warmup=5, reps=reps)
    for shape in shapes:
        row = measure(shape, {name: impls[name]}, config)
        print("RESULT " + json.dumps(row, default=str), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=None)
    ap.add_argument("--shapes", default="paper,large")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--variants", action="store_true", help="also time schedule variants (seed, warpgroup counts)")
    ap.add_argument("--impls", default=None, help="comma-separated subset of implementations")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per implementation before it counts as hung")
    ap.add_argument("--lloyd", action="store_true", help="also time full Lloyd iterations at the headline shapes")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    shapes = []
    for s in args.shapes.split(","):
        shapes += {"paper": [PAPER], "large": [LARGE], "sweep": SWEEP}[s]
    if args.child:
        child(args.child, shapes, args.reps)
        return
    names = args.impls.split(",") if args.impls else list(all_impls(args.variants))
    rows = [{"shape": shape, "impls": {}} for shape in shapes]
    for name in names:
        # Each implementation runs in its own process: a hang or a fault costs only its row.
        cmd = [sys.executable, "-m", "kernels.kmeans.bench", "--child", name, "--shapes", args.shapes,
               "--reps", str(args.reps)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            lines = [l[len("RESULT "):] for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
            failure = None if proc.returncode == 0 else "exit %d: %s" % (proc.returncode, proc.stderr[-2000:])
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            lines = [l[len("RESULT "):] for l in out.splitlines() if l.startswith("RESULT ")]
            failure = "timed out after %gs" % args.timeout
        for i, row in enumerate(rows):
            if i < len(lines):
                got = json.loads(lines[i])
                row["impls"][name] = got["impls"][name]
                row.setdefault("environment", got.get("environment"))
            else:
                row["impls"][name] = {"error": failure or "no result"}
    for row in rows:
        base = row["impls"].get("flashlib", {}).get("median_ms")
        for entry in row["impls"].values():
            if base and "median_ms" in entry:
                entry["speedup_vs_flashlib"] = base / entry["median_ms"]
        print(json.dumps({"shape": row["shape"], **{n: (round(e["median_ms"], 4) if "median_ms" in e else
                                                    str(e.get("error") or e["check"]["message"])[:160])
                                                for n, e in row["impls"].items()}}), flush=True)
    from runtime.environment import machine_record

    result = {"machine": machine_record(), "assign": rows}
    if args.lloyd:
        try:
            proc = subprocess.run([sys.executable, "-m", "kernels.kmeans.bench", "--child", LLOYD], capture_output=True,
                                  text=True, timeout=args.timeout)
            got = [l[len("RESULT "):] for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
            result["lloyd"] = json.loads(got[0]) if got else {"error": proc.stderr[-2000:]}
            print("\n".join(l for l in proc.stdout.splitlines() if l.startswith('{"lloyd"')), flush=True)
        except subprocess.TimeoutExpired:
            result["lloyd"] = {"error": "timed out after %gs" % args.timeout}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, default=str)


def variant_impls():
    """The seed schedule and dispatch variants (kernels/kmeans/variants.py), for comparing schedules (D = 128 only)."""
    from compiler.build.driver import build
    from runtime.compiled import CompiledKernelRunner

    out = {}
    seed = build(schedules.assign_sm90a())
    if seed.ok:
        runner = CompiledKernelRunner(seed.compiled)

        def seed_launch(outputs, inputs, runner=runner):
            c = inputs[1]
            runner(x=inputs[0], c=c, c_sq=(c.float() ** 2).sum(-1), labels=outputs[0])

        out["seed"] = seed_launch
    for name in ("d128_k128_c4_s3_x2", "d128_k128_c2_s4_x2", "d128_k64_c4_s4_x2", "d128_k256_c2_s2_x1"):
        def launch(outputs, inputs, name=name):
            api.assign_into(inputs[0], inputs[1], outputs[0], config=name)

        out["variant_" + name] = launch
    return out



def lloyd_rows(shapes, iters=10, reps=5):
    """Per-iteration time of a full Lloyd iteration (assign + update), ours vs flashlib, same init."""
    from flashlib.primitives.kmeans.triton import batch_kmeans_Euclid

    from runtime.loader import device_attribute
    from runtime.timing import flush_bytes, summarize

    from kernels.kmeans import reference

    flush = torch.empty(flush_bytes(device_attribute("L2_CACHE_SIZE", 0), 2.0), dtype=torch.int8, device="cuda")
    rows = []
    for shape in shapes:
        g = torch.Generator(device="cuda").manual_seed(1234)
        b, n, k, d = shape["B"], shape["N"], shape["K"], shape["D"]
        x = torch.randn((b, n, d), device="cuda", generator=g).to(torch.bfloat16)
        init = api._initial_centroids(x, k, "random", g)
        runs = {
            "cake": lambda: api.kmeans(x, k, iters=iters, tol=0.0, init=init),
            "flashlib": lambda: batch_kmeans_Euclid(x, k, max_iters=iters, tol=0.0, init_centroids=init.clone()),
        }
        row = {"shape": shape, "iters": iters, "impls": {}}
        for name, run in runs.items():
            out = run()
            centroids = out[0] if name == "cake" else out[1]
            labels = reference.assign(x, centroids.to(x.dtype))
            obj = float(reference.objective(x, centroids.to(x.dtype), labels).sum())
            times = []
            for _ in range(reps):
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                run()
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e) / iters)
            row["impls"][name] = dict(objective=obj, **{"per_iter_" + key: v for key, v in summarize(times).items()})
        ref_obj = row["impls"]["flashlib"]["objective"]
        row["objective_relative_difference"] = abs(row["impls"]["cake"]["objective"] - ref_obj) / ref_obj
        row["speedup_vs_flashlib"] = row["impls"]["flashlib"]["per_iter_median_ms"] / row["impls"]["cake"]["per_iter_median_ms"]
        print(json.dumps({"lloyd": shape, "cake_ms": row["impls"]["cake"]["per_iter_median_ms"],
                          "flashlib_ms": row["impls"]["flashlib"]["per_iter_median_ms"],
                          "speedup": row["speedup_vs_flashlib"], "objective_diff": row["objective_relative_difference"]}), flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
