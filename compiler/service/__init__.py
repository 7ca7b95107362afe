"""The CAKE compiler as a gRPC service (cake.compiler.v1.CompilerService) and its Python client.

    python -m compiler.service.main --port 50051          # or: bazel run //compiler:server
    from compiler.service.client import CompilerClient, start_local_server

See docs/service.md: flags, grpcurl examples, auth and TLS, status codes.
"""
