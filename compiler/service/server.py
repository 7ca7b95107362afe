"""The gRPC server: CompilerService, health checking and reflection, behind the interceptors.

    server = CompilerServer(Options(port=0))
    port = server.start()
    ...
    server.shutdown(grace=30)   # health NOT_SERVING, in-flight RPCs finish, workers and compile pool stop

Message-size limits apply both ways (oversize requests fail RESOURCE_EXHAUSTED in
gRPC itself). SO_REUSEPORT is off so that a second server on a taken port fails
to bind instead of silently sharing it.

At start the server cleans up after any server of this user that was killed
(builds.py), refuses to start when its compile cache cannot be written (CacheError:
pass another --cache-dir, or --no-cache to run without one), and starts its worker
processes; health reports SERVING only while it can compile (readiness.py).
"""

import concurrent.futures
import dataclasses
import logging
import os
import time

import grpc
from grpc_health.v1 import health, health_pb2_grpc

from compiler.build import cache as compile_cache
from compiler.service import auth, builds, interceptors, primitives, readiness, reflection, servicer
from compiler.service.limits import Limits
from compiler.service.pool import CompilePool
from compiler.service.workers import WORKER_NICE, WorkerPool

log = logging.getLogger("cake.service")


class CacheError(RuntimeError):
    """The compile cache cannot be written, and the server was not told to run without one."""


@dataclasses.dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 50051
    max_message_bytes: int = 32 << 20
    compile_workers: int = 2
    compile_queue: int = 16
    rpc_threads: int = 64
    workers: int = os.cpu_count() or 2  # worker processes (parse, verify, analyze, lower)
    limits: Limits = dataclasses.field(default_factory=Limits)
    token: str = None  # bearer token every RPC but health checks must carry
    credentials: object = None  # grpc.ServerCredentials for TLS; None listens in plaintext
    cache_dir: str = None  # compile cache directory; None: compiler/build/cache.py's default
    no_cache: bool = False  # run without a compile cache (every Compile runs nvcc)
    measurer: object = None  # runtime/measure.py's Measurer (--measure): enables Measure; None: off


class CompilerServer:
    def __init__(self, options):
        self.options = options
        self.cache_dir = None if options.no_cache else (options.cache_dir or compile_cache.default_directory())
        self.cache = None if self.cache_dir is None else compile_cache.CompileCache(self.cache_dir)
        self.builds = builds.BuildRoot.default()
        self.workers = WorkerPool(options.workers, options.limits, self.cache_dir)
        self.pool = CompilePool(options.compile_workers, options.compile_queue, nice=WORKER_NICE)
        chain = [interceptors.AccessLog()]
        if options.token:
            chain.append(auth.BearerToken(options.token))
        self.server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(options.rpc_threads, thread_name_prefix="cake-rpc"),
            interceptors=chain,
            options=[
                ("grpc.max_receive_message_length", options.max_message_bytes),
                ("grpc.max_send_message_length", options.max_message_bytes),
                ("grpc.so_reuseport", 0),
            ],
        )
        self.servicer = servicer.CompilerServicer(self.workers, self.pool, self.builds, options.limits, self.cache,
                                                  options.measurer)
        servicer.add_to_server(self.servicer, self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable((servicer.SERVICE.full_name, health.SERVICE_NAME), self.server)
        self.readiness = readiness.Readiness(self.health, ("", servicer.SERVICE.full_name), self.cache_dir)
        self.port = None

    def start(self):
        """Bind and serve; the bound port (the ephemeral one chosen when options.port is 0)."""
        primitives.list_primitives()  # read ir.proto now: a broken install fails at start, not per call
        if self.cache_dir is not None:
            problem = readiness.cache_problem(self.cache_dir)
            if problem:
                raise CacheError(
                    "the compile cache %s cannot be written (%s): pass --cache-dir with a writable directory, "
                    "or --no-cache to run without a cache" % (self.cache_dir, problem))
        else:
            log.warning("running without a compile cache: every Compile runs nvcc",
                        extra={"fields": {"event": "no_cache"}})
        self.builds.open()
        self.workers.start()
        host = self.options.host
        address = "%s:%d" % ("[%s]" % host if ":" in host and not host.startswith("[") else host, self.options.port)
        try:
            if self.options.credentials is not None:
                self.port = self.server.add_secure_port(address, self.options.credentials)
            else:
                self.port = self.server.add_insecure_port(address)
        except RuntimeError:
            self._stop_work()
            raise
        self.server.start()
        self.readiness.start()
        return self.port

    def shutdown(self, grace):
        """Stop taking calls and give in-flight ones `grace` seconds; True when all work finished."""
        start = time.monotonic()
        self.readiness.stop()
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()
        left = max(0.0, grace - (time.monotonic() - start))
        self.servicer.measurement.shutdown()
        drained = self.pool.shutdown(left)
        self._stop_work()
        return drained

    def _stop_work(self):
        self.workers.shutdown()
        self.builds.close()
