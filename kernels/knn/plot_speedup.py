"""Plot KNN result files: cake's speedup over flashlib against problem size (2 B Q M D flops), per file and op.

    python3 -m kernels.knn.plot_speedup benchmarks/results/knn_h200.json benchmarks/results/knn_dispatch_h200.json \
        --out benchmarks/results/knn_h200_speedup.png
"""

import argparse
import json
import math
import os


def points(path):
    """{label: [(flops, speedup)]} of the rows of a result file where cake and flashlib both passed and were timed."""
    with open(path) as f:
        data = json.load(f)
    out = {}
    for op in ("all_pairs", "search"):
        for row in data.get(op, []):
            cake = row["impls"].get("cake", {})
            if "speedup_vs_flashlib" not in cake:
                continue
            s = row["shape"]
            flops = 2.0 * s["B"] * s["Q"] * s["M"] * s["D"]
            out.setdefault("%s: %s" % (os.path.basename(path), op), []).append((flops, cake["speedup_vs_flashlib"]))
    return out


def main():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    series = {}
    for path in args.results:
        series.update(points(path))
    every = [sp for pts in series.values() for _, sp in pts]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for label, pts in sorted(series.items()):
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=22, alpha=0.8, label="%s (%d)" % (label, len(pts)))
    gm = math.exp(sum(math.log(s) for s in every) / len(every))
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(gm, color="gray", ls="--", lw=0.8, label="geometric mean %.2fx over %d shapes" % (gm, len(every)))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("problem size: 2 B Q M D (flops)")
    ax.set_ylabel("speedup over flashlib 0.4.0 flash_knn (median, cold L2)")
    ax.set_title("CAKE knn on the H200: shapes where both passed the oracle")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
