"""A call as the service's work sees it: when it must end, and whether it already has.

The servicer makes one per RPC (`Call.of(context)`): `deadline`, a time.monotonic()
value from the client's deadline (None without one), and `ended`, an Event that gRPC
sets when the call ends early (the client cancelled or went away, or its deadline
passed: gRPC cancels the call then). Work that takes time (a worker's task, nvcc)
watches both and stops.
"""

import threading
import time

from compiler.service import errors

# gRPC reports "no deadline" as a time remaining this far off (or more).
_NO_DEADLINE = 1e8


class Call:
    def __init__(self, deadline=None, ended=None):
        self.deadline = deadline
        self.ended = ended if ended is not None else threading.Event()

    @classmethod
    def of(cls, context):
        remaining = context.time_remaining()
        deadline = None if remaining is None or remaining > _NO_DEADLINE else time.monotonic() + remaining
        call = cls(deadline)
        if not context.add_callback(call.ended.set):  # the call is over already
            call.ended.set()
        return call

    def remaining(self):
        """Seconds until the deadline (at least 0), or None without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def over(self):
        """True once the call has ended or its deadline has passed."""
        return self.ended.is_set() or (self.deadline is not None and time.monotonic() >= self.deadline)

    def error(self, doing):
        """The status of a call that ended while `doing` (e.g. "verifying"): its deadline passed, or it was cancelled."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return errors.deadline_exceeded("the deadline passed while %s" % doing)
        return errors.cancelled("the call was cancelled while %s" % doing)

    def check(self, doing):
        """Raise the call's error if it is over."""
        if self.over():
            raise self.error(doing)
