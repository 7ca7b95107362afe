"""Runtime contracts for Flash-KMeans: what the oracle checks and the timer times.

Assignment is judged by the KMeans metric: label agreement with the fp32 reference
and the objective within 1e-6 relative (bf16 near-ties may legally flip a label).
"""

import torch

from kernels.kmeans import reference
from runtime import distributions, metrics
from runtime.contract import Contract, TensorSpec

MIN_AGREEMENT = 0.9999
OBJECTIVE_RTOL = 1e-6


def _assign_inputs(dtype):
    def make(shape, dist, generator, device):
        b, n, k, d = shape["B"], shape["N"], shape["K"], shape["D"]
        x = distributions.sample(dist, (b, n, d), generator, device)
        # Centroids drawn from the same distribution as the points, as Lloyd's init does.
        c = distributions.sample(dist, (b, k, d), generator, device)
        return [x.to(dtype), c.to(dtype)]

    return make


def labels_metric(labels, x, c, ref_labels):
    """metrics.kmeans_labels over a batch: problems are stacked with offset centroid ids."""
    b, n, d = x.shape
    k = c.shape[1]
    # Offsetting would move an out-of-range label into another problem's range: reject first.
    if not ((labels >= 0) & (labels < k)).all():
        return metrics.MetricResult(False, 0.0, "labels outside [0, %d)" % k)
    offset = (torch.arange(b, device=labels.device) * k)[:, None]
    return metrics.kmeans_labels(
        (labels.long() + offset).reshape(-1),
        x.reshape(b * n, d),
        c.reshape(b * k, d),
        (ref_labels.long() + offset).reshape(-1),
        MIN_AGREEMENT,
        OBJECTIVE_RTOL,
    )


def assign_contract(shapes, dtype=torch.bfloat16):
    """labels = assign(x, c) over `shapes` (dicts of B, N, K, D; the first is the tuned one)."""
    return Contract(
        name="kmeans_assign",
        input_names=("x", "c"),
        output_names=("labels",),
        shapes=tuple(shapes),
        make_inputs=_assign_inputs(dtype),
        outputs=lambda inputs: [TensorSpec(tuple(inputs[0].shape[:2]), torch.int32)],
        reference=lambda inputs: [reference.assign(inputs[0], inputs[1])],
        metric=lambda outs, refs, inputs: labels_metric(outs[0], inputs[0], inputs[1], refs[0]),
    )
