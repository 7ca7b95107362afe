"""KDA forward benchmark on the GPU: CAKE's chunk_kda beside fla-core's chunk_kda (its Triton path).

FlashKDA's own case set (T = 8192 with H = 96 and 64: fixed length, varlen
[1300, 547, 2048, 963, 271, 3063], varlen 8 x 1024), then T = 32768 H = 32 and
T = 131072 H = 16, all B = 1, K = V = 128, with FlashKDA's benchmark inputs: bf16 q, k
(unit rows, l2norm in kernel), v, raw g with the gate in kernel (A_log, dt_bias,
lower_bound = -5), beta logits (sigmoid in kernel), an fp32 initial state and the final
state out. Every implementation is checked first against a float64 chunked reference
of the same activated inputs (relative L2 of o and of the final state at most
--tolerance); then timed with triton.testing.do_bench (median, L2 flushed between reps),
ours also per phase (the intra-chunk and chain kernels alone, `phases_ms`).
fla runs with FLA_FLASH_KDA=0 under inference mode, so its own Triton kernels are timed.

    python3 -m kernels.kda.bench [--out FILE] [--cases fixed,varlen,long|long32k] [--checks-only] [--peer-seconds S]

Ours runs at every shape first; the peers then shape by shape, T = 32768 H = 32 first, while
--peer-seconds of the run are left (fla's first call at a shape autotunes its Triton kernels
for a minute or more); a peer not run says so in its row.
"""

import argparse
import json
import os
import time

import torch

from kernels.kda import api, reference
from runtime.environment import machine_record

LOWER_BOUND = -5.0
FLASHKDA_SETS = {"fixed": [[8192]], "varlen": [[1300, 547, 2048, 963, 271, 3063], [1024] * 8]}
LONG = [([32768], 32), ([131072], 16)]
# FlashKDA measured on this H200 (docs: /work/shared/notes/anchors.md, 2026-11-30; not rebuilt in this run).
FLASHKDA_H200_MS = {(8192, 96, "fixed"): 1.45, (8192, 64, "fixed"): 1.24, (32768, 32, "fixed"): 4.08}


def cases(which):
    out = []
    for name in which:
        if name in FLASHKDA_SETS:
            for heads in (96, 64):
                out += [(lens, heads) for lens in FLASHKDA_SETS[name]]
        elif name == "long":
            out += LONG
        elif name == "long32k":  # the 2x-fla shape alone
            out += LONG[:1]
        else:
            raise SystemExit("unknown case set %r (fixed, varlen, long, long32k)" % name)
    return out


def inputs(lens, heads, gen, dev="cuda"):
    """FlashKDA's benchmark inputs (benchmarks/bench_fwd.py there), with a random fp32 initial state."""
    T, D = sum(lens), 128

    def randn(*shape, dtype=torch.float32):
        return torch.randn(shape, generator=gen, device=dev, dtype=torch.float32).to(dtype)

    q = torch.nn.functional.normalize(randn(1, T, heads, D), dim=-1).to(torch.bfloat16)
    k = torch.nn.functional.normalize(randn(1, T, heads, D), dim=-1).to(torch.bfloat16)
    kw = dict(
        q=q, k=k, v=randn(1, T, heads, D, dtype=torch.bfloat16), g=randn(1, T, heads, D, dtype=torch.bfloat16),
        beta=randn(1, T, heads, dtype=torch.bfloat16),
        initial_state=randn(len(lens), heads, D, D) * 0.1, output_final_state=True,
        use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
        A_log=torch.rand(heads, generator=gen, device=dev), dt_bias=torch.rand(heads * D, generator=gen, device=dev),
        lower_bound=LOWER_BOUND,
    )
    if len(lens) > 1:
        kw["cu_seqlens"] = torch.tensor([0] + [sum(lens[: i + 1]) for i in range(len(lens))], device=dev, dtype=torch.long)
    return kw


def activated(kw):
    """The kernels' inputs after fla's in-kernel options: normalised q, k, log-space gates, beta probabilities."""
    q, k = kw["q"], kw["k"]
    if kw.get("use_qk_l2norm_in_kernel"):
        q, k = api.l2norm(q), api.l2norm(k)
    g = api.gate(kw["g"], kw.get("A_log"), kw.get("dt_bias"), kw.get("lower_bound")) if kw.get("use_gate_in_kernel") else kw["g"]
    beta = torch.sigmoid(kw["beta"].float()) if kw.get("use_beta_sigmoid_in_kernel") else kw["beta"]
    return q, k, kw["v"], g, beta


