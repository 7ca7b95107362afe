"""Failure signatures: what makes two failures "the same", so recurring ones can be counted.

A signature is `stage|kind|diagnostic id|normalized message`: the message lowercased,
numbers replaced by `#`, quoted and backquoted names by `<name>`, IR paths by
`<path>`, and cut to its first words. Failures of different candidates (and runs)
with one signature form a cluster; `cluster` groups failure rows by signature.
"""

import collections
import re

WORDS = 14
_PATH = re.compile(r"kernel(\.[a-z_]+(\[\d+\])?)+")
_QUOTED = re.compile(r"(`[^`]*`|'[^']*'|\"[^\"]*\")")
_NUMBER = re.compile(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?")
_SPACE = re.compile(r"\s+")


def normalize(message):
    text = _PATH.sub("<path>", message.lower())
    text = _QUOTED.sub("<name>", text)
    text = _NUMBER.sub("#", text)
    return " ".join(_SPACE.split(text.strip())[:WORDS])


def signature(stage, kind, diag_id, message):
    return "|".join((stage, kind, diag_id or "-", normalize(message)))


def failure(stage, kind, diag_id, message, ir_hash):
    """A failure row (see store.failures) with its signature."""
    return {"stage": stage, "kind": kind, "diag_id": diag_id or "", "message": message,
            "signature": signature(stage, kind, diag_id, message), "ir_hash": ir_hash}


def cluster(rows):
    """signature -> rows, largest clusters first; each candidate (ir_hash) counts once per signature."""
    groups = collections.OrderedDict()
    for row in rows:
        members = groups.setdefault(row["signature"], [])
        if all(m["ir_hash"] != row["ir_hash"] for m in members):
            members.append(row)
    return collections.OrderedDict(sorted(groups.items(), key=lambda kv: -len(kv[1])))
