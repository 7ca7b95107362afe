"""The executor interface: where the pipeline's work runs.

An executor runs jobs of four kinds: `propose`, `check` and `compile` on CPU workers,
`measure` on measurement slots (one per GPU). `submit` hands it a job and returns a
ticket at once; `poll` returns (ticket, result) pairs for finished jobs, in whatever
order they finished. A result is the job's answer (agent/executors/work.py), or Failed
when the job could not be done: its code raised, or the workers that tried it kept
dying (an executor retries a job lost with its worker, node or actor a few times
first). Executors never touch the run store; the driver (pipeline.py) writes it.
"""

import dataclasses
import itertools

from agent.executors.known import KnownLog


@dataclasses.dataclass(frozen=True)
class Failed:
    """A job that gave no answer: runtime/failures.py's kind (crash, timeout, exception) and a message."""

    kind: str
    message: str


class Executor:
    name = "?"
    records_measurements = True  # measurement records land in evaluations.jsonl without the driver

    def __init__(self, cpu_slots, gpu_slots):
        self.cpu_slots, self.gpu_slots = cpu_slots, gpu_slots
        self._tickets = itertools.count(1)
        self.known = KnownLog()  # the store's hashes, fed by the driver, sent to each CPU worker in deltas

    def describe(self):
        gpus = ", %d measurement worker%s" % (self.gpu_slots, "s" * (self.gpu_slots != 1)) if self.gpu_slots else ""
        return "%s executor: %d CPU worker%s%s" % (self.name, self.cpu_slots, "s" * (self.cpu_slots != 1), gpus)

    def submit(self, kind, payload):
        """Queue a job; its ticket."""
        ticket = next(self._tickets)
        self._send(ticket, kind, payload)
        return ticket

    def poll(self, timeout):
        """[(ticket, result)] of the jobs finished since the last poll, waiting up to `timeout` s for the first."""
        return self._receive(timeout)

    def _send(self, ticket, kind, payload):
        raise NotImplementedError

    def _receive(self, timeout):
        raise NotImplementedError

    def close(self):
        """Stop every worker; jobs in flight are abandoned."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
