"""The correctness oracle: is a kernel right on any valid input of its contract?

For every case (each distribution at each shape of the domain, tuned shape first)
the oracle draws fresh inputs, keeps pristine copies, poisons the outputs behind a
stream gate (runtime/streams.py), launches, waits on torch's current stream only,
and then rejects, in this order:
  side_stream        outputs change once the whole device is synchronised, or are
                     written only when the whole device is synchronised around the call
  unwritten_output   an output element still holds the poison
  nan_or_inf         a NaN or Inf in a float output
  input_mutated      an input's bits changed
  wrong_result       the contract's metric fails against the reference computed from
                     the pristine inputs; refined into
    stale_result          when the output equals an earlier case's output at that shape
    shape_generalization  when the tuned shape passed and this shape does not
The first failing case decides; every case run is reported.
"""

import dataclasses
import secrets

import torch

from runtime import failures, poison, streams


@dataclasses.dataclass(frozen=True)
class CaseResult:
    index: int
    shape: dict
    distribution: str
    seed: int
    passed: bool
    kind: object  # a failures kind, or None when passed
    message: str
    metric: object  # the metric's value, or None when the case failed before the metric


@dataclasses.dataclass(frozen=True)
class CheckResult:
    passed: bool
    kind: object  # the first failing case's kind, or None
    message: str
    seed: int  # base seed: case i used seed + i, so a failure can be replayed
    cases: tuple

    def to_dict(self):
        return dataclasses.asdict(self)


def plan(contract):
    """The cases to run: (shape, distribution) pairs, every distribution at the tuned shape first.

    Two fresh inputs at the same shape come back to back at the start, so a kernel that
    returns its previous result fails on the second case.
    """
    return [(shape, dist) for shape in contract.shapes for dist in contract.distributions]


def check_kernel(contract, launch, device="cuda", seed=None):
    """Check `launch(outputs, inputs)` against `contract`; returns a CheckResult."""
    seed = secrets.randbits(62) if seed is None else seed
    history = {}  # shape key -> [(case index, outputs)] of passed cases
    results = []
    for index, (shape, dist) in enumerate(plan(contract)):
        case_seed = seed + index
        kind, message, metric, outputs = _run_case(contract, launch, shape, dist, case_seed, device)
        key = tuple(sorted(shape.items()))
        if kind is None:
            history.setdefault(key, []).append((index, outputs))
        else:
            kind, message = _refine(kind, message, history.get(key, []), outputs, shape, contract.tuned_shape)
            message = "case %d (%s, %s, seed %d): %s" % (index, _shape_text(shape), dist, case_seed, message)
        results.append(CaseResult(index, dict(shape), dist, case_seed, kind is None, kind, message, metric))
        if kind is not None:
            return CheckResult(False, kind, message, seed, tuple(results))
    summary = "passed %d cases: %d shapes x %d distributions" % (
        len(results),
        len(contract.shapes),
        len(contract.distributions),
    )
    return CheckResult(True, None, summary, seed, tuple(results))


def _allocate(contract, inputs, device):
    return [torch.empty(tuple(s.shape), dtype=s.dtype, device=device) for s in contract.outputs(inputs)]


def _run_case(contract, launch, shape, dist, seed, device):
    """(kind or None, message, metric value or None, outputs) for one case."""
    generator = torch.Generator(device=device).manual_seed(seed)
    inputs = list(contract.make_inputs(shape, dist, generator, device))
    pristine = [t.clone() for t in inputs]
    outputs = _allocate(contract, inputs, device)
    streams.gate(device)
    for out in outputs:
        poison.fill(out)
    launch(outputs, inputs)
    streams.sync_current(device)
    seen = [out.clone() for out in outputs]  # what a caller ordered after the current stream reads
    streams.sync_all(device)

    if not all(poison.bitwise_equal(a, b) for a, b in zip(seen, outputs)):
        return (
            failures.SIDE_STREAM,
            "outputs changed after torch's current stream had finished: the kernel writes them "
            "on a stream not ordered with the current one",
            None,
            seen,
        )
    for name, out in zip(contract.output_names, seen):
        unwritten = int(poison.poisoned_mask(out).sum().item())
        if unwritten:
            if _written_when_device_synchronized(contract, launch, pristine, device):
                return (
                    failures.SIDE_STREAM,
                    "output %s is unwritten when the caller waits on torch's current stream, and written "
                    "when the whole device is synchronised: the kernel runs on an unordered stream" % name,
                    None,
                    seen,
                )
            return (
                failures.UNWRITTEN_OUTPUT,
                "%d of %d elements of output %s were never written" % (unwritten, out.numel(), name),
                None,
                seen,
            )
    for name, out in zip(contract.output_names, seen):
        if out.dtype.is_floating_point:
            bad = int((~torch.isfinite(out)).sum().item())
            if bad:
                return failures.NAN_OR_INF, "%d of %d elements of output %s are NaN or Inf" % (bad, out.numel(), name), None, seen
    mutated = [name for name, now, before in zip(contract.input_names, inputs, pristine) if not poison.bitwise_equal(now, before)]
    if mutated:
        return failures.INPUT_MUTATED, "inputs modified by the call: %s" % ", ".join(mutated), None, seen
    result = contract.metric(seen, contract.reference(pristine), pristine)
    if not result.passed:
        return failures.WRONG_RESULT, result.message, result.value, seen
    return None, result.message, result.value, seen


def _written_when_device_synchronized(contract, launch, pristine, device):
    """True when a call fenced by device-wide synchronisation writes every output element."""
    inputs = [t.clone() for t in pristine]
    outputs = _allocate(contract, inputs, device)
    for out in outputs:
        poison.fill(out)
    streams.sync_all(device)
    launch(outputs, inputs)
    streams.sync_all(device)
    return not any(bool(poison.poisoned_mask(out).any().item()) for out in outputs)


def _refine(kind, message, earlier, outputs, shape, tuned_shape):
    """Sharpen a value failure into stale_result or shape_generalization when the evidence says so."""
    if kind == failures.WRONG_RESULT:
        for index, before in earlier:
            if all(poison.bitwise_equal(a, b) for a, b in zip(outputs, before)):
                return failures.STALE_RESULT, "returned exactly the output of case %d, whose inputs differed (%s)" % (
                    index,
                    message,
                )
    if kind in (failures.WRONG_RESULT, failures.UNWRITTEN_OUTPUT) and shape != tuned_shape:
        # Cases at the tuned shape run first and all passed, or the check would have stopped.
        return failures.SHAPE_GENERALIZATION, "correct at the tuned shape %s, not at %s: %s: %s" % (
            _shape_text(tuned_shape),
            _shape_text(shape),
            kind,
            message,
        )
    return kind, message


def _shape_text(shape):
    return " ".join("%s=%s" % kv for kv in shape.items())
