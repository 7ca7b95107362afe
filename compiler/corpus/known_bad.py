"""The known-bad corpus (bad/*.cake) as data: each program's file, expected diagnostic id and IR path, and defect.

Each file starts with

    # expect: CAKE-SYNC-005 at kernel.roles[1].body[1].loop.body[3].branch.then_body[0].mbarrier_arrive
    # defect: one thread releases a slot that needs 2 arrivals

(bad/README.md). The command line's tests and the MCP server's examples read them here.
"""

import dataclasses
import glob
import os
import re

BAD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad")
_HEADER = re.compile(r"# expect: (CAKE-[A-Z]+-[0-9]{3}) at (\S+)\n(?:# defect: (.*)\n)?")


@dataclasses.dataclass(frozen=True)
class BadProgram:
    path: str  # the .cake file
    id: str  # the diagnostic the verifier must report
    ir_path: str  # where it must report it
    defect: str  # the one thing wrong, in words


def read(path):
    """The BadProgram in `path`; ValueError when its header is missing."""
    with open(path, encoding="utf-8") as f:
        m = _HEADER.match(f.read())
    if not m:
        raise ValueError("%s does not start with `# expect: CAKE-XXX-nnn at <IR path>`" % path)
    return BadProgram(path, m.group(1), m.group(2), m.group(3) or "")


def programs():
    """Every known-bad program, by file name."""
    return [read(p) for p in sorted(glob.glob(os.path.join(BAD_DIR, "*.cake")))]
