"""Worker processes: where requests are parsed, verified, analyzed and lowered, apart from the server.

A request's CPU work (work.py) runs in one of a few worker processes, one task at a
time each, for three reasons:
- it can be stopped: a task whose call ends (the client cancelled or went away, or its
  deadline passed) or whose current stage overruns its limit is ended by killing its
  worker (SIGKILL), and a fresh worker takes its place;
- its memory is bounded: each worker's address space is capped (RLIMIT_AS), so a
  request that needs more fails with MEMORY_LIMIT, and the server does not grow;
- the server stays responsive: workers run at a lower CPU priority (WORKER_NICE), so
  the server process answers cache hits and the tables without queueing behind
  verification, and Python's one-interpreter lock is not shared with them.
Workers fork from a fork server that has imported the compiler once, so a replacement
starts in milliseconds. A worker exits when the server does (its parent-death signal,
or end of file on its pipe).
"""

import ctypes
import logging
import multiprocessing
import os
import queue
import resource
import signal
import threading
import time
import traceback
import uuid

import grpc

from compiler.build import cache as compile_cache
from compiler.service import errors, limits as limits_module

log = logging.getLogger("cake.service")

# Niceness of worker processes (and of nvcc, see pool.py): below the server's own priority.
WORKER_NICE = 10
# How often a call whose task runs checks whether it ended, in seconds; and one waiting for a worker.
_POLL_SECONDS = 0.05
_ACQUIRE_POLL_SECONDS = 0.1
# A worker whose resident memory grew past this share of its cap after a task is replaced.
_RECYCLE_SHARE = 0.5
_PR_SET_PDEATHSIG = 1


class _Worker:
    def __init__(self, process, conn):
        self.process = process
        self.conn = conn

    def kill(self):
        try:
            os.kill(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.join()
        self.conn.close()


class WorkerPool:
    """`size` worker processes; `run` does one task on one of them within a call and the stage limits."""

    def __init__(self, size, limits, cache_dir=None):
        if size < 1:
            raise ValueError("the service needs at least one worker process")
        self.size = size
        self.limits = limits
        self.cache_dir = cache_dir
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["compiler.service.work"])
        self._idle = queue.Queue()
        self._lock = threading.Lock()
        self._workers = set()
        self._closed = False
        self._failure = None  # why the workers could not start

    def start(self):
        """Start the workers in the background (the fork server imports the compiler: seconds);
        calls wait for the first one."""
        threading.Thread(target=self._start_all, name="cake-workers-start", daemon=True).start()

    def _start_all(self):
        try:
            for _ in range(self.size):
                self._idle.put(self._spawn())
        except Exception as e:  # noqa: BLE001  (reported to every call that waits for a worker)
            self._failure = e
            log.error("the worker processes cannot start: %s", e, extra={"fields": {"event": "workers_failed"}})

    def _spawn(self):
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=serve, args=(child, self.cache_dir, self.limits.worker_memory_bytes), daemon=True,
            name="cake-worker",
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        with self._lock:
            self._workers.add(worker)
        return worker

    def _replace(self, worker):
        worker.kill()
        with self._lock:
            self._workers.discard(worker)
            closed = self._closed
        if not closed:
            self._idle.put(self._spawn())

    def run(self, task, args, call, doing):
        """The result of work.`task`(*args, stage, ...) on a worker, within `call` and the stage limits.

        `doing` names the work for error messages ("verifying"). Raises errors.ServiceError: the
        task's own, the call's deadline or cancellation, a stage or memory limit, or INTERNAL
        (the task failed, or the worker died) with the worker's account logged under its incident."""
        worker = self._acquire(call, doing)
        try:
            worker.conn.send((task, args))
        except OSError as e:
            self._replace(worker)
            raise _incident("a worker was gone before its task (%s)" % e, None) from None
        stage, stage_end = None, None
        while True:
            wait = _POLL_SECONDS
            if stage_end is not None:
                wait = max(0.0, min(wait, stage_end - time.monotonic()))
            try:
                ready = worker.conn.poll(wait)
                message = worker.conn.recv() if ready else None
            except (EOFError, OSError):
                self._replace(worker)
                raise _incident("a worker died while %s (exit code %s)" % (doing, worker.process.exitcode), None) from None
            if message is None:
                if call.over():
                    self._kill(worker, "call ended", stage)
                    raise call.error(doing)
                if stage_end is not None and time.monotonic() >= stage_end:
                    self._kill(worker, "stage time limit", stage)
                    raise _time_limit(stage, self.limits.stage_seconds(stage))
                continue
            kind, value = message
            if kind == "stage":
                stage, stage_end = value, time.monotonic() + self.limits.stage_seconds(value)
                continue
            if kind == "memory":
                self._kill(worker, "memory limit", stage)
                raise errors.limit_exceeded(
                    "%s needed more than this server's %d MiB per request (--worker-memory-mb)"
                    % (doing, self.limits.worker_memory_bytes >> 20),
                    "MEMORY_LIMIT", {"stage": stage or "", "limit_mib": str(self.limits.worker_memory_bytes >> 20)},
                )
            self._release(worker, message)
            if kind == "ok":
                return value[0]
            if kind == "error":
                code, text, details = value
                raise errors.ServiceError(grpc.StatusCode[code], text, details)
            raise _incident("a worker's task failed while %s" % doing, value)

    def _acquire(self, call, doing):
        while True:
            try:
                return self._idle.get(timeout=_ACQUIRE_POLL_SECONDS)
            except queue.Empty:
                if self._failure is not None:
                    raise _incident("no worker process could start: %s" % self._failure, None) from None
                if call.over():
                    raise call.error("waiting for a worker to start %s" % doing) from None

    def _release(self, worker, message):
        rss = message[1][1] if message[0] == "ok" else 0
        if rss > _RECYCLE_SHARE * self.limits.worker_memory_bytes:
            log.info("worker recycled", extra={"fields": {"event": "worker_recycled", "rss_mib": rss >> 20}})
            self._replace(worker)
        else:
            self._idle.put(worker)

    def _kill(self, worker, why, stage):
        log.info("worker killed", extra={"fields": {"event": "worker_killed", "why": why, "stage": stage}})
        self._replace(worker)

    def shutdown(self):
        """Stop every worker (a task still running is killed)."""
        with self._lock:
            self._closed = True
            workers = list(self._workers)
            self._workers.clear()
        for worker in workers:
            worker.kill()


