"""Failed RPCs as gRPC statuses with google.rpc rich details (what clients in any language decode).

The servicer raises ServiceError; `guarded` turns it, or any other exception (a
compiler bug), into the call's status. A bug becomes INTERNAL with an incident id
in the message and in ErrorInfo metadata; the traceback goes to the server's log
under that id and never to the client.
"""

import logging
import uuid

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

DOMAIN = "cake.compiler.v1"

log = logging.getLogger("cake.service")


class ServiceError(Exception):
    """A failed RPC: a status code, a message, and google.rpc detail messages."""

    def __init__(self, code, message, details=()):
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


def invalid_argument(message, violations, reason=None, metadata=None):
    """INVALID_ARGUMENT with a BadRequest listing (field, description) violations, plus
    ErrorInfo when a machine-readable `reason` applies."""
    bad = error_details_pb2.BadRequest(
        field_violations=[error_details_pb2.BadRequest.FieldViolation(field=f, description=d) for f, d in violations]
    )
    details = [bad]
    if reason:
        details.append(error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=metadata or {}))
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, message, details)


def resource_exhausted(message, retry_after_seconds):
    """RESOURCE_EXHAUSTED with RetryInfo: when to try again."""
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(retry_after_seconds * 1e9))
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        message,
        [
            error_details_pb2.RetryInfo(retry_delay=delay),
            error_details_pb2.ErrorInfo(reason="COMPILE_QUEUE_FULL", domain=DOMAIN),
        ],
    )


def deadline_exceeded(message):
    return ServiceError(grpc.StatusCode.DEADLINE_EXCEEDED, message)


def internal(incident):
    """INTERNAL naming the incident id of the log line that holds the traceback."""
    return ServiceError(
        grpc.StatusCode.INTERNAL,
        "internal compiler error (incident %s): this is a bug in CAKE; report the incident id with the request"
        % incident,
        [error_details_pb2.ErrorInfo(reason="INTERNAL_COMPILER_ERROR", domain=DOMAIN, metadata={"incident": incident})],
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
