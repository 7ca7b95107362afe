"""Validate the KNN dispatcher on the GPU beside flashlib, on shapes drawn from its domain, and measure host cost.

Kernels: every kernel the drawn shapes run on the H200 is listed without a GPU (`drawn_kernels`: the
dispatcher's choice there, by its tuning databases; the wide-k path's for k > 32) and built ahead
into a prebuilt store (compiler/build/prebuilt.py), which the run finds through $CAKE_PREBUILT:

    python -m compiler.build.prebuild kernels.knn.bench_dispatch:drawn_kernels --out knn_drawn.zip --jobs 2

A kernel missing from the store is built on the device after a JitCompile warning (`--build-only`
builds the drawn shapes' kernels into the compile cache there, as before).

One run on the device, in this order:
1. check (--check-workers processes at once; nothing is timed, so other work may share the GPU):
   every drawn shape's cake and flashlib 0.4.0 flash_knn, by the runtime's oracle on normal inputs
   (kernels/knn/contract.py). This also compiles flashlib's Triton kernels (N, M and D are
   constexprs there: a compile per shape) into Triton's cache, so no compile lands in a timing;
2. wait until --wait-for exists (the caller's other GPU work, e.g. the GPU tests, has finished);
3. host cost: 1,000 back-to-back calls at a tiny shape (Q 1, M 4096, D 64, k 10), host clock
   (perf_counter around the loop, one synchronize at its end), for KnnIndex.search, knn() and
   flash_knn; the picker alone; and where the tiny shape's time goes (`tiny_diagnosis`);
4. time, in one process with the GPU otherwise idle, in drawn order: each implementation whose
   check passed, by the runtime's timer (cold L2, CUDA events, median; fewer reps as the work
   grows, `timing_config`), its timed outputs verified against the oracle again; ours through
   KnnIndex.search (its dispatcher), flashlib's flash_knn (L2; cosine through normalised rows,
   which fails its recall check; it has no inner product) as bench.py times them.
A speedup counts where both implementations passed the check and their timed outputs verified.
The result file (the shared layout: benchmarks/results) is rewritten every 10 s of timing, so a run
stopped at --deadline-s keeps what it measured; shapes it did not reach are counted as such.
`--resume EARLIER.json` checks and times only the drawn shapes an earlier run did not reach (its
record and host cost are kept beside this run's; `tiny_parts` then splits the tiny shape's call into
its pieces), and `--diagnose-s` then spends that long on where the rows below 1.0x spend their time
(`slow_rows`).

    python3 -m kernels.knn.bench_dispatch --out FILE [--shapes 400] [--deadline-s 300] [--check-workers 10]
                                          [--wait-for FILE] [--resume FILE] [--diagnose-s S] [--build-only] [--dry-run]

--dry-run runs the same plumbing on the CPU with stand-ins for the GPU work (a rehearsal).
"""

import argparse
import json
import math
import multiprocessing
import os
import random
import sys
import time

from kernels.knn import bench

WORK_CAP = 1e11  # B Q M D: about 0.4 ms of tensor-core work at our rate
BYTES_CAP = 2 << 30  # database rows: 2 GiB
SEED = 14
TINY = {"B": 1, "Q": 1, "M": 4096, "D": 64, "k": 10}
DEVICE = "NVIDIA H200"  # the GPU the run's kernels are listed for ahead (drawn_kernels: its tuning databases' picks)


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


