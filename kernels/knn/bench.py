"""KNN benchmark on the GPU: CAKE beside flashlib 0.4.0 flash_knn and torch mm + topk, in one run.

Every implementation is checked with the runtime's oracle (kernels/knn/contract.py: recall
against float64 exact scores with a tolerance for ties, exact distances, order, poisoned
outputs, NaN) on fresh inputs at the shape before the runtime's timer times it (cold L2,
CUDA events, median). Each implementation runs in its own process, so a fault or a hang
costs only its rows. Results with the machine record (and the measured device copy
bandwidth) go to --out as JSON, per op ("all_pairs": q is x; "search": separate queries).

What is timed: cake all-pairs is `knn(x, x, k)` (norms computed in the call); cake search is
`KnnIndex(x).search(q, k)` (the index, built outside the timing, keeps the database's norms:
that is what an index is for); flashlib is `flash_knn(q, x, k)` (L2 only; cosine through
normalised rows, ip unsupported); torch is a chunked `mm` in f32 + `topk`.

    python3 -m kernels.knn.bench [--out FILE] [--ops all_pairs,search,sweep] [--rows 1,0,2]
                                 [--impls cake,flashlib,torch] [--variants] [--build-only] [--reps N]
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

ALL_PAIRS = {"B": 1, "Q": 65536, "M": 65536, "D": 128, "k": 10, "metric": "l2", "self": True}
SEARCH = {"B": 1, "Q": 128, "M": 10_000_000, "D": 128, "k": 10, "metric": "l2"}
# 18 shapes: Q from 1 to 1M, M from 4K to 20M, D from 32 to 512 (some not multiples of 64), k from 1
# to 256 (k > 32 on the exact torch path), l2, ip and cosine, batches.
SWEEP = [
    {"B": 1, "Q": 1, "M": 1_000_000, "D": 128, "k": 10, "metric": "l2"},
    {"B": 1, "Q": 16, "M": 4_000_000, "D": 64, "k": 16, "metric": "l2"},
    {"B": 1, "Q": 64, "M": 20_000_000, "D": 32, "k": 5, "metric": "l2"},
    {"B": 1, "Q": 256, "M": 1_000_000, "D": 256, "k": 32, "metric": "l2"},
    {"B": 1, "Q": 1000, "M": 1_000_000, "D": 128, "k": 1, "metric": "l2"},
    {"B": 1, "Q": 4096, "M": 4096, "D": 512, "k": 8, "metric": "l2", "self": True},
    {"B": 1, "Q": 1_000_000, "M": 4096, "D": 64, "k": 10, "metric": "l2"},
    {"B": 1, "Q": 100_000, "M": 100_000, "D": 96, "k": 20, "metric": "l2", "self": True},
    {"B": 1, "Q": 16384, "M": 2_000_000, "D": 128, "k": 4, "metric": "l2"},
    {"B": 1, "Q": 300, "M": 5_000_000, "D": 200, "k": 7, "metric": "l2"},
    {"B": 4, "Q": 2000, "M": 65536, "D": 128, "k": 32, "metric": "l2"},
    {"B": 1, "Q": 512, "M": 20_000_000, "D": 64, "k": 32, "metric": "l2"},
    {"B": 1, "Q": 128, "M": 1_000_000, "D": 128, "k": 10, "metric": "ip"},
    {"B": 1, "Q": 65536, "M": 65536, "D": 128, "k": 10, "metric": "ip", "self": True},
    {"B": 1, "Q": 8, "M": 10_000_000, "D": 128, "k": 10, "metric": "cosine"},
    {"B": 1, "Q": 10_000, "M": 500_000, "D": 384, "k": 16, "metric": "cosine"},
    {"B": 1, "Q": 2048, "M": 500_000, "D": 128, "k": 64, "metric": "cosine"},
    {"B": 1, "Q": 8192, "M": 8192, "D": 64, "k": 256, "metric": "l2", "self": True},
]
SETS = {"all_pairs": [ALL_PAIRS], "search": [SEARCH], "sweep": SWEEP}
IMPLS = ("cake", "flashlib", "torch")
MACHINE = "__machine__"
# Checked on every distribution when Q x M is at most this; on normal and clustered data above it
# (the float64 oracle is the costly part of a check).
ALL_DISTRIBUTIONS_UP_TO = 1 << 29


def op_of(shape):
    return "all_pairs" if shape.get("self") else "search"


def _queries(inputs):
    return inputs[0]


# -- implementations (each writes the harness's outputs: dist f32, idx i32 [B, Q, k]) ---------------


def cake_impl(shape, variant=None):
    from kernels.knn import api, dispatch

    k, metric = shape["k"], shape.get("metric", "l2")
    if op_of(shape) == "all_pairs" and variant is None:
        def launch(outputs, inputs):
            dist, idx = api.knn(inputs[1], inputs[1], k, metric=metric)
            outputs[0].copy_(dist)
            outputs[1].copy_(idx)

        return launch
    indexes = {}

    def launch(outputs, inputs):
        x = inputs[1]
        key = (x.data_ptr(), tuple(x.shape))
        if key not in indexes:
            if len(indexes) > 4:
                indexes.clear()
            indexes[key] = api.KnnIndex(x, metric=metric)
        index = indexes[key]
        if variant is None:
            dist, idx = index.search(inputs[0], k)
            outputs[0].copy_(dist)
            outputs[1].copy_(idx)
        else:
            dispatch.search_into(inputs[0], index._db, k, False, outputs[0], outputs[1], config=variant)

    return launch


def flashlib_impl(shape):
    import torch
    from flashlib.primitives.knn import flash_knn

    k, metric = shape["k"], shape.get("metric", "l2")
    if metric == "ip":
        return None  # flash_knn ranks by L2 distance only

    def launch(outputs, inputs):
        q, x = inputs
        if metric in ("cosine", "cos"):
            q = torch.nn.functional.normalize(q.float(), dim=-1).to(q.dtype)
            x = torch.nn.functional.normalize(x.float(), dim=-1).to(x.dtype)
        vals, idxs = flash_knn(q, x, k, return_distances=True)
        outputs[0].copy_(vals if metric == "l2" else 1.0 - vals / 2)
        outputs[1].copy_(idxs)

    return launch


def torch_impl(shape):
    import torch

    from kernels.knn import torch_path

    k, metric = shape["k"], shape.get("metric", "l2")
    largest = metric != "l2"
    mm, widen = torch_path.f32_products()

    def launch(outputs, inputs):
        q, x = inputs
        for b in range(q.shape[0]):
            xb = widen(x[b])
            xsq = torch.linalg.vector_norm(xb, dim=-1, dtype=torch.float32)
            rows = max(1, min(q.shape[1], (1 << 29) // xb.shape[0]))
            for i0 in range(0, q.shape[1], rows):
                qc = widen(q[b, i0 : i0 + rows])
                s = mm(qc, xb.T)
                if metric == "l2":
                    s = xsq.square()[None] - 2 * s
                elif metric in ("cosine", "cos"):
                    s = s / xsq.clamp_min(1e-30)[None] / torch.linalg.vector_norm(qc, dim=-1, dtype=torch.float32)[:, None].clamp_min(1e-30)
                vals, idx = torch.topk(s, k, dim=1, largest=largest)
                if metric == "l2":
                    vals = (vals + torch.linalg.vector_norm(qc, dim=-1, dtype=torch.float32).square()[:, None]).clamp_min(0)
                outputs[0][b, i0 : i0 + rows].copy_(vals)
                outputs[1][b, i0 : i0 + rows].copy_(idx)

    return launch


def variant_plans(shape):
    """name -> Variant of the schedule variants (kernels/knn/variants.py) that fit a shape."""
    import torch

    from kernels.knn import dispatch, variants

    d, _ = dispatch.rank_shape(shape["D"], getattr(torch, shape.get("dtype", "bfloat16")))
    return {v.name: v for v in variants.admitted(shape["B"], shape["Q"], shape["M"], d, shape["k"])}


def all_impls(shape, names, variants, torch_sweep=False):
    impls = {}
    for name in names:
        if name == "cake":
            impls["cake"] = cake_impl(shape)
        elif name == "flashlib":
            try:
                fl = flashlib_impl(shape)
            except ImportError as e:
                print("flashlib unavailable:", e, flush=True)
                fl = None
            if fl is not None:
                impls["flashlib"] = fl
        elif name == "torch" and (shape in (ALL_PAIRS, SEARCH) or torch_sweep):
            impls["torch"] = torch_impl(shape)
        elif name.startswith("cake:"):
            plans = variant_plans(shape)
            if name[5:] in plans:
                impls[name] = cake_impl(shape, plans[name[5:]])
    if variants and shape in (ALL_PAIRS, SEARCH):
        for vname, v in variant_plans(shape).items():
            impls["cake:" + vname] = cake_impl(shape, v)
    return impls


# -- measuring -----------------------------------------------------------------------------


def measure(shape, impls, reps, seed, dists=None):
    import torch

    from kernels.knn.contract import knn_contract
    from runtime import distributions
    from runtime.check import check_kernel
    from runtime.timing import TimingConfig, time_kernel

    dists = dists or (distributions.ALL if shape["Q"] * shape["M"] <= ALL_DISTRIBUTIONS_UP_TO else (
        distributions.NORMAL, distributions.CLUSTERED))
    contract = knn_contract([shape], getattr(torch, shape.get("dtype", "bfloat16")), dists)
    flops = 2.0 * shape["B"] * shape["Q"] * shape["M"] * shape["D"]
    x_bytes = 2.0 * shape["B"] * shape["M"] * shape["D"]
    row = {"shape": shape, "impls": {}}
    for name, launch in impls.items():
        entry = {}
        try:
            checked = check_kernel(contract, launch, seed=seed)
            entry["check"] = {"passed": checked.passed, "kind": str(checked.kind), "message": checked.message}
            if checked.passed:
                config = TimingConfig(warmup=3, reps=reps if name != "torch" else max(3, reps // 4))
                t = time_kernel(contract, launch, config, seed=seed)  # every implementation on the same inputs
                entry.update(median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms, tflops=flops / t.median_ms / 1e9,
                             database_gbps=x_bytes / t.median_ms / 1e6, verified=t.verified)
                row["environment"] = t.environment
        except Exception as e:  # noqa: BLE001  (a row that cannot run says why; the others go on)
            entry["error"] = "%s: %s" % (type(e).__name__, str(e)[:1500])
        torch.cuda.empty_cache()
        row["impls"][name] = entry
        print("  %s %s: %s" % (name, _short(shape), entry.get("median_ms", entry.get("error") or entry["check"]["message"])),
              file=sys.stderr, flush=True)
    return row


def _short(shape):
    return " ".join("%s=%s" % kv for kv in shape.items())


def machine():
    """Device copy bandwidth (bytes read + written) and the bf16 GEMM rate, measured now."""
    import torch

    from runtime.environment import machine_record

    n = 1 << 31
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    times = []
    for _ in range(12):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    copy_ms = sorted(times[2:])[len(times[2:]) // 2]
    del a, b
    m = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
    for _ in range(3):
        m @ m
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        m @ m
    e.record()
    torch.cuda.synchronize()
    gemm_ms = s.elapsed_time(e) / 10
    env = machine_record()
    env.update(copy_gbps=2.0 * n / copy_ms / 1e6, bf16_gemm_tflops=2.0 * 8192 ** 3 / gemm_ms / 1e9)
    return env


def child(name, shapes, reps, variants, seed, torch_sweep):
    if name == MACHINE:
        print("RESULT " + json.dumps(machine(), default=str), flush=True)
        return
    for shape in shapes:
        impls = all_impls(shape, [name], variants and name == "cake", torch_sweep)
        row = measure(shape, impls, reps, seed)
        print("RESULT " + json.dumps(row, default=str), flush=True)


def shape_kernels(shape, picker=None):
    """The (builder, parameters) pairs of the kernels cake runs at a bench shape: the wide-k path's past the register
    lists; with `picker` (a dispatch.Picker) the variant it picks for the shape's bucket, so a machine without the
    GPU can list what the dispatcher runs on the device that picker's tuning databases were measured on."""
    import torch

    from kernels.knn import api, dispatch, widek
    from kernels.knn import plan as planner

    dtype = getattr(torch, shape.get("dtype", "bfloat16"))
    sizes = (shape["B"], shape["Q"], shape["M"], shape["D"], shape["k"], api.METRICS[shape.get("metric", "l2")])
    if shape["k"] > planner.MAX_K:
        return widek.kernels_for(*sizes, dtype=dtype)
    config = None
    if picker is not None:
        v, _ = picker.pick(*sizes[:3], dispatch.rank_shape(shape["D"], dtype)[0], shape["k"])
        config = v.name if v is not None else None
    return dispatch.kernels_for(*sizes, dtype=dtype, config=config)


