"""The KDA forward's runtime contract: inputs, domain, reference and metric for the oracle and timer.

(o [B, H, T, V], final_state [B, H, K, V]) = KDA(q, k, v, g, beta) from a zero state, head-first as
reference.recurrent (its module docstring has the recurrence), with scale K^-0.5 and caller-normalised
q, k: each input set is one of the runtime's distributions mapped into the kernels' domain by
reference.to_domain (unit-norm q and k rounded to bf16, g in [-2, 0], beta in (0, 1)). Both outputs are f32
and are judged by relative L2 error against the float64 recurrence: REL_L2 admits the chunked
kernels' bf16 intermediates (kernels/kda/schedules.py's tolerance); an f32 recurrence is near 1e-6.
"""

import torch

from kernels.kda import reference
from kernels.kda.schedules import HEAD  # K = V, what the kernels are specialised to
from runtime import distributions, metrics
from runtime.contract import Contract, TensorSpec

REL_L2 = 1e-2


def _inputs(shape, dist, generator, device):
    b, h, t = shape["B"], shape["H"], shape["T"]

    def sample(*dims):
        return distributions.sample(dist, dims, generator, device)

    # A large-scale draw saturates the gates and write strengths (g near 0 or its bound, beta near 0 or 1),
    # which is part of the domain too.
    return list(reference.to_domain(sample(b, h, t, HEAD), sample(b, h, t, HEAD), sample(b, h, t, HEAD),
                                    sample(b, h, t, HEAD), sample(b, h, t)))


def _reference(inputs):
    o, s = reference.recurrent(*inputs)
    return [o.float(), s.float()]


def _metric(outs, refs, inputs):
    results = [metrics.rel_l2(out, ref, REL_L2) for out, ref in zip(outs, refs)]
    message = "o: %s; final state: %s" % (results[0].message, results[1].message)
    return metrics.MetricResult(all(r.passed for r in results), max(r.value for r in results), message)


def kda_contract(shapes):
    """A Contract over `shapes` (dicts of B, H, T; the first is the tuned one)."""
    return Contract(
        name="kda_forward",
        input_names=("q", "k", "v", "g", "beta"),
        output_names=("o", "final_state"),
        shapes=tuple(dict(s) for s in shapes),
        make_inputs=_inputs,
        outputs=lambda inputs: [TensorSpec(tuple(inputs[2].shape), torch.float32),
                                TensorSpec(tuple(inputs[0].shape[:2]) + (HEAD, HEAD), torch.float32)],
        reference=_reference,
        metric=_metric,
        distributions=(distributions.NORMAL, distributions.UNIFORM, distributions.CLUSTERED, distributions.LARGE),
    )