def tiny_plans():
    """name -> plan.Plan of the tiny shape's search at other database splits than the planner's (the cols layout's
    S ranges of 32 / S tiles each, the rows layout's 1, 2 and 4 ranges): where its device time goes."""
    from kernels.knn import plan as planner

    b, q, m, d, k = (TINY[n] for n in ("B", "Q", "M", "D", "k"))
    out = {}
    for layout, splits in (("cols", (1, 2, 4, 8, 16, 32)), ("rows", (1, 2, 4))):
        p = planner.plan(b, q, m, d, k, layout=layout)
        block = 64 * p.kwargs["consumers"] if layout == "cols" else p.kwargs["block_n"]
        tiles = -(-m // block)
        per = 4 * p.kwargs["consumers"] if layout == "cols" else p.kwargs["interleave"]
        for s in splits:
            t = -(-tiles // s)
            t = -(-t // p.kwargs.get("interleave", 1)) * p.kwargs.get("interleave", 1)
            lists = s * per
            out["%s S%d" % (layout, s)] = planner.Plan(layout, p.params, s, t, lists,
                                                       lists if lists == 1 else -(-lists // 32) * 32)
    return out


def tuned_picker(device=DEVICE):
    """The Picker of a GPU named `device` (its tuning databases), made without one."""
    import os

    from kernels.knn import dispatch
    from runtime.tuning_db import select

    paths = sorted(os.path.join(dispatch.TUNING_DIR, f) for f in os.listdir(dispatch.TUNING_DIR) if f.endswith(".json"))
    return dispatch.Picker(select(paths, dispatch.DOMAIN.op, device, ""))


def drawn_kernels(count=400):
    """The distinct IR kernels the validation runs on the H200 (the drawn shapes', the tiny shape's and its
    tiny_plans'): what a prebuilt store for the run holds (compiler.build.prebuild builds them without a GPU)."""
    import torch

    from compiler.ir.hashing import ir_hash
    from kernels.knn import dispatch, schedules
    from kernels.knn import wide_select as wide

    pick = tuned_picker()
    todo = set()
    for shape in validation_shapes(count) + [dict(TINY)]:
        todo.update(bench.shape_kernels(shape, pick))
    b, q, m, d, k = (TINY[n] for n in ("B", "Q", "M", "D", "k"))
    for p in tiny_plans().values():
        for seed in (False,):
            todo.update(dispatch.kernels_for(b, q, m, d, k, "l2", False, torch.bfloat16, layout=p.layout, seed=seed))
        todo.add(dispatch.merge_builder(p.k, "l2", torch.bfloat16, torch.int32, single=p.single))
    out = {}
    for name, params in sorted(todo):
        kernel = (getattr(schedules, name, None) or getattr(wide, name))(**dict(params))
        out.setdefault(ir_hash(kernel), kernel)
    return [out[h] for h in sorted(out)]


def host_cost(calls=1000):
    """Microseconds per call of back-to-back calls at the tiny shape, host clock."""
    import torch

    from kernels.knn import api, dispatch

    q, x = _tiny_inputs(torch)
    index = api.KnnIndex(x)
    fns = {"cake KnnIndex.search": lambda: index.search(q, TINY["k"]), "cake knn": lambda: api.knn(q, x, TINY["k"])}
    try:
        from flashlib.primitives.knn import flash_knn

        fns["flashlib flash_knn"] = lambda: flash_knn(q, x, TINY["k"], return_distances=True)
    except ImportError:
        pass
    out = {"shape": TINY, "calls": calls}
    for name, fn in fns.items():
        out[name + " us"] = _loop_us(fn, calls, torch)
    p = dispatch.picker(0)
    t0 = time.perf_counter()
    for i in range(calls):
        p.pick(1, 1 + i % 7, 4096, 64, 10)
    out["picker us"] = (time.perf_counter() - t0) / calls * 1e6
    return out


def _tiny_inputs(torch):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(TINY["M"], TINY["D"], device="cuda", generator=g).to(torch.bfloat16)
    q = torch.randn(TINY["Q"], TINY["D"], device="cuda", generator=g).to(torch.bfloat16)
    return q, x


def _loop_us(fn, calls, torch):
    """Host microseconds per call of `calls` back-to-back calls (after 20 warm-up calls), one synchronize at the end."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def _enqueue_us(fn, torch, calls=100):
    """Host microseconds per call to issue `calls` calls from an idle GPU, not waiting for them: the host's own work
    (the launch queue holds them all)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def _graph_us(fn, torch, calls=1000):
    """Microseconds per replay of a CUDA graph of one call, back to back: the call's device time plus the gaps between
    its kernels, with no host work but the replay's."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return _loop_us(graph.replay, calls, torch)


def tiny_diagnosis():
    """Where the tiny shape's time per call goes: for its search as the dispatcher plans it and at other database
    splits (tiny_plans, forced by replacing dispatch.choose for this shape only, so KnnIndex.search and knn() take
    their own per-call paths), the back-to-back host-clock time per call of both, the host time to issue a call,
    the time per replay of a CUDA graph of one call, and each kernel's device time (torch.profiler)."""
    import torch

    from kernels.knn import api, breakdown, dispatch

    q, x = _tiny_inputs(torch)
    k = TINY["k"]
    tiny = tuple(TINY[n] for n in ("B", "Q", "M", "D", "k"))
    choose = dispatch.choose
    out = {}
    for name, p in [("planner", None)] + sorted(tiny_plans().items()):
        if p is not None:
            dispatch.choose = lambda *a, p=p, **kw: (p, 0, "forced") if a[:5] == tiny else choose(*a, **kw)
        api._DATABASES.clear()
        api._FAST_KNN.clear()
        entry = {}
        try:
            index = api.KnnIndex(x)
            search, knn = (lambda: index.search(q, k)), (lambda: api.knn(q, x, k))
            entry["search_loop_us"] = _loop_us(search, 1000, torch)
            entry["knn_loop_us"] = _loop_us(knn, 1000, torch)
            entry["search_enqueue_us"] = _enqueue_us(search, torch)
            entry["knn_enqueue_us"] = _enqueue_us(knn, torch)
            entry["search_kernels_us"] = breakdown._kernels(search, torch)
            entry["search_graph_replay_us"] = _graph_us(search, torch)
        except Exception as e:  # noqa: BLE001  (a split that cannot run says why; the others go on)
            entry["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        finally:
            dispatch.choose = choose
        out[name] = entry
        print("tiny %s: %s" % (name, entry), file=sys.stderr, flush=True)
    api._DATABASES.clear()
    api._FAST_KNN.clear()
    return out


def tiny_parts():
    """The tiny shape's per-call path in pieces: the device time per replay of a CUDA graph of its score kernel
    alone and of its merge alone, and the host time to issue one launch (the merge's) and to allocate the two
    outputs, each from an idle GPU."""
    import torch

    from kernels.knn import api, dispatch
    from runtime.fast_launch import raw_stream

    q, x = _tiny_inputs(torch)
    k = TINY["k"]
    index = api.KnnIndex(x)
    index.search(q, k)
    call = dispatch.prepared_call(q[None], index._db, k, False, torch.int32)
    dist = torch.empty((1, TINY["Q"], k), dtype=torch.float32, device="cuda")
    idx = torch.empty((1, TINY["Q"], k), dtype=torch.int32, device="cuda")
    score = lambda: call.score.launch.launch_on(call.score.prepared, raw_stream(0))  # noqa: E731
    merge = lambda: call.merge.launch_on(call.merge_prepared, raw_stream(0), dist.data_ptr(), idx.data_ptr())  # noqa: E731
    outputs = lambda: (torch.empty((1, TINY["Q"], k), dtype=torch.float32, device="cuda"),  # noqa: E731
                       torch.empty((1, TINY["Q"], k), dtype=torch.int32, device="cuda"))
    out = {"score kernel graph_replay_us": _graph_us(score, torch), "merge graph_replay_us": _graph_us(merge, torch),
           "score then merge graph_replay_us": _graph_us(lambda: (score(), merge()), torch),
           "merge enqueue_us": _enqueue_us(merge, torch), "two outputs enqueue_us": _enqueue_us(outputs, torch),
           "plan": str(call.plan)}
    print("tiny parts: %s" % out, file=sys.stderr, flush=True)
    return out


def slow_rows(rows, deadline, most=12):
    """Where the time of the rows below 1.0x flashlib goes (slowest first, until `deadline`): each kernel's device
    time (torch.profiler) and ms per call back to back of KnnIndex.search, and of the exact torch path on the same
    inputs (kernels/knn/torch_path.py) as the alternative a dispatch rule could pick."""
    import torch

    from kernels.knn import api, breakdown, dispatch, torch_path
    from kernels.knn import rows as knn_rows

    slow = sorted((r for r in rows if r["impls"].get("cake", {}).get("speedup_vs_flashlib", 2) < 1.0),
                  key=lambda r: r["impls"]["cake"]["speedup_vs_flashlib"])
    out = []
    for r in slow[:most]:
        if time.time() > deadline:
            break
        s = r["shape"]
        g = torch.Generator(device="cuda").manual_seed(SEED)
        dt = getattr(torch, s["dtype"])
        x = torch.randn(s["B"], s["M"], s["D"], device="cuda", generator=g).to(dt)
        q = torch.randn(s["B"], s["Q"], s["D"], device="cuda", generator=g).to(dt)
        index = api.KnnIndex(x, metric=s["metric"])
        dist = torch.empty((s["B"], s["Q"], s["k"]), dtype=torch.float32, device="cuda")
        idx = torch.empty((s["B"], s["Q"], s["k"]), dtype=torch.int32, device="cuda")
        q_rows = knn_rows.rescoring_rows(q)
        entry = {"shape": s, "flashlib_ms": r["impls"]["flashlib"]["median_ms"], "cake_ms": r["impls"]["cake"]["median_ms"]}
        try:
            search = lambda: index.search(q, s["k"])  # noqa: E731
            entry["cake_kernels_us"] = breakdown._kernels(search, torch)
            entry["cake_back_to_back_ms"] = dispatch.time_search(search, 3)
            entry["torch_path_back_to_back_ms"] = dispatch.time_search(
                lambda: torch_path.search_into(q_rows, index._db, s["k"], False, dist, idx), 3)
        except Exception as e:  # noqa: BLE001
            entry["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        out.append(entry)
        print("slow row %s" % entry, file=sys.stderr, flush=True)
        del x, q, index, dist, idx, q_rows
        torch.cuda.empty_cache()
    return out


def timing_config(shape):
    """Fewer reps (and one input set) as a shape's work grows: its spread shrinks, and its inputs and reference take
    most of a shape's time (the validation's throughput)."""
    from runtime.timing import TimingConfig

    work = shape["B"] * shape["Q"] * shape["M"] * shape["D"]
    if work < 1e9:
        return TimingConfig(warmup=3, reps=10, input_sets=2)
    if work < 2e10:
        return TimingConfig(warmup=2, reps=8, input_sets=2)
    return TimingConfig(warmup=2, reps=5, input_sets=1)


def _impls(shape):
    impls = {"cake": bench.cake_impl(shape)}
    fl = bench.flashlib_impl(shape)
    if fl is not None:
        impls["flashlib"] = fl
    return impls


def _contract(shape):
    import torch

    from kernels.knn.contract import knn_contract
    from runtime import distributions

    return knn_contract([shape], getattr(torch, shape["dtype"]), (distributions.NORMAL,))


def check_shape(shape):
    """{impl: {"check": {...}}} of one shape: the runtime's oracle on normal inputs (seeded), each implementation."""
    import torch

    from runtime.check import check_kernel

    contract = _contract(shape)
    out = {}
    for name, launch in _impls(shape).items():
        try:
            checked = check_kernel(contract, launch, seed=SEED)
            out[name] = {"check": {"passed": checked.passed, "kind": str(checked.kind), "message": checked.message}}
        except Exception as e:  # noqa: BLE001  (an implementation that cannot run says why; the others go on)
            out[name] = {"check": {"passed": False, "kind": "error", "message": "%s: %s" % (type(e).__name__, str(e)[:1500])}}
    torch.cuda.empty_cache()
    return out


def time_shape(shape, checks, env):
    """{impl: entry}: each implementation whose check passed, timed by the runtime's timer (its outputs verified)."""
    import torch

    from runtime.timing import time_kernel

    contract = _contract(shape)
    flops = 2.0 * shape["B"] * shape["Q"] * shape["M"] * shape["D"]
    out = {}
    for name, launch in _impls(shape).items():
        entry = dict(checks.get(name) or {"check": {"passed": False, "kind": "error", "message": "not checked"}})
        if entry["check"]["passed"]:
            try:
                t = time_kernel(contract, launch, timing_config(shape), seed=SEED + 1, environment_record=env)
                entry.update(median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms, reps=t.reps, tflops=flops / t.median_ms / 1e9,
                             verified=t.verified, verification=t.verification)
            except Exception as e:  # noqa: BLE001
                entry["error"] = "%s: %s" % (type(e).__name__, str(e)[:1500])
        out[name] = entry
        torch.cuda.empty_cache()
    return out


# -- stand-ins for --dry-run (no GPU): the plumbing's rehearsal ------------------------------------


def _dry_check(shape):
    return {name: {"check": {"passed": name == "cake" or shape["metric"] == "l2", "kind": "None", "message": "dry run"}}
            for name in (("cake",) if shape["metric"] == "ip" else ("cake", "flashlib"))}


def _dry_time(shape, checks, env):
    out = {}
    for name, entry in checks.items():
        entry = dict(entry)
        if entry["check"]["passed"]:
            entry.update(median_ms=0.1 if name == "cake" else 0.25, verified=True)
        out[name] = entry
    return out


def _check_worker(item):
    """Pool worker: (index, checks, seconds) of one drawn shape."""
    i, shape, dry = item
    t0 = time.time()
    return i, (_dry_check if dry else check_shape)(shape), time.time() - t0


def check_all(shapes, workers, deadline, dry=False, log=print):
    """{index: checks} of the shapes, checked in `workers` spawned processes, until `deadline` (time.time())."""
    ctx = multiprocessing.get_context("spawn")
    done = {}
    pool = ctx.Pool(workers)
    try:  # in drawn order: the few largest shapes' inputs and references never all share the GPU's memory at once
        results = pool.imap_unordered(_check_worker, [(i, s, dry) for i, s in enumerate(shapes)])
        while len(done) < len(shapes):
            try:  # a hung check holds its worker, not the run: waiting ends at the deadline
                i, checks, _ = results.next(timeout=max(0.1, deadline - time.time()))
            except multiprocessing.TimeoutError:
                log("check deadline: %d of %d shapes checked" % (len(done), len(shapes)))
                break
            done[i] = checks
            if len(done) % 50 == 0 or len(done) == len(shapes):
                log("checked %d of %d shapes" % (len(done), len(shapes)))
    finally:
        pool.terminate()
        pool.join()
    return done


def wait_for(path, deadline, log=print):
    """Wait until `path` exists (the caller's other GPU work has finished) or `deadline`; whether it appeared."""
    while path and not os.path.exists(path):
        if time.time() > deadline:
            log("gave up waiting for %s" % path)
            return False
        time.sleep(0.5)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", type=int, default=400)
    ap.add_argument("--deadline-s", type=float, default=300, help="seconds from the start: no shape is timed after it")
    ap.add_argument("--check-deadline-s", type=float, default=150, help="seconds from the start: checking stops")
    ap.add_argument("--check-workers", type=int, default=10)
    ap.add_argument("--workers", type=int, default=16, help="build processes (--build-only)")
    ap.add_argument("--wait-for", default=None, help="a file whose existence says the GPU is otherwise idle")
    ap.add_argument("--wait-max-s", type=float, default=170, help="seconds from the start: stop waiting for it")
    ap.add_argument("--notes", default="", help="how the run was made (into the machine record)")
    ap.add_argument("--resume", default=None, help="an earlier run's result file: its timed rows are kept, the drawn "
                    "shapes it lacks are checked and timed here, and the file written holds both")
    ap.add_argument("--diagnose-s", type=float, default=0, help="seconds for slow_rows after the timing (0: none)")
    ap.add_argument("--build-only", action="store_true", help="build the drawn shapes' kernels, measure nothing")
    ap.add_argument("--dry-run", action="store_true", help="the plumbing on the CPU, with stand-ins for the GPU work")
    args = ap.parse_args()
    start = time.time()

    def log(msg):
        print("[%6.1fs] %s" % (time.time() - start, msg), file=sys.stderr, flush=True)

    shapes = validation_shapes(args.shapes)
    if args.build_only:
        t0 = time.time()
        failed = bench.build_all(shapes + [dict(TINY)], args.workers)
        print(json.dumps({"seconds": time.time() - t0, "failed": failed}), flush=True)
        return
    earlier = json.load(open(args.resume)) if args.resume else {"machine": None, "search": []}
    kept = {_key(r["shape"]): r for r in earlier["search"]}
    todo = [i for i, s in enumerate(shapes) if _key(s) not in kept]
    found = check_all([shapes[i] for i in todo], args.check_workers, start + args.check_deadline_s, args.dry_run, log)
    checks = {todo[j]: c for j, c in found.items()}
    log("checks done: %d of the %d shapes to time" % (len(checks), len(todo)))
    waited = wait_for(args.wait_for, start + args.wait_max_s, log)
    if args.dry_run:
        record = {"dry_run": True, "notes": args.notes}
        env, timer = {}, _dry_time
    else:
        from runtime import environment

        record = dict(environment.machine_record(), notes=args.notes, gpu_otherwise_idle=waited)
        if earlier["machine"] is None:
            record["host_cost"] = host_cost()
            log("host cost: %s" % json.dumps(record["host_cost"]))
            record["tiny_diagnosis"] = tiny_diagnosis()
        else:
            try:
                record["tiny_parts"] = tiny_parts()
            except Exception as e:  # noqa: BLE001  (a diagnosis that fails costs only itself)
                record["tiny_parts"] = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
        env, timer = environment.collect(0), time_shape
    record["checked_in_parallel"] = {"workers": args.check_workers, "shapes": len(checks)}
    if earlier["machine"] is not None:  # one file of both runs: the earlier's record (and host cost) beside this one's
        moved = ("host_cost", "tiny_diagnosis")
        prior = {n: v for n, v in earlier["machine"].items() if n not in ("summary", "shapes_drawn") + moved}
        record = dict({n: earlier["machine"][n] for n in moved if n in earlier["machine"]}, **record, earlier_run=prior)
    fresh = []
    written = 0.0
    for i in todo:
        if time.time() - start > args.deadline_s:
            log("deadline: %d of %d shapes timed" % (len(fresh), len(todo)))
            break
        if i not in checks:
            continue
        if not args.dry_run and len(fresh) % 50 == 49:
            env = environment.collect(0)
        row = {"shape": shapes[i], "impls": timer(shapes[i], checks[i], env)}
        if env:
            row["environment"] = env
        fresh.append(row)
        log("%d %s: %s" % (i, bench._short(shapes[i]), {n: round(e.get("median_ms", 0), 4) or e["check"]["message"][:120]
                                                        for n, e in row["impls"].items()}))
        if time.time() - written > 10:  # the file grows with the rows: rewritten every 10 s, not every shape
            _write(args.out, _in_drawn_order(shapes, kept, fresh), record, shapes, checks)
            written = time.time()
    rows = _in_drawn_order(shapes, kept, fresh)
    _write(args.out, rows, record, shapes, checks)
    log("%d shapes timed here, %d of %d drawn in all" % (len(fresh), len(rows), len(shapes)))
    if not args.dry_run and args.diagnose_s > 0:
        try:
            record["below_1x_diagnosis"] = slow_rows(rows, time.time() + args.diagnose_s)
        except Exception as e:  # noqa: BLE001
            record["below_1x_diagnosis"] = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
        _write(args.out, rows, record, shapes, checks)


def _key(shape):
    return json.dumps(shape, sort_keys=True)


def _in_drawn_order(shapes, kept, fresh):
    """The earlier run's rows and this run's, in the order the shapes were drawn."""
    by_key = dict(kept, **{_key(r["shape"]): r for r in fresh})
    return [by_key[_key(s)] for s in shapes if _key(s) in by_key]


def _counts(row_impls):
    """Whether a row's speedup counts: both checked, both timed, both timed outputs verified."""
    base, cake = row_impls.get("flashlib", {}), row_impls.get("cake", {})
    return all(e.get("check", {}).get("passed") and "median_ms" in e and e.get("verified") for e in (base, cake))


def summary(rows, drawn):
    """Over the rows timed: speedups over flashlib where both passed the oracle and verified (geometric mean, min, how
    many below 1.0x); what kept a row out of the ratio (flashlib has no inner product; its cosine through normalised
    rows fails the recall check); and how many drawn shapes no row holds (not reached by the deadline)."""
    sp = [r["impls"]["cake"]["speedup_vs_flashlib"] for r in rows if "speedup_vs_flashlib" in r["impls"].get("cake", {})]
    cake = [r["impls"].get("cake", {}) for r in rows]
    return {"shapes_drawn": drawn, "shapes_timed": len(rows), "not_reached": drawn - len(rows),
            "beside_flashlib": len(sp),
            "cake_passed_check": sum(1 for e in cake if e.get("check", {}).get("passed")),
            "cake_failed_check": sum(1 for e in cake if not e.get("check", {}).get("passed")),
            "cake_timed_outputs_failed": sum(1 for e in cake if "median_ms" in e and not e.get("verified")),
            "flashlib_absent (ip)": sum(1 for r in rows if "flashlib" not in r["impls"]),
            "flashlib_failed_check": sum(1 for r in rows if "flashlib" in r["impls"]
                                         and not r["impls"]["flashlib"].get("check", {}).get("passed")),
            "geomean_speedup_vs_flashlib": math.exp(sum(math.log(s) for s in sp) / len(sp)) if sp else None,
            "min_speedup_vs_flashlib": min(sp) if sp else None,
            "below_1x": sum(1 for s in sp if s < 1.0)}


def _write(path, rows, record, shapes, checks):
    from kernels.knn import plan as planner

    for row in rows:
        if _counts(row["impls"]):
            row["impls"]["cake"]["speedup_vs_flashlib"] = row["impls"]["flashlib"]["median_ms"] / row["impls"]["cake"]["median_ms"]
    narrow = [s for s in shapes if s["k"] <= planner.MAX_K]
    summaries = {"all": summary(rows, len(shapes)),
                 "register lists (k <= %d)" % planner.MAX_K: summary([r for r in rows if r["shape"]["k"] <= planner.MAX_K],
                                                                     len(narrow)),
                 "wide k (k > %d)" % planner.MAX_K: summary([r for r in rows if r["shape"]["k"] > planner.MAX_K],
                                                            len(shapes) - len(narrow))}
    timed = {_key(r["shape"]) for r in rows}
    unreached = [dict(shape=s, impls=checks.get(i, {})) for i, s in enumerate(shapes) if _key(s) not in timed]
    with open(path, "w") as f:
        json.dump({"machine": dict(record, shapes_drawn=len(shapes), summary=summaries), "search": rows,
                   "not_timed": unreached}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
