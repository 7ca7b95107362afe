"""Failed RPCs as gRPC statuses with google.rpc rich details (what clients in any language decode).

The servicer raises ServiceError; `guarded` turns it, or any other exception (a
compiler bug), into the call's status. A bug becomes INTERNAL with an incident id
in the message and in ErrorInfo metadata; the traceback goes to the server's log
under that id and never to the client.

A status travels in trailers, which gRPC receivers refuse past a few KiB (the
client would see RESOURCE_EXHAUSTED instead of the status sent), so every text a
status carries is cut here to an excerpt (`excerpt`): the message, each BadRequest
description and ErrorInfo value, and the number of violations. Whatever the
request held, a status stays under STATUS_BUDGET bytes.
"""

import logging
import uuid

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

DOMAIN = "cake.compiler.v1"

# UTF-8 bytes of a status message, of one BadRequest description, and of a field name or an
# ErrorInfo key or value.
MESSAGE_BYTES = 400
DESCRIPTION_BYTES = 400
FIELD_BYTES = 100
# BadRequest violations and ErrorInfo entries kept (the last violation kept counts the rest).
MAX_VIOLATIONS = 4
MAX_METADATA = 4
# The trailers of the largest status these bounds allow (the message percent-encoded, the
# details base64-encoded) fit in this many bytes: half of gRPC's default 16 KiB hard limit.
STATUS_BUDGET = 8 * 1024

log = logging.getLogger("cake.service")


def excerpt(text, limit):
    """`text` if its UTF-8 form has at most `limit` bytes, else its start and how much was left out."""
    text = str(text)
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    tail = "... (%d bytes in all)" % len(data)
    return data[: max(0, limit - len(tail))].decode("utf-8", "ignore") + tail


class ServiceError(Exception):
    """A failed RPC: a status code, a message (cut to MESSAGE_BYTES), and google.rpc detail messages."""

    def __init__(self, code, message, details=()):
        message = excerpt(message, MESSAGE_BYTES)
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = tuple(details)

    def status(self):
        """The grpc.Status to abort the call with (details in grpc-status-details-bin)."""
        packed = []
        for d in self.details:
            a = any_pb2.Any()
            a.Pack(d)
            packed.append(a)
        return rpc_status.to_status(status_pb2.Status(code=self.code.value[0], message=self.message, details=packed))


def _error_info(reason, metadata=None):
    entries = list((metadata or {}).items())[:MAX_METADATA]
    return error_details_pb2.ErrorInfo(
        reason=excerpt(reason, FIELD_BYTES), domain=DOMAIN, metadata={excerpt(k, FIELD_BYTES): excerpt(v, FIELD_BYTES) for k, v in entries},
    )


def invalid_argument(message, violations, reason=None, metadata=None):
    """INVALID_ARGUMENT with a BadRequest listing (field, description) violations, plus
    ErrorInfo when a machine-readable `reason` applies."""
    violations = list(violations)
    if len(violations) > MAX_VIOLATIONS:
        left_out = len(violations) - MAX_VIOLATIONS + 1
        violations = violations[: MAX_VIOLATIONS - 1] + [("", "and %d more violations" % left_out)]
    bad = error_details_pb2.BadRequest(field_violations=[
        error_details_pb2.BadRequest.FieldViolation(
            field=excerpt(f, FIELD_BYTES), description=excerpt(d, DESCRIPTION_BYTES))
        for f, d in violations
    ])
    details = [bad]
    if reason:
        details.append(_error_info(reason, metadata))
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, message, details)


def limit_exceeded(message, reason, metadata=None):
    """RESOURCE_EXHAUSTED for a request past one of the server's per-request limits (time, memory):
    ErrorInfo says which; no RetryInfo, since the same request would fail the same way."""
    return ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED, message, [_error_info(reason, metadata)])


def failed_precondition(message, reason):
    """FAILED_PRECONDITION: the server cannot do this now (no nvcc); ErrorInfo names what is missing."""
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, message, [_error_info(reason)])


def cancelled(message):
    return ServiceError(grpc.StatusCode.CANCELLED, message)


def resource_exhausted(message, retry_after_seconds):
    """RESOURCE_EXHAUSTED with RetryInfo: when to try again."""
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(retry_after_seconds * 1e9))
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        message,
        [error_details_pb2.RetryInfo(retry_delay=delay), _error_info("COMPILE_QUEUE_FULL")],
    )


def deadline_exceeded(message):
    return ServiceError(grpc.StatusCode.DEADLINE_EXCEEDED, message)


def internal(incident):
    """INTERNAL naming the incident id of the log line that holds the traceback."""
    return ServiceError(
        grpc.StatusCode.INTERNAL,
        "internal compiler error (incident %s): this is a bug in CAKE; report the incident id with the request"
        % incident,
        [_error_info("INTERNAL_COMPILER_ERROR", {"incident": incident})],
    )


def guarded(behavior, name):
    """Wrap a servicer method so that every failure leaves as a proper status."""

    def call(request, context):
        try:
            return behavior(request, context)
        except ServiceError as e:
            error = e
        except Exception:  # a compiler bug: log it, tell the client only the incident id
            incident = uuid.uuid4().hex[:12]
            log.exception("internal error in %s", name, extra={"fields": {"incident": incident}})
            error = internal(incident)
        # abort raises, so it stays outside the handlers above.
        context.abort_with_status(error.status())

    return call
