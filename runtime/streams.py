"""Stream discipline for checks and timing: what "finished" means, and a stream gate.

A kernel must do its work on torch's current stream (or on streams it orders with
it). The oracle therefore waits on the current stream only before reading outputs,
and the timer waits on the whole device before reading events. The gate holds the
current stream busy before outputs are poisoned: work the candidate issues on an
unordered stream runs during the gate, and the poison written after it overwrites
that work, so such a kernel reliably shows unwritten outputs instead of winning a
race. On a CPU device every function here is a no-op (the unit tests run there).
"""

import torch

# ~10 ms at H200 boost clocks (longer at lower clocks): far longer than any check-sized
# launch, so unordered work finishes inside the gate.
GATE_CYCLES = 20_000_000


def _is_cuda(device):
    return torch.device(device).type == "cuda"


def gate(device):
    """Keep `device`'s current stream busy for GATE_CYCLES GPU cycles."""
    if _is_cuda(device):
        torch.cuda._sleep(GATE_CYCLES)


def sync_current(device):
    """Wait for torch's current stream only: unordered work on other streams may still run."""
    if _is_cuda(device):
        torch.cuda.current_stream(device).synchronize()


def sync_all(device):
    """Wait for all work on the device, on every stream."""
    if _is_cuda(device):
        torch.cuda.synchronize(device)