def _incident(what, worker_traceback):
    """INTERNAL for a failure in a worker, logged (with the worker's traceback) under a fresh incident id."""
    incident = uuid.uuid4().hex[:12]
    fields = {"incident": incident}
    if worker_traceback:
        fields["traceback"] = worker_traceback
    log.error("internal error: %s", what, extra={"fields": fields})
    return errors.internal(incident)


def _time_limit(stage, seconds):
    return errors.limit_exceeded(
        "%s took longer than this server's limit of %g s (%s)" % (_STAGE_WORDS.get(stage, stage), seconds,
                                                                   limits_module.STAGE_FLAGS.get(stage, "")),
        "%s_TIME_LIMIT" % stage.upper(), {"stage": stage, "limit_seconds": "%g" % seconds},
    )


_STAGE_WORDS = {"parse": "parsing the program", "verify": "verification", "analyze": "the cost analysis",
                "lower": "lowering", "rules": "loading the rules", "calibrate": "refitting the cost model"}


def serve(conn, cache_dir, memory_bytes):
    """A worker's life: take (task, args) from `conn`, send back stage names and the result."""
    _die_with_parent()
    os.nice(WORKER_NICE)
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    from compiler.service import work  # preloaded by the fork server

    cache = compile_cache.CompileCache(cache_dir) if cache_dir else None

    def stage(name):
        conn.send(("stage", name))

    tasks = work.tasks(stage, cache)
    while True:
        try:
            task, args = conn.recv()
        except (EOFError, OSError):
            return  # the server is gone
        except MemoryError:  # the request alone is more than the cap leaves
            conn.send(("memory", None))
            continue
        try:
            reply = ("ok", (tasks[task](*args), _resident_bytes()))
        except errors.ServiceError as e:
            reply = ("error", (e.code.name, e.message, e.details))
        except MemoryError:
            reply = ("memory", None)
        except Exception:  # noqa: BLE001  (sent to the server, which logs it under an incident id)
            reply = ("bug", traceback.format_exc())
        try:
            conn.send(reply)
        except MemoryError:
            conn.send(("memory", None))


def _die_with_parent():
    """Ask Linux to SIGKILL this process when its parent (the fork server) exits."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