def expected(kw, dtype=torch.float64, algo="chunked"):
    q, k, v, g, beta = activated(kw)
    return reference.token_first(q, k, v, g, beta, scale=kw.get("scale"), initial_state=kw.get("initial_state"),
                                 cu_seqlens=kw.get("cu_seqlens"), dtype=dtype, algo=algo)


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def check(fn, kw, want, tolerance):
    o, s = fn(**kw)
    torch.cuda.synchronize()
    err_o, err_s = rel(o, want[0]), rel(s, want[1])
    finite = bool(torch.isfinite(o).all()) and bool(torch.isfinite(s).all())
    passed = finite and err_o <= tolerance and err_s <= tolerance
    return {"passed": passed, "rel_l2_o": err_o, "rel_l2_state": err_s,
            "message": "rel L2 o %.2e, state %.2e (tolerance %.0e)%s" % (err_o, err_s, tolerance, "" if finite else ", non-finite")}


def implementations():
    out = {"cake": api.chunk_kda}
    os.environ["FLA_FLASH_KDA"] = "0"
    try:
        from fla.ops.kda import chunk_kda as fla_kda

        def fla(**kw):
            with torch.inference_mode():
                return fla_kda(**kw)

        out["fla"] = fla
    except ImportError as e:
        print("fla unavailable:", e)
    return out


def correctness_cases():
    """Small cases against the float32 recurrence: tails, batches, states, saturated gates, varlen, raw options."""
    return [
        dict(B=1, lens=[200], H=2, state=True, mode="fla"),  # partial tail chunk, in-kernel options
        dict(B=2, lens=[130], H=3, state=False, mode="log"),  # batch > 1, precomputed gates at [-5, 0]
        dict(B=1, lens=[64], H=1, state=True, mode="saturated"),  # every gate at lower_bound = -5
        dict(B=1, lens=[100, 64, 37, 300, 1], H=2, state=True, mode="fla"),  # varlen with tails and a 1-token sequence
        dict(B=1, lens=[256], H=2, state=True, mode="softplus"),  # the softplus gate (no lower_bound)
        dict(B=1, lens=[150], H=2, state=True, mode="log_bf16"),  # precomputed gates and beta in bf16
        dict(B=1, lens=[90, 200], H=2, state=False, mode="fla_f32"),  # raw gate inputs in fp32, varlen
    ]


def correctness_inputs(case, gen, dev="cuda"):
    B, lens, H, D = case["B"], case["lens"], case["H"], 128
    T = sum(lens)
    kw = inputs(lens, H, gen, dev) if B == 1 else inputs([T] * B, H, gen, dev)
    if B > 1:  # B sequences as a batch, not varlen
        kw = {n: (t.reshape(B, T, *t.shape[2:]) if n in ("q", "k", "v", "g", "beta") else t) for n, t in kw.items()}
        kw.pop("cu_seqlens", None)
    if not case["state"]:
        kw["initial_state"] = None
    if case["mode"] in ("log", "saturated", "log_bf16"):
        kw.update(use_gate_in_kernel=False, A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False,
                  use_qk_l2norm_in_kernel=False, lower_bound=None)
        kw["q"], kw["k"] = api.l2norm(kw["q"]), api.l2norm(kw["k"])
        shape = kw["q"].shape
        kw["g"] = torch.full(shape, LOWER_BOUND, device=dev) if case["mode"] == "saturated" else \
            LOWER_BOUND * torch.rand(shape, generator=gen, device=dev)
        kw["beta"] = torch.rand(shape[:3], generator=gen, device=dev)
        if case["mode"] == "log_bf16":
            kw["g"], kw["beta"] = kw["g"].bfloat16(), kw["beta"].bfloat16()
    if case["mode"] == "fla_f32":
        kw["g"] = kw["g"].float()
    if case["mode"] == "softplus":
        kw["lower_bound"] = None
    return kw


def kernels():
    """The IR kernels this benchmark and the GPU tests launch (the intra variant of each case's options, the
    chain), to build ahead of time: python -m compiler.build.prebuild kernels.kda.bench:kernels --out prebuilt"""
    from kernels.kda import schedules

    variants = {(None, gd, False, False) for gd in ("f32", "bf16")}  # precomputed log-gates ("log", "log_bf16")
    variants |= {(fn, "bf16", True, True) for fn in ("sigmoid", "softplus")}  # inputs(): FlashKDA's options
    variants.add(("sigmoid", "f32", True, True))  # "fla_f32"
    return [schedules.intra_sm90a(gate=fn, g_dtype=gd, l2norm=l2, beta_sigmoid=bs) for fn, gd, l2, bs in sorted(
        variants, key=str)] + [schedules.chain_sm90a()]


