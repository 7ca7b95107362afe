"""Can this server compile? nvcc present, compile cache writable: checked at start and then periodically.

The health service (grpc.health.v1) reports SERVING for "" and for CompilerService
only while both hold, so that a load balancer or an agent sends work only to a
server that can do all of it; every change is logged with its reason. Verify and
Analyze keep answering either way; Compile without nvcc fails FAILED_PRECONDITION.
"""

import logging
import os
import tempfile
import threading

from grpc_health.v1 import health_pb2

from compiler.build import nvcc

log = logging.getLogger("cake.service")

# Seconds between checks while serving.
INTERVAL_SECONDS = 10.0


def cache_problem(directory):
    """Why the compile cache at `directory` cannot be written (None when it can): makes the
    directory if needed, then writes, reads back and removes a probe file."""
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-") as f:
            f.write(b"cake")
            f.flush()
            f.seek(0)
            if f.read() != b"cake":
                return "a file written there reads back different"
    except OSError as e:
        return "%s: %s" % (e.filename or directory, e.strerror or e)
    return None


def nvcc_problem():
    """Why nvcc cannot be run (None when it can)."""
    try:
        path = nvcc.find_nvcc()
    except nvcc.NvccNotFound as e:
        return str(e)
    if not os.access(path, os.X_OK):
        return "%s is not executable" % path
    return None


class Readiness:
    """Keeps `health`'s statuses for `services` true to what the checks find."""

    def __init__(self, health, services, cache_dir):
        self.health = health
        self.services = services
        self.cache_dir = cache_dir
        self.problems = None
        self._stop = threading.Event()
        self._thread = None

    def check(self):
        """Run the checks now and publish the result; the problems found (empty when ready)."""
        problems = []
        why = nvcc_problem()
        if why:
            problems.append("nvcc: %s" % why)
        if self.cache_dir is not None:
            why = cache_problem(self.cache_dir)
            if why:
                problems.append("compile cache %s: %s" % (self.cache_dir, why))
        if problems == self.problems:
            return problems  # unchanged: health Watch streams hear only of changes
        if problems:
            log.warning("not ready to compile", extra={"fields": {"event": "not_ready", "problems": problems}})
        elif self.problems is not None:
            log.info("ready to compile again", extra={"fields": {"event": "ready"}})
        self.problems = problems
        status = health_pb2.HealthCheckResponse.NOT_SERVING if problems else health_pb2.HealthCheckResponse.SERVING
        for name in self.services:
            self.health.set(name, status)
        return problems

    def start(self, interval=INTERVAL_SECONDS):
        self.check()
        self._thread = threading.Thread(target=self._loop, args=(interval,), name="cake-readiness", daemon=True)
        self._thread.start()

    def _loop(self, interval):
        while not self._stop.wait(interval):
            self.check()

    def stop(self):
        self._stop.set()
