"""The timing protocol: how long a kernel takes, measured so that it cannot fool the timer.

Per rep: the outputs are re-poisoned (fresh: nothing from an earlier rep survives),
a buffer twice the L2 size is overwritten (cold L2: inputs come from HBM, as in a
real pipeline), then CUDA events on torch's current stream bracket the one launch.
Reps alternate between independent input sets, so a kernel cannot skip work
because it saw the same input last time. After the reps the whole device is
synchronised (every stream) before any event is read; median, p10 and p90 are
reported with every sample. The timed outputs are then verified against the
reference, separately from the check that admitted the kernel, and the record
names the GPU, its clocks, the driver and the library versions.
"""

import dataclasses
import secrets

import torch

from runtime import distributions, environment, poison, streams
from runtime.loader import device_attribute


@dataclasses.dataclass(frozen=True)
class TimingConfig:
    warmup: int = 10
    reps: int = 100
    flush_factor: float = 2.0  # L2 flush buffer size, in multiples of the L2 size
    input_sets: int = 2  # independent inputs the reps alternate between

    def __post_init__(self):
        if self.reps < 1 or self.warmup < 0 or self.input_sets < 1 or self.flush_factor < 1:
            raise ValueError("timing needs reps >= 1, warmup >= 0, input_sets >= 1, flush_factor >= 1: %r" % (self,))


@dataclasses.dataclass(frozen=True)
class TimingResult:
    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    reps: int
    warmup: int
    flush_bytes: int
    shape: dict
    verified: bool  # the timed outputs match the reference
    verification: str
    environment: dict
    times_ms: tuple

    def to_dict(self):
        return dataclasses.asdict(self)


def quantile(values, q):
    """The q-quantile (0..1) of `values`, interpolating linearly between order statistics."""
    s = sorted(values)
    if not s:
        raise ValueError("quantile of no values")
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(times_ms):
    """Median, p10, p90, mean, min and max of the samples."""
    return {
        "median_ms": quantile(times_ms, 0.5),
        "p10_ms": quantile(times_ms, 0.1),
        "p90_ms": quantile(times_ms, 0.9),
        "mean_ms": sum(times_ms) / len(times_ms),
        "min_ms": min(times_ms),
        "max_ms": max(times_ms),
    }


def flush_bytes(l2_bytes, factor):
    """Size of the buffer written between reps to evict the L2, rounded up to 1 MiB."""
    mib = 1 << 20
    return -(-int(l2_bytes * factor) // mib) * mib


def _allocate(contract, inputs, device):
    return [torch.empty(tuple(s.shape), dtype=s.dtype, device=device) for s in contract.outputs(inputs)]


def verify(contract, outputs, inputs):
    """(ok, message): outputs written, finite and within the contract's metric for `inputs`."""
    for name, out in zip(contract.output_names, outputs):
        if poison.poisoned_mask(out).any():
            return False, "timed output %s has unwritten elements" % name
        if out.dtype.is_floating_point and not torch.isfinite(out).all():
            return False, "timed output %s has NaN or Inf" % name
    result = contract.metric(outputs, contract.reference(inputs), inputs)
    return result.passed, "timed outputs: " + result.message


def time_kernel(contract, launch, config=TimingConfig(), shape=None, seed=None, environment_record=None):
    """Time `launch(outputs, inputs)` on the current CUDA device at `shape` (default: tuned).

    `environment_record` (from environment.collect) saves a caller timing many shapes the
    nvidia-smi call per measurement; it should be taken in the same run.
    """
    device = torch.device("cuda", torch.cuda.current_device())
    shape = dict(contract.tuned_shape if shape is None else shape)
    generator = torch.Generator(device=device).manual_seed(secrets.randbits(62) if seed is None else seed)
    sets = [contract.make_inputs(shape, distributions.NORMAL, generator, device) for _ in range(config.input_sets)]
    outs = [_allocate(contract, inputs, device) for inputs in sets]
    flush = torch.empty(
        flush_bytes(device_attribute("L2_CACHE_SIZE", device.index), config.flush_factor), dtype=torch.int8, device=device
    )
    streams.sync_all(device)
    for i in range(config.warmup):
        launch(outs[i % len(sets)], sets[i % len(sets)])
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(config.reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(config.reps)]
    streams.sync_all(device)
    for i in range(config.reps):
        k = i % len(sets)
        for out in outs[k]:
            poison.fill(out)
        flush.zero_()
        starts[i].record()
        launch(outs[k], sets[k])
        ends[i].record()
    streams.sync_all(device)  # every stream: nothing the kernel started is still running
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    checks = [verify(contract, outs[k], sets[k]) for k in range(len(sets))]
    failed = [msg for ok, msg in checks if not ok]
    return TimingResult(
        reps=config.reps,
        warmup=config.warmup,
        flush_bytes=flush.numel(),
        shape=shape,
        verified=not failed,
        verification=failed[0] if failed else checks[0][1],
        environment=environment_record or environment.collect(device.index),
        times_ms=tuple(times),
        **summarize(times),
    )
