"""The bounded compile pool: nvcc is heavy, so compiles run on a few workers behind a short queue.

A job is admitted only while fewer than workers + queue jobs are pending; otherwise
`submit` raises QueueFull with an estimate of when a slot frees (the running mean of
job times over the workers: the next job to finish, if they are staggered), for the
client's RetryInfo. A job whose deadline
passes while it waits is not started (Expired); cancelling a queued future drops it.
Threads suffice: the heavy part, nvcc, is a subprocess. With `nice`, each worker thread
lowers its own priority, which nvcc inherits (on Linux a nice value belongs to a thread
and passes to the processes it starts), so compiles yield the CPU to the server.
"""

import concurrent.futures
import os
import threading
import time

# Prior for the mean compile time, in seconds, until jobs have been timed.
_PRIOR_SECONDS = 2.0
# Weight of the newest job in the running mean.
_SMOOTHING = 0.2


class QueueFull(Exception):
    def __init__(self, pending, retry_after):
        super().__init__("compile queue is full: %d jobs pending" % pending)
        self.pending = pending
        self.retry_after = retry_after


class Expired(Exception):
    """The job's deadline passed before a worker took it."""


def _lower_priority(nice):
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)


class CompilePool:
    def __init__(self, workers, queue, nice=0):
        if workers < 1 or queue < 0:
            raise ValueError("a compile pool needs at least 1 worker and a queue of at least 0")
        self.workers = workers
        self.capacity = workers + queue
        self._executor = concurrent.futures.ThreadPoolExecutor(
            workers, thread_name_prefix="cake-compile",
            initializer=_lower_priority if nice else None, initargs=(nice,) if nice else (),
        )
        self._idle = threading.Condition()
        self._pending = 0
        self._mean_seconds = _PRIOR_SECONDS

    @property
    def pending(self):
        with self._idle:
            return self._pending

    def submit(self, fn, deadline=None):
        """A future of fn(); `deadline` is a time.monotonic() value after which it is not started."""
        with self._idle:
            if self._pending >= self.capacity:
                raise QueueFull(self._pending, max(0.05, self._mean_seconds / self.workers))
            self._pending += 1
        try:
            future = self._executor.submit(self._run, fn, deadline)
        except RuntimeError:  # shut down
            self._release(None)
            raise
        future.add_done_callback(self._release)
        return future

    def _run(self, fn, deadline):
        if deadline is not None and time.monotonic() >= deadline:
            raise Expired()
        start = time.monotonic()
        try:
            return fn()
        finally:
            elapsed = time.monotonic() - start
            with self._idle:
                self._mean_seconds += _SMOOTHING * (elapsed - self._mean_seconds)

    def _release(self, _future):
        with self._idle:
            self._pending -= 1
            self._idle.notify_all()

    def shutdown(self, timeout):
        """Drop queued jobs and wait up to `timeout` seconds for running ones; True when all finished."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        end = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True
