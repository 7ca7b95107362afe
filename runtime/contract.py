"""The contract a kernel is checked against: its inputs, outputs, domain, reference and metric.

A Contract is data plus plain functions, so each kernel family (KMeans, KNN,
attention, the cheat suite's GEMV) describes itself once and the oracle, the timer
and the custom-op registry all read the same description.

Kernels are launched as `launch(outputs, inputs)`: the harness owns every buffer,
so it can poison outputs before the call and compare inputs after it.
"""

import dataclasses
from typing import Callable

from runtime import distributions


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of one output; shape entries may be symbolic under fake tensors."""

    shape: tuple
    dtype: object  # a torch.dtype


@dataclasses.dataclass(frozen=True)
class Contract:
    """What a kernel must compute, and on which inputs it is checked."""

    name: str
    input_names: tuple  # the kernel's inputs, in launch order
    output_names: tuple  # its outputs, in launch order
    # Points of the domain, e.g. {"m": 4096, "n": 1024}. The first is the tuned shape; the
    # others must include sizes a tuned-only kernel gets wrong (tails, tiny, odd sizes).
    shapes: tuple
    # make_inputs(shape, distribution, generator, device) -> list of input tensors.
    make_inputs: Callable
    # outputs(inputs) -> list of TensorSpec, one per output name; reads only sizes, so it
    # also serves fake tensors.
    outputs: Callable
    # reference(inputs) -> list of reference outputs, in fp32 or fp64.
    reference: Callable
    # metric(outputs, references, inputs) -> metrics.MetricResult.
    metric: Callable
    distributions: tuple = distributions.ALL

    def __post_init__(self):
        if not self.shapes:
            raise ValueError("contract %s: needs at least one shape (the tuned one first)" % self.name)
        unknown = [d for d in self.distributions if d not in distributions.ALL]
        if unknown:
            raise ValueError("contract %s: unknown distributions %s" % (self.name, unknown))

    @property
    def tuned_shape(self):
        return self.shapes[0]
