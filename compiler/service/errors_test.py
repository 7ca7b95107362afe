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


def _trailer_bytes(status):
    """What a status costs in trailers: grpc-message percent-encoded, -bin values base64-encoded."""
    import base64
    import urllib.parse

    message = urllib.parse.quote(status.details.encode("utf-8"), safe=" ")
    return len(message) + sum(len(base64.b64encode(v)) for k, v in status.trailing_metadata if k.endswith("-bin"))


@pytest.mark.parametrize("user_text", ["x" * 100_000, "\U0001F600" * 100_000, "\n\x00\"'" * 10_000])
def test_any_user_text_leaves_a_status_within_its_budget(user_text):
    statuses = [
        errors.invalid_argument(
            "program.text is not CAKE IR: %s" % user_text,
            [("program.text", "1:1: unknown op %s" % user_text)] * 20,
            reason="IR_TEXT_SYNTAX" + user_text,
            metadata={"line%d" % i: user_text for i in range(20)},
        ).status(),
        errors.limit_exceeded(user_text, "PARSE_TIME_LIMIT", {user_text: user_text}).status(),
        errors.failed_precondition(user_text, user_text).status(),
    ]
    for status in statuses:
        assert _trailer_bytes(status) < errors.STATUS_BUDGET
    bad = _unpack(statuses[0], error_details_pb2.BadRequest)
    assert len(bad.field_violations) == errors.MAX_VIOLATIONS
    assert bad.field_violations[-1].description == "and 17 more violations"
    assert bad.field_violations[0].description.endswith("bytes in all)")


def test_an_excerpt_keeps_short_text_and_cuts_long_text_on_a_character_boundary():
    assert errors.excerpt("short", 100) == "short"
    cut = errors.excerpt("\u00e9" * 1000, 100)
    assert len(cut.encode("utf-8")) <= 100 and cut.startswith("\u00e9" * 10) and cut.endswith("(2000 bytes in all)")
