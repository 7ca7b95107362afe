"""Plot a dispatch result file: speedup over flashlib against problem size (2 B N K D flops), one colour per D tile
(shapes on the aligned tiles; those off them, D % 8 != 0 or D > 256, as crosses; the geometric mean over all).

    python3 -m kernels.kmeans.plot_dispatch benchmarks/results/kmeans_dispatch_h200.json [--out FILE.png]
"""

import argparse
import json
import math


def main():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with open(args.result) as f:
        data = json.load(f)
    measured = [r for r in data["assign"] if "speedup_vs_flashlib" in r]
    rows = [r for r in measured if str(r.get("set", "kernel")).startswith("kernel")]
    fallback = [r for r in measured if r not in rows]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for tile in (16, 32, 64, 128, 256):
        sel = [r for r in rows if tile // 2 < r["shape"]["D"] <= tile]
        if sel:
            ax.scatter([r["flops"] for r in sel], [r["speedup_vs_flashlib"] for r in sel], s=14, alpha=0.75,
                       label="D tile %d (%d shapes)" % (tile, len(sel)))
    if fallback:
        ax.scatter([r["flops"] for r in fallback], [r["speedup_vs_flashlib"] for r in fallback], s=30, marker="x",
                   color="black", label="off the aligned tiles: D %% 8 != 0 or D > 256 (%d)" % len(fallback))
    gm = math.exp(sum(math.log(r["speedup_vs_flashlib"]) for r in measured) / len(measured))
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(gm, color="gray", ls="--", lw=0.8, label="geometric mean %.2fx" % gm)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("problem size: 2 B N K D (flops)")
    ax.set_ylabel("speedup over flashlib 0.4.0 (median, cold L2)")
    ax.set_title("kmeans_assign dispatcher on %s: %d untuned shapes, each checked first"
                 % (data["machine"].get("gpu_name", "GPU"), len(measured)))
    ax.legend(fontsize=8)
    ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    fig.savefig(args.out or args.result.replace(".json", ".png"), dpi=110)


if __name__ == "__main__":
    main()
