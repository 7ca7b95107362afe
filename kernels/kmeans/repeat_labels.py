"""Repeat KMeans assign kernels on fixed inputs and count wrong labels point by point (GPU).

The oracle (runtime.check) draws fresh inputs each case and bounds the objective, so a
kernel that gets a few dozen of two million labels wrong in some runs can pass it. This
runs each kernel REPS times on the same inputs, against an fp64 reference, and counts the
labels that are wrong and not near-ties (exact distance worse than the best by more than
1e-5 of ||x||^2 + ||c||^2, the scale of fp32 rounding): a count that changes from run to
run is a race. Kernels are .cake files, or candidate ids of an agent run's database.
`--edit` rebuilds the lowered CUDA with one change, to test a hypothesis about a race:
fence_release (fence.proxy.async before each arrive on `empty`), syncwarp_wait
(__syncwarp after each wait on `full`), one_cta (200 KB of shared memory: one block per SM).

    python3 -m kernels.kmeans.repeat_labels KERNEL[,KERNEL...] [--reps 12] [--shape 32,65536,1024,128]
        [--db agent.db | --run-archive benchmarks/results/gpu_run_agent_h200_files.tar.gz]
        [--edit base,fence_release,...] [--out kmeans_repeat.json]
"""

import argparse
import collections
import json
import os
import sqlite3
import tarfile
import tempfile

import torch

from compiler.build import driver
from compiler.ir.text.parse import parse_kernel
from runtime.compiled import CompiledKernelRunner
from runtime.distributions import CLUSTERED, NORMAL, sample

TIE_RTOL = 1e-5  # as runtime.metrics.kmeans_labels
EDITS = ("base", "fence_release", "syncwarp_wait", "one_cta")
_FENCE = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'


def edited(source, edit):
    """The lowered CUDA `source` with `edit` applied (see the module doc)."""
    out = []
    for line in source.splitlines():
        text = line.strip()
        if edit == "fence_release" and text.startswith("cake::mbarrier::arrive((bar_empty"):
            out.append(_FENCE)
        out.append(line)
        if edit == "syncwarp_wait" and text.startswith("cake::mbarrier::wait(") and "bar_full" in text:
            out.append("__syncwarp();")
    return "\n".join(out) + "\n"


def build(kernel, edit):
    """A runner of `kernel` compiled with `edit`."""
    plan = driver.plan(kernel)
    if edit in ("fence_release", "syncwarp_wait"):
        plan.ctx.source = edited(plan.ctx.source, edit)
    compiled = driver.package(plan, driver.compile_plan(plan, tempfile.mkdtemp()), None).compiled
    if edit == "one_cta":
        compiled.launch.dynamic_shared_bytes = 200 * 1024
    return CompiledKernelRunner(compiled)


def inputs(dist, b, n, k, d, device="cuda"):
    """Fixed inputs of `dist` and their fp64 reference: (x, c, c_sq, best distance, ||x||^2, reference's scale)."""
    g = torch.Generator(device=device).manual_seed(7)
    x = sample(dist, (b, n, d), g, device).to(torch.bfloat16)
    c = sample(dist, (b, k, d), g, device).to(torch.bfloat16)
    c_sq = (c.float() ** 2).sum(-1)
    xd, cd = x.double(), c.double()
    best = torch.empty(b, n, dtype=torch.float64, device=device)
    ref = torch.empty(b, n, dtype=torch.long, device=device)
    for i in range(b):
        best[i], ref[i] = ((cd[i] ** 2).sum(-1)[None] - 2 * xd[i] @ cd[i].T).min(-1)
    x_sq = (xd ** 2).sum(-1)
    scale = x_sq + (torch.gather(cd, 1, ref[..., None].expand(-1, -1, d)) ** 2).sum(-1)
    return x, c, c_sq, best, x_sq, scale


def wrong_labels(labels, x, c, best, x_sq, scale):
    """[(b, n)] of labels outside [0, K) or not within a near-tie of the best distance."""
    k, d = c.shape[1], c.shape[2]
    lab = labels.long()
    invalid = (lab < 0) | (lab >= k)
    chosen = torch.gather(c.double(), 1, lab.clamp(0, k - 1)[..., None].expand(-1, -1, d))
    dist = ((x.double() - chosen) ** 2).sum(-1) - x_sq
    return (invalid | (dist - best > TIE_RTOL * scale)).nonzero().tolist()


def repeat(runner, data, reps):
    """Per-run wrong-label counts, the distinct wrong points over all runs, and the first run's pattern."""
    x, c, c_sq, best, x_sq, scale = data
    counts, union, pattern = [], set(), collections.Counter()
    for r in range(reps):
        labels = torch.full(x.shape[:2], -1, dtype=torch.int32, device=x.device)
        runner(x=x, c=c, c_sq=c_sq, labels=labels)
        torch.cuda.synchronize()
        wrong = wrong_labels(labels, x, c, best, x_sq, scale)
        counts.append(len(wrong))
        union.update(map(tuple, wrong))
        if r == 0:
            for _, n in wrong:
                pattern["point row %d-%d of its 64" % (n % 64 // 16 * 16, n % 64 // 16 * 16 + 15)] += 1
    return {"wrong_per_run": counts, "distinct_wrong_points_over_runs": len(union),
            "first_run_pattern": dict(pattern.most_common(8))}


def kernel_text(name, db):
    if name.endswith(".cake"):
        with open(name) as f:
            return f.read()
    if db is None:
        raise SystemExit("kernel %r is a candidate id: give --db or --run-archive" % name)
    row = db.execute("select ir_text from candidates where id=?", (int(name),)).fetchone()
    if row is None:
        raise SystemExit("no candidate %s in the database" % name)
    return row[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernels", help="comma-separated .cake files or candidate ids")
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--shape", default="32,65536,1024,128", help="B,N,K,D")
    ap.add_argument("--db", default=None, help="an agent run's agent.db")
    ap.add_argument("--run-archive", default=None, help="a gpu_run_*_files.tar.gz holding ./agent_run/agent.db")
    ap.add_argument("--edit", default="base", help="comma-separated, of: " + ", ".join(EDITS))
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "kmeans_repeat.json"))
    args = ap.parse_args(argv)
    edits = args.edit.split(",")
    for e in edits:
        if e not in EDITS:
            raise SystemExit("--edit %r: not one of %s" % (e, ", ".join(EDITS)))
    b, n, k, d = (int(v) for v in args.shape.split(","))
    db_path = args.db
    if args.run_archive:
        where = tempfile.mkdtemp()
        with tarfile.open(args.run_archive) as t:
            t.extract("./agent_run/agent.db", where)
        db_path = os.path.join(where, "agent_run", "agent.db")
    db = sqlite3.connect(db_path) if db_path else None
    data = {dist: inputs(dist, b, n, k, d) for dist in (NORMAL, CLUSTERED)}
    out = {"shape": {"B": b, "N": n, "K": k, "D": d}, "reps": args.reps, "candidates": {}}
    for name in args.kernels.split(","):
        kernel = parse_kernel(kernel_text(name, db)).kernel
        for e in edits:
            runner = build(kernel, e)
            key = "%s/%s" % (os.path.basename(name), e)
            out["candidates"][key] = {dist: repeat(runner, data[dist], args.reps) for dist in data}
            print(key, {dist: v["wrong_per_run"] for dist, v in out["candidates"][key].items()}, flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
