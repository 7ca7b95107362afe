"""Tuning databases: which variant won each shape bucket, per device and toolchain, as reviewable JSON.

A file holds one op's measurements on one device with one toolchain:

    {"op": "kmeans_assign", "device": "NVIDIA H200", "toolchain": "...",
     "made": {"by": "...", "how": "...", "date": "...", "commit": "..."},
     "entries": {"<bucket key>": {"variant": "<name>", "shape": {...}, "times_ms": {"<name>": 0.1, ...}}}}

`TuningDB.lookup(key)` is a dictionary read (it sits on the dispatcher's per-call path
for shapes it has not seen). Files for other devices are never consulted; a file made
with another toolchain is used only when none matches (the winners rarely change
between nvcc versions, and a slower variant is still a correct one). `remember` adds
an entry measured in this process (autotune), and `save` writes the file back with
sorted keys so that diffs stay readable.
"""

import datetime
import json
import os


class TuningDB:
    def __init__(self, op, device, toolchain, entries=None, made=None, path=None):
        self.op = op
        self.device = device
        self.toolchain = toolchain
        self.entries = dict(entries or {})
        self.made = dict(made or {})
        self.path = path

    @classmethod
    def load(cls, path):
        with open(path) as f:
            data = json.load(f)
        for field in ("op", "device", "toolchain", "entries"):
            if field not in data:
                raise ValueError("tuning database %s has no %r field" % (path, field))
        return cls(data["op"], data["device"], data["toolchain"], data["entries"], data.get("made"), path)

    def lookup(self, key):
        """The winning variant's name for bucket `key`, or None."""
        entry = self.entries.get(key)
        return entry["variant"] if entry else None

    def remember(self, key, variant, shape, times_ms, how):
        self.entries[key] = {"variant": variant, "shape": dict(shape), "times_ms": dict(times_ms), "how": how,
                             "date": datetime.date.today().isoformat()}

    def to_dict(self):
        return {"op": self.op, "device": self.device, "toolchain": self.toolchain, "made": self.made,
                "entries": {k: self.entries[k] for k in sorted(self.entries)}}

    def save(self, path=None):
        path = path or self.path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.to_dict(), f, indent=1, sort_keys=False)
            f.write("\n")
        os.replace(tmp, path)
        self.path = path


def select(paths, op, device, toolchain):
    """The databases of `paths` for `op` on `device`: the toolchain's own first, then the others."""
    dbs = []
    for path in paths:
        if not os.path.exists(path):
            continue
        db = TuningDB.load(path)
        if db.op == op and db.device == device:
            dbs.append(db)
    return sorted(dbs, key=lambda db: db.toolchain != toolchain)


def user_path(name, device):
    """Where an op's user tuning database (shapes autotuned on this machine, by `name` and device) lives:
    compiler/locations.py's state directory, tuning/<name>_<device>.json."""
    from compiler import locations

    safe = "".join(ch if ch.isalnum() else "_" for ch in device)
    return os.path.join(locations.state_dir(), "tuning", "%s_%s.json" % (name, safe))
