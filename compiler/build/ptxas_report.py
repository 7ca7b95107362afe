"""Parse ptxas' `-v` resource report into ResourceUsage, per entry function."""

import re

from cake.compiler.v1 import artifact_pb2

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse(report):
    """{entry name: ResourceUsage} from the text ptxas -v wrote to stderr."""
    out = {}
    current = None
    for line in report.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = artifact_pb2.ResourceUsage()
            out[m.group(1)] = current
            continue
        if current is None:
            continue
        m = _FRAME.search(line)
        if m:
            current.stack_frame_bytes, current.spill_store_bytes, current.spill_load_bytes = map(int, m.groups())
        m = _USED.search(line)
        if m:
            current.registers = int(m.group(1))
            b, s, c = _BARRIERS.search(line), _SMEM.search(line), _CMEM.search(line)
            current.barriers = int(b.group(1)) if b else 0
            current.static_shared_bytes = int(s.group(1)) if s else 0
            current.constant_bytes = int(c.group(1)) if c else 0
    return out
