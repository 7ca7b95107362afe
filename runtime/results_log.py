"""An append-only JSON-lines file of evaluation records, durable one record at a time.

Each record is written, flushed and fsynced as soon as it arrives, so a crash of
the parent loses at most the evaluation in flight. A crash mid-write leaves a line
cut short; the next append starts on a fresh line and reading skips the cut one,
so every complete record stays readable.
"""

import json
import os


def append(path, record):
    """Append `record` (JSON-able; other values are written as their str) and fsync."""
    line = json.dumps(record, sort_keys=True, default=str) + "\n"
    with open(path, "a+b") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":  # an earlier write was cut short: do not glue onto it
                line = "\n" + line
        f.write(line.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def read(path):
    """Every complete record in `path` (none when it does not exist), skipping cut-short lines."""
    if not os.path.exists(path):
        return []
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # only a write cut short by a crash produces a line that is not JSON
    return records
