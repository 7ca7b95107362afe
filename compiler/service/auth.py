"""Access control: bearer tokens, TLS credentials, and which bind addresses need them.

The server listens on loopback by default. A non-loopback address needs TLS or a
bearer token (or the explicit --insecure-allow-remote); with a token every RPC
except health checks must carry `authorization: Bearer <token>`, else it fails
UNAUTHENTICATED. Tokens are compared in constant time.
"""

import hmac
import ipaddress

import grpc

# Health checks stay open: load balancers and supervisors probe without credentials.
EXEMPT = frozenset({"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"})


def is_loopback(host):
    """True for localhost and loopback IP addresses (IPv6 in brackets or not)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def server_credentials(cert_path, key_path):
    with open(cert_path, "rb") as f:
        cert = f.read()
    with open(key_path, "rb") as f:
        key = f.read()
    return grpc.ssl_server_credentials([(key, cert)])


class BearerToken(grpc.ServerInterceptor):
    def __init__(self, token):
        self._expected = ("Bearer " + token).encode()

    def _authorized(self, metadata):
        for k, v in metadata or ():
            if k == "authorization":
                return hmac.compare_digest(v.encode() if isinstance(v, str) else v, self._expected)
        return False

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler_call_details.method in EXEMPT:
            return handler
        if self._authorized(handler_call_details.invocation_metadata):
            return handler
        return _refusal(handler)


def _refusal(handler):
    """A handler of the same kind as `handler` that fails the call UNAUTHENTICATED."""

    def refuse(request_or_iterator, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token (authorization: Bearer <token>)")

    make = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }[(handler.request_streaming, handler.response_streaming)]
    return make(
        refuse,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