def build_all(shapes, workers, variant_shapes=()):
    """Build every kernel the cake rows run (and every variant's at `variant_shapes`), in parallel; returns the
    failures."""
    import torch

    from kernels.knn import api, dispatch

    todo = set()
    for shape in shapes:
        todo.update(shape_kernels(shape))
        if shape in variant_shapes:
            dtype = getattr(torch, shape.get("dtype", "bfloat16"))
            sizes = (shape["B"], shape["Q"], shape["M"], shape["D"], shape["k"], api.METRICS[shape.get("metric", "l2")])
            for v in variant_plans(shape).values():
                todo.update(dispatch.kernels_for(*sizes, dtype=dtype, config=v))
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(_build_one, b, p): (b, p) for b, p in sorted(todo)}
        failed = [str(futures[f]) + ": " + f.result() for f in concurrent.futures.as_completed(futures) if f.result()]
    print("built %d kernels, %d failed" % (len(todo), len(failed)), flush=True)
    return failed


def _build_one(builder, params):
    """Verify and build one kernel as the API does (filling the compile cache); '' or what went wrong."""
    from kernels.knn import dispatch

    try:
        dispatch.compiled(builder, params)
    except RuntimeError as e:
        return str(e)[:500]
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--ops", default="all_pairs,search,sweep")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--variants", action="store_true", help="also time cake's schedule variants at the headline shapes")
    ap.add_argument("--build-only", action="store_true", help="build the kernels the cake rows need, then stop")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per implementation before it counts as hung")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--torch-sweep", action="store_true", help="also time torch mm + topk on the sweep (slow)")
    ap.add_argument("--rows", default=None, help="comma-separated indices into the --ops shapes to run, in that order "
                    "(a run split over several calls; default: all)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    shapes = _selected([s for op in args.ops.split(",") for s in SETS[op]], args.rows)
    if args.build_only:
        sys.exit(1 if build_all(shapes, args.workers, _variant_shapes(shapes, args.variants)) else 0)
    if args.child:
        child(args.child, shapes, args.reps, args.variants, args.seed, args.torch_sweep)
        return
    names = args.impls.split(",")
    if "cake" in names or any(n.startswith("cake:") for n in names):
        variant_rows = args.variants or any(n.startswith("cake:") for n in names)
        build_all(shapes, args.workers, _variant_shapes(shapes, variant_rows))  # in parallel, before any child compiles
    rows = [{"shape": s, "impls": {}} for s in shapes]
    record = {}
    for name in [MACHINE] + names:
        cmd = [sys.executable, "-m", "kernels.knn.bench", "--child", name, "--ops", args.ops, "--rows", args.rows or "",
               "--reps", str(args.reps),
               "--seed", str(args.seed)] + (["--variants"] if args.variants else []) + (
                   ["--torch-sweep"] if args.torch_sweep else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            out, failure = proc.stdout, None if proc.returncode == 0 else "exit %d: %s" % (proc.returncode, proc.stderr[-2000:])
            sys.stderr.write(proc.stderr[-4000:])
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            failure = "timed out after %gs" % args.timeout
        lines = [json.loads(line[len("RESULT "):]) for line in out.splitlines() if line.startswith("RESULT ")]
        if name == MACHINE:
            record = lines[0] if lines else {"error": failure}
            continue
        for i, row in enumerate(rows):
            if i < len(lines):
                row["impls"].update(lines[i]["impls"])
                row.setdefault("environment", lines[i].get("environment"))
            elif name != "torch" or args.torch_sweep or row["shape"] in (ALL_PAIRS, SEARCH):
                row["impls"][name] = {"error": failure or "no result"}
        if args.out:  # after every implementation, so a run cut short keeps what it measured
            _write(args.out, rows, record)
    for row in rows:
        print(json.dumps({"shape": _short(row["shape"]), **{
            n: round(e["median_ms"], 4) if "median_ms" in e else str(e.get("error") or e["check"]["message"])[:100]
            for n, e in row["impls"].items()}}), flush=True)


def _variant_shapes(shapes, variants):
    """The shapes at which --variants (or a `cake:<variant>` implementation) times variants: the headline ones."""
    return [s for s in shapes if s in (ALL_PAIRS, SEARCH)] if variants else []


def _selected(shapes, rows):
    """The shapes `rows` (comma-separated indices, or empty for all) picks, in its order; ValueError names a bad one."""
    if not rows:
        return shapes
    out = []
    for text in rows.split(","):
        if not text.strip().isdigit() or int(text) >= len(shapes):
            raise ValueError("--rows takes indices 0..%d of the --ops shapes, got %r" % (len(shapes) - 1, text))
        out.append(shapes[int(text)])
    return out


def _write(path, rows, record):
    """The result file in the shared layout (benchmarks/results): the machine, then rows per op."""
    result = {"machine": record}
    for row in rows:
        base = row["impls"].get("flashlib", {})
        for entry in row["impls"].values():
            if base.get("check", {}).get("passed") and "median_ms" in entry and "median_ms" in base:
                entry["speedup_vs_flashlib"] = base["median_ms"] / entry["median_ms"]
            if "copy_gbps" in record and "database_gbps" in entry:
                entry["fraction_of_copy_bandwidth"] = entry["database_gbps"] / record["copy_gbps"]
        result.setdefault(op_of(row["shape"]), []).append(row)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    main()
