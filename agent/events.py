"""The run's event log: one JSON object per line (events.jsonl), appended as things happen.

Each line is written and flushed at once, so a killed process loses nothing the OS
has seen; a line cut short by a crash mid-write is skipped when reading (the same
convention as runtime/results_log, whose reader this uses). Events carry `t` (unix
time) and `event`: run_started, candidate (inserted), assess (its assessment starts), outcome,
generation, run_finished.
"""

import json
import os
import time

from runtime import results_log


class EventLog:
    def __init__(self, path):
        self.path = path
        self._file = open(path, "a+b")
        self._file.seek(0, os.SEEK_END)
        if self._file.tell() > 0:
            self._file.seek(-1, os.SEEK_END)
            if self._file.read(1) != b"\n":  # an earlier run was killed mid-line: start a fresh one
                self._file.write(b"\n")

    def emit(self, event, **fields):
        record = {"t": round(time.time(), 3), "event": event, **fields}
        self._file.write((json.dumps(record, sort_keys=True, default=str) + "\n").encode("utf-8"))
        self._file.flush()

    def close(self):
        self._file.close()


def read(path):
    """Every complete event in the log."""
    return results_log.read(path)
