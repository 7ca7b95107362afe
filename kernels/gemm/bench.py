"""GEMM benchmark on the GPU: the CAKE IR GEMM (TMA + wgmma, warp-specialized) vs torch.matmul.

Checks every variant with the runtime's oracle at several shapes, then times it and
cuBLAS (torch.matmul) at M = N = K = 8192 in the same run with the runtime's timer
(cold L2, CUDA events, median), and counts HGMMA instructions in the cubin's SASS.

    python3 -m kernels.gemm.bench [--out results.json] [--quick]
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile

import torch

from compiler.build.driver import build
from kernels.gemm import schedules
from kernels.gemm.contract import gemm_contract
from runtime.check import check_kernel
from runtime.compiled import CompiledKernelRunner
from runtime.environment import machine_record
from runtime.timing import TimingConfig, time_kernel

CHECK_SHAPES = [
    {"M": 256, "N": 256, "K": 64},
    {"M": 1024, "N": 768, "K": 320},
    {"M": 384, "N": 2048, "K": 1024},
]
BENCH_SHAPE = {"M": 8192, "N": 8192, "K": 8192}
VARIANTS = {
    "128x256x64_s4": dict(bm=128, bn=256, bk=64, stages=4, consumers=2),
    "128x256x64_s3": dict(bm=128, bn=256, bk=64, stages=3, consumers=2),
    "128x128x64_s5": dict(bm=128, bn=128, bk=64, stages=5, consumers=2),
}


def sass_counts(cubin):
    """HGMMA / HMMA instruction counts from cuobjdump (None when cuobjdump is absent)."""
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.path.exists(tool):
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([tool, "--dump-sass", f.name], capture_output=True, text=True).stdout
    return {"HGMMA": sass.count("HGMMA"), "HMMA": sass.count("HMMA")}


def cublas(outputs, inputs):
    """The peer: torch.matmul (cuBLAS) into the harness's output buffer."""
    torch.matmul(inputs[0], inputs[1].T, out=outputs[0])


def peers():
    """name -> launch(outputs, inputs) of the GEMM's peers (the agent's gemm_bf16 contract times them)."""
    return {"cublas": cublas}


def _timed(entry, launch, bench, config, flops):
    """Check `launch` with the oracle at CHECK_SHAPES, then time it at the benchmark shape into `entry`."""
    checked = check_kernel(gemm_contract(CHECK_SHAPES), launch)
    entry["check"] = {"passed": checked.passed, "message": checked.message}
    if not checked.passed:
        return
    t = time_kernel(bench, launch, config)
    entry.update(median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms, tflops=flops / t.median_ms / 1e9,
                 verified=t.verified, timing=t.to_dict())


def run(quick=False):
    """The result file (../shared/notes/results.md's layout): one "gemm" row with cuBLAS and each variant."""
    flops = 2.0 * BENCH_SHAPE["M"] * BENCH_SHAPE["N"] * BENCH_SHAPE["K"]
    config = TimingConfig(warmup=5 if quick else 10, reps=20 if quick else 50)
    bench = gemm_contract([BENCH_SHAPE])
    impls = {"cublas": {}}
    _timed(impls["cublas"], cublas, bench, config, flops)
    for name, params in VARIANTS.items():
        built = build(schedules.gemm_sm90a(**params))
        entry = impls["cake_" + name] = {"params": params, "diagnostics": [d.message for d in built.diagnostics]}
        if not built.ok:
            entry["check"] = {"passed": False, "message": "did not build"}
            continue
        entry["resources"] = {"registers": built.compiled.resources.registers,
                              "spill_bytes": built.compiled.resources.spill_store_bytes}
        entry["sass"] = sass_counts(built.compiled.cubin)
        runner = CompiledKernelRunner(built.compiled)

        def launch(outputs, inputs, runner=runner):
            runner(A=inputs[0], B=inputs[1], C=outputs[0])

        _timed(entry, launch, bench, config, flops)
    peer = impls["cublas"].get("median_ms")
    for entry in impls.values():
        if peer and "median_ms" in entry:
            entry["vs_cublas"] = peer / entry["median_ms"]
    ours = [e["vs_cublas"] for n, e in impls.items() if n != "cublas" and "vs_cublas" in e]
    return {"machine": machine_record(), "gemm": [{"shape": dict(BENCH_SHAPE, dtype="bf16"), "impls": impls}],
            "best_vs_cublas": max(ours, default=None)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    res = run(args.quick)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, default=str)
    for name, v in res["gemm"][0]["impls"].items():
        print("%-18s %s" % (name, "%.3f ms %.0f TFLOP/s %.2fx cuBLAS check=%s sass=%s" % (
            v["median_ms"], v["tflops"], v["vs_cublas"], v["check"]["passed"], v.get("sass"))
            if "median_ms" in v else "FAILED: %s %s" % (v.get("diagnostics"), v.get("check"))))


if __name__ == "__main__":
    main()
