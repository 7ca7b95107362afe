"""Structured logs: one JSON object per line on stderr, tagged with the current request id.

A record's `fields` extra (a dict) is merged into its object, so access-log lines are
machine-readable; the request id is that of the RPC being served on this thread (set
by the access-log interceptor), so an incident's traceback can be tied to its call.
"""

import contextvars
import json
import logging
import sys
import time

request_id = contextvars.ContextVar("cake_request_id", default=None)


class JsonFormatter(logging.Formatter):
    def format(self, record):
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + ".%03dZ" % record.msecs,
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id.get()
        if rid is not None:
            out["request_id"] = rid
        out.update(getattr(record, "fields", {}))
        if record.exc_info:
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def setup(level="info"):
    """Send every log record to stderr as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