def _time(fn, kw):
    return time_call(lambda: fn(**kw))


def time_call(launch):
    """Median ms of a zero-argument launch (triton.testing.do_bench, L2 flushed between reps)."""
    from triton.testing import do_bench

    return do_bench(launch, warmup=25, rep=200, return_mode="median")


def phase_times(kw):
    """ms of chunk_kda's two kernels, each alone, on these inputs (the torch passes excluded)."""
    launches = api.phases(**kw)
    return {name: time_call(launches[name]) for name in ("intra", "chain")}


def _cell(entry):
    return ("%.3f ms" % entry["median_ms"]) if "median_ms" in entry else "FAIL " + entry["check"]["message"]


def bench(args, gen, result):
    """Ours at every shape first, then each peer shape by shape (the 2x-fla shape first) while time is left."""
    deadline = time.monotonic() + args.peer_seconds
    rows = []
    for lens, heads in cases(args.cases.split(",")):
        kw = inputs(lens, heads, gen)
        want = expected(kw)
        shape = {"B": 1, "T": sum(lens), "H": heads, "K": 128, "V": 128, "seq_lens": lens if len(lens) > 1 else None,
                 "dtype": "bf16"}
        entry = {"check": check(api.chunk_kda, kw, want, args.tolerance)}
        if entry["check"]["passed"]:
            entry["median_ms"] = _time(api.chunk_kda, kw)
            entry["phases_ms"] = phase_times(kw)
        row = {"shape": shape, "impls": {"cake": entry}}
        published = FLASHKDA_H200_MS.get((sum(lens), heads, "fixed" if len(lens) == 1 else "varlen"))
        if published:
            row["impls"]["flashkda_published"] = {"check": {"passed": None, "message": "not rebuilt in this run: "
                                                  "measured on this H200 on 2026-11-30 (shared/notes/anchors.md)"},
                                                  "median_ms": published}
        result["forward"].append(row)
        rows.append((row, kw, want))
        _write(args.out, result)  # row by row: a run cut short keeps what it measured
        print("T=%-6d H=%-3d %-40s cake %s %s" % (sum(lens), heads, str(lens if len(lens) > 1 else "fixed"), _cell(entry),
                                                  entry.get("phases_ms", "")))
    peers = implementations()
    peers.pop("cake")
    order = sorted(rows, key=lambda r: (r[0]["shape"]["T"] != 32768, r[0]["shape"]["seq_lens"] is not None))
    for row, kw, want in order:
        for name, fn in peers.items():
            if time.monotonic() > deadline:
                row["impls"][name] = {"check": {"passed": None, "message": "not run: out of this run's device time"}}
                continue
            entry = {"check": check(fn, kw, want, args.tolerance)}
            if entry["check"]["passed"]:
                entry["median_ms"] = _time(fn, kw)
            row["impls"][name] = entry
            print("T=%-6d H=%-3d %s %s" % (row["shape"]["T"], row["shape"]["H"], name, _cell(entry)))
        _write(args.out, result)


def _write(path, result):
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="kda_h200.json")
    ap.add_argument("--cases", default="fixed,varlen,long")
    ap.add_argument("--tolerance", type=float, default=5e-3)
    ap.add_argument("--checks-only", action="store_true")
    ap.add_argument("--peer-seconds", type=float, default=float("inf"),
                    help="time the peers only while this many seconds of the run are left (their JIT autotuning is long)")
    args = ap.parse_args(argv)
    gen = torch.Generator(device="cuda").manual_seed(0)
    result = {"machine": machine_record(), "checks": [], "forward": []}
    for case in correctness_cases():
        kw = correctness_inputs(case, gen)
        want = expected(kw, dtype=torch.float32, algo="recurrent")
        got = check(api.chunk_kda, kw, want, args.tolerance)
        result["checks"].append({"case": case, **got})
        print("check %-70s %s %s" % (case, "ok  " if got["passed"] else "FAIL", got["message"]))
    if not args.checks_only:
        bench(args, gen, result)
    _write(args.out, result)
    failed = [c for c in result["checks"] if not c["passed"]]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
