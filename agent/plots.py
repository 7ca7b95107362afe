"""The report's plots (matplotlib, Agg: no display needed): progress and the cost model's accuracy."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)


def best_so_far(fitness_s, path, label):
    """Every evaluation's fitness (dots) and the best so far (steps) against the evaluation count."""
    xs = list(range(1, len(fitness_s) + 1))
    best, running = [], float("inf")
    for f in fitness_s:
        running = min(running, f)
        best.append(running * 1e6)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.scatter(xs, [f * 1e6 for f in fitness_s], s=8, alpha=0.35, label="each evaluation")
    ax.step(xs, best, where="post", color="C3", linewidth=2, label="best so far")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("%s time (us)" % label)
    ax.set_title("best so far against evaluations")
    if best:
        top = min(max(f * 1e6 for f in fitness_s), best[0] * 1.5)
        ax.set_ylim(min(best) * 0.97, top * 1.03)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def predicted_vs_measured(pairs, path):
    """Predicted against measured time per measured candidate, with the y = x line."""
    pred = [p * 1e6 for _, p, _ in pairs]
    meas = [m * 1e6 for _, _, m in pairs]
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(meas, pred, s=14)
    lo, hi = min(pred + meas) * 0.9, max(pred + meas) * 1.1
    ax.plot([lo, hi], [lo, hi], color="grey", linestyle="--", linewidth=1, label="predicted = measured")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (us)")
    ax.set_ylabel("predicted (us)")
    ax.set_title("cost model against measurements")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
