"""The cheat suite's contract: y = A @ x for fp32 A (m x n, row-major) and x (n).

A matrix-vector product is small enough to check exhaustively yet has what the
cheats need: a reduction whose tail a shape-specialised kernel can drop, values a
careless overflow guard can turn into NaN, inputs a kernel can scribble on, and a
result a kernel can cache. The domain's first shape is the "tuned" one; the others
include a single element, odd sizes and row lengths that are not multiples of 128.
"""

import torch

from runtime import distributions, metrics
from runtime.contract import Contract, TensorSpec

TUNED = {"m": 4096, "n": 1024}
SHAPES = (TUNED, {"m": 1, "n": 1}, {"m": 7, "n": 33}, {"m": 1000, "n": 1000}, {"m": 333, "n": 4097}, {"m": 2048, "n": 256})

# Error allowed relative to (|A| @ |x|)_i: fp32 accumulation over up to 4097 terms stays
# near 1e-6 of that bound; a dropped tail, zeros or stale values are off by 1e-2 or more.
RTOL = 1e-4


def make_inputs(shape, distribution, generator, device):
    a = distributions.sample(distribution, (shape["m"], shape["n"]), generator, device)
    x = distributions.sample(distribution, (shape["n"],), generator, device)
    return [a, x]


def outputs(inputs):
    a, _ = inputs
    return [TensorSpec((a.shape[0],), torch.float32)]


def reference(inputs):
    a, x = inputs
    return [a.to(torch.float64) @ x.to(torch.float64)]


def metric(outs, refs, inputs):
    a, x = inputs
    scale = a.to(torch.float64).abs() @ x.to(torch.float64).abs()
    return metrics.allclose(outs[0], refs[0], rtol=RTOL, scale=scale)


def contract():
    """The GEMV contract (a function, so a worker process can name and build it)."""
    return Contract(
        name="gemv_f32",
        input_names=("A", "x"),
        output_names=("y",),
        shapes=SHAPES,
        make_inputs=make_inputs,
        outputs=outputs,
        reference=reference,
        metric=metric,
    )
