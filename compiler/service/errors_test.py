"""Status mapping: ServiceErrors keep their code and details; anything else is INTERNAL with an incident id."""

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from compiler.service import errors


class _Aborted(Exception):
    pass


class _Context:
    def abort_with_status(self, status):
        self.status = status
        raise _Aborted()


def _status(behavior):
    context = _Context()
    with pytest.raises(_Aborted):
        errors.guarded(behavior, "Test")(None, context)
    return context.status


def _unpack(status, detail_type):
    [raw] = [v for k, v in status.trailing_metadata if k == "grpc-status-details-bin"]
    [packed] = [d for d in status_pb2.Status.FromString(raw).details if d.Is(detail_type.DESCRIPTOR)]
    out = detail_type()
    packed.Unpack(out)
    return out


def test_a_service_error_keeps_its_code_and_details():
    def bad(request, context):
        raise errors.invalid_argument("no program", [("program", "set one")])

    status = _status(bad)
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT and status.details == "no program"
    assert _unpack(status, error_details_pb2.BadRequest).field_violations[0].field == "program"


def test_a_bug_is_internal_with_an_incident_id_and_no_traceback(caplog):
    def bug(request, context):
        raise KeyError("secret internals")

    status = _status(bug)
    incident = _unpack(status, error_details_pb2.ErrorInfo).metadata["incident"]
    assert status.code == grpc.StatusCode.INTERNAL and incident in status.details
    assert "secret internals" not in status.details and "Traceback" not in status.details
    [record] = caplog.records
    assert record.fields == {"incident": incident} and record.exc_info[0] is KeyError


def test_success_passes_through():
    assert errors.guarded(lambda request, context: "ok", "Test")(None, _Context()) == "ok"


def test_retry_info_carries_the_delay():
    status = errors.resource_exhausted("full", 0.25).status()
    assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _unpack(status, error_details_pb2.RetryInfo).retry_delay.ToNanoseconds() == 250_000_000
