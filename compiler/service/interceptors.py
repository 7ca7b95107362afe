"""The access log: one structured line per RPC (method, peer, status, duration, request id).

The request id is the client's `x-request-id` metadata when it sends one (the CAKE
client does, the same across its retries), else a fresh one; while the call is
served it tags every log line of its thread (logs.request_id). Streaming RPCs
(reflection, health Watch) are passed through unlogged: wrapping them would hide
the health servicer's non-blocking Watch behind a blocking one.
"""

import logging
import time
import uuid

import grpc

from compiler.service import logs

REQUEST_ID_KEY = "x-request-id"

access = logging.getLogger("cake.service.access")


def metadata_value(metadata, key):
    for k, v in metadata or ():
        if k == key:
            return v
    return None


class AccessLog(grpc.ServerInterceptor):
    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        method = handler_call_details.method
        rid = metadata_value(handler_call_details.invocation_metadata, REQUEST_ID_KEY) or uuid.uuid4().hex[:16]
        return handler._replace(unary_unary=_logged(handler.unary_unary, method, rid[:64]))


def _logged(behavior, method, rid):
    def call(request, context):
        token = logs.request_id.set(rid)
        start = time.monotonic()
        try:
            return behavior(request, context)
        finally:
            code = context.code() or grpc.StatusCode.OK
            fields = {
                "event": "rpc",
                "method": method,
                "peer": context.peer(),
                "status": code.name,
                "duration_ms": round((time.monotonic() - start) * 1e3, 3),
            }
            if code is not grpc.StatusCode.OK and context.details():
                fields["details"] = _text(context.details())[:300]
            access.info("rpc", extra={"fields": fields})
            logs.request_id.reset(token)

    return call


def _text(details):
    return details.decode("utf-8", "replace") if isinstance(details, bytes) else str(details)
