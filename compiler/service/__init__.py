"""The CAKE compiler as a gRPC service (cake.compiler.v1.CompilerService) and its Python client.

    python -m compiler.service.main --port 50051          # or: bazel run //compiler:server
    from compiler.service.client import CompilerClient, start_local_server

See docs/service.md: flags, grpcurl examples, auth and TLS, status codes.
"""

import os

# gRPC's fork support (on by default in grpcio >= 1.81) restarts its poller in every forked child. A child that
# closes its descriptors before exec (subprocess's close_fds: nvcc, the workers' fork server, any Popen in a
# process holding a channel) then finds the poller's epoll descriptor gone and aborts before exec: measured
# here, 12 of 300 Popen children of a process with one channel died with SIGABRT (grpc/grpc#43055). CAKE never
# uses gRPC across a fork, so it is off unless the caller chose. It must be set before grpc is first imported:
# every module of this package imports grpc only after this file has run.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
