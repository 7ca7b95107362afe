"""The gRPC server: CompilerService, health checking and reflection, behind the interceptors.

    server = CompilerServer(Options(port=0))
    port = server.start()
    ...
    server.shutdown(grace=30)   # health NOT_SERVING, in-flight RPCs finish, compile pool drains

Message-size limits apply both ways (oversize requests fail RESOURCE_EXHAUSTED in
gRPC itself). SO_REUSEPORT is off so that a second server on a taken port fails
to bind instead of silently sharing it.
"""

import concurrent.futures
import dataclasses
import logging
import time

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from compiler.build import cache as compile_cache
from compiler.service import auth, interceptors, primitives, servicer
from compiler.service.pool import CompilePool

log = logging.getLogger("cake.service")


@dataclasses.dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 50051
    max_message_bytes: int = 32 << 20
    compile_workers: int = 2
    compile_queue: int = 16
    rpc_threads: int = 64
    token: str = None  # bearer token every RPC but health checks must carry
    credentials: object = None  # grpc.ServerCredentials for TLS; None listens in plaintext
    cache_dir: str = None  # compile cache directory; None: compiler/build/cache.default_directory()


class CompilerServer:
    def __init__(self, options):
        self.options = options
        self.pool = CompilePool(options.compile_workers, options.compile_queue)
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
        cache = compile_cache.CompileCache(options.cache_dir) if options.cache_dir else None
        servicer.add_to_server(servicer.CompilerServicer(self.pool, cache), self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (servicer.SERVICE.full_name, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server
        )
        self.port = None

    def start(self):
        """Bind and serve; the bound port (the ephemeral one chosen when options.port is 0)."""
        primitives.list_primitives()  # read ir.proto now: a broken install fails at start, not per call
        host = self.options.host
        address = "%s:%d" % ("[%s]" % host if ":" in host and not host.startswith("[") else host, self.options.port)
        if self.options.credentials is not None:
            self.port = self.server.add_secure_port(address, self.options.credentials)
        else:
            self.port = self.server.add_insecure_port(address)
        self.server.start()
        for name in ("", servicer.SERVICE.full_name):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        return self.port

    def shutdown(self, grace):
        """Stop taking calls and give in-flight ones `grace` seconds; True when all work finished."""
        start = time.monotonic()
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()
        left = max(0.0, grace - (time.monotonic() - start))
        return self.pool.shutdown(left)
