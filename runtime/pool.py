"""Isolation: every evaluation runs in a spawned worker process under a wall-clock limit.

A candidate kernel can fault (an illegal address poisons the whole CUDA context),
hang (the launch never returns) or crash the process. The parent never touches the
GPU: it hands a Job to a worker and waits at most the job's time limit. A hang is
killed and reported as `timeout`, a dead worker as `crash`, and an exception as the
kind runtime/failures.py gives it; a worker whose CUDA context is poisoned reports
and exits. Any worker that is gone is replaced before the next job, and every
record is appended durably to the results file the moment it arrives.

Workers use the "spawn" start method: CUDA cannot survive fork.
"""

import dataclasses
import datetime
import multiprocessing
import os
import signal
import time
import traceback

from runtime import failures, names, results_log

KILL_WAIT_S = 60.0  # a process killed mid-kernel exits once the driver has torn its context down
STOP_WAIT_S = 10.0
EXIT_CONTEXT_POISONED = 3  # a worker's exit status after reporting a context-poisoning failure


@dataclasses.dataclass(frozen=True)
class Job:
    """One unit of work: `task(payload)` in a worker, answered within `time_limit_s`."""

    task: str  # "package.module:function"; the function returns a picklable, JSON-able result
    payload: object  # picklable
    ir_hash: str  # names the candidate in every failure signature
    time_limit_s: float
    label: str = ""


class WorkerStartError(RuntimeError):
    """A worker process could not be started (its initializer failed, or it never answered)."""


def _worker_main(conn, initializer, env=None):
    """The worker process: apply `env`, run the initializer, then jobs until told to stop."""
    # Ctrl-C reaches the whole process group: the parent decides what stops, and stops us itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.update(env or {})  # before the initializer: CUDA_VISIBLE_DEVICES must precede CUDA's start
    try:
        if initializer:
            names.resolve(initializer)()
    except BaseException as exc:  # report every failure to start, whatever it is
        conn.send(("init_failed", "%s: %s" % (type(exc).__name__, exc), traceback.format_exc()))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except EOFError:  # the parent is gone
            return
        if job is None:
            return
        try:
            result = names.resolve(job.task)(job.payload)
            conn.send(("ok", result))
        except BaseException as exc:  # the candidate's failure is data for the parent, never ours
            kind, poisoned = failures.classify_exception(exc)
            conn.send(("failed", kind, "%s: %s" % (type(exc).__name__, exc), traceback.format_exc(), poisoned))
            if poisoned:
                os._exit(EXIT_CONTEXT_POISONED)  # skip atexit: CUDA teardown on a poisoned context can hang


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, ctx, initializer, start_timeout_s, env=None):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, initializer, env), daemon=True,
                                name="cake-eval-worker")
        self.proc.start()
        child.close()  # the parent keeps only its end, so a dead worker reads as EOF
        self.jobs = 0
        if not self.conn.poll(start_timeout_s):
            self.kill()
            raise WorkerStartError("worker did not start within %.0f s" % start_timeout_s)
        try:
            msg = self.conn.recv()
        except EOFError:
            self.kill()
            raise WorkerStartError("worker died while starting: %s" % describe_exit(self.proc.exitcode)) from None
        if msg[0] != "ready":
            self.kill()
            raise WorkerStartError("worker initializer %s failed: %s\n%s" % (initializer, msg[1], msg[2]))

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.is_alive()

    def kill(self):
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(KILL_WAIT_S)
        self.conn.close()

    def stop(self):
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(STOP_WAIT_S)
        self.kill()


def describe_exit(exitcode):
    """A worker's exit status in words."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return "killed by %s" % signal.Signals(-exitcode).name
        except ValueError:
            return "killed by signal %d" % -exitcode
    return "exited with status %d" % exitcode


class WorkerPool:
    """Runs Jobs one at a time in a worker process, replacing it after faults, hangs and crashes.

    One job at a time: evaluations share one GPU, and concurrent ones would time each other.
    """

    def __init__(self, results_path=None, initializer=None, start_timeout_s=300.0, max_jobs_per_worker=200, env=None):
        self.results_path = results_path
        self.initializer = initializer  # "package.module:function" run once in each new worker
        self.env = dict(env or {})  # set in each new worker before its initializer (e.g. CUDA_VISIBLE_DEVICES)
        self.start_timeout_s = start_timeout_s
        self.max_jobs_per_worker = max_jobs_per_worker  # bounds what a long-lived worker accumulates (None: never)
        self._ctx = multiprocessing.get_context("spawn")
        self._worker = None
        self.workers_started = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def start(self):
        """Start the worker now rather than at the first job (WorkerStartError if it cannot start)."""
        self._ready_worker()

    def terminate(self):
        """Kill the worker now, whatever it is doing (safe from another thread: a job in flight ends as a crash)."""
        worker = self._worker
        if worker is not None and worker.proc.is_alive():
            worker.proc.kill()

    def _ready_worker(self):
        if self._worker is not None and not self._worker.alive():
            self._worker.kill()
            self._worker = None
        if self._worker is None:
            self._worker = _Worker(self._ctx, self.initializer, self.start_timeout_s, self.env)
            self.workers_started += 1
        return self._worker

    def _discard_worker(self):
        self._worker.kill()
        self._worker = None

    def run(self, job):
        """Run `job`; returns its record (also appended to the results file)."""
        worker = self._ready_worker()
        started = time.monotonic()
        result, failure, tb, worker_gone = _await(worker, job)
        if worker_gone:
            self._discard_worker()
        else:
            worker.jobs += 1
            if self.max_jobs_per_worker is not None and worker.jobs >= self.max_jobs_per_worker:
                self._worker.stop()
                self._worker = None
        record = {
            "label": job.label,
            "task": job.task,
            "ir_hash": job.ir_hash,
            "ok": failure is None,
            "result": result,
            "failure": None,
            "traceback": tb,
            "worker_pid": worker.pid,
            "worker_replaced": worker_gone,
            "elapsed_s": round(time.monotonic() - started, 3),
            "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        }
        if failure is not None:
            kind, message = failure
            record["failure"] = failures.FailureSignature(kind, failures.truncate(message), job.ir_hash).to_dict()
        if self.results_path:
            results_log.append(self.results_path, record)
        return record


def _await(worker, job):
    """(result, (kind, message) or None, traceback or None, worker_gone) for `job` sent to `worker`."""
    try:
        worker.conn.send(job)
    except OSError:  # the worker died between jobs
        worker.proc.join(STOP_WAIT_S)
        return None, (failures.CRASH, "worker %s before the job" % describe_exit(worker.proc.exitcode)), None, True
    if not worker.conn.poll(job.time_limit_s):
        return None, (failures.TIMEOUT, "no answer within the %.1f s time limit; worker killed" % job.time_limit_s), None, True
    try:
        reply = worker.conn.recv()
    except (EOFError, OSError):
        worker.proc.join(STOP_WAIT_S)
        return None, (failures.CRASH, "worker %s without answering" % describe_exit(worker.proc.exitcode)), None, True
    if reply[0] == "ok":
        return reply[1], None, None, False
    _, kind, message, tb, poisoned = reply
    return None, (kind, message), failures.truncate(tb, 8000), poisoned
