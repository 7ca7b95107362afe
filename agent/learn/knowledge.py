"""What the agent knows: the checkout's reviewed knowledge files, with what it learned since layered over them.

Two layers:
- the base: agent/knowledge/ of the checkout (under `bazel run`,
  $BUILD_WORKSPACE_DIRECTORY/agent/knowledge; `--knowledge-dir` elsewhere), JSON files a
  person reviews with `git diff`. Runs only read it; `promote` writes it.
- the learned store: `knowledge/` under the runs root (agent/places.py), outside the
  source tree. Every proposal the gate accepts is appended to its accepted.jsonl as a
  patch of one file (with the programs a learned rule was gated against under gate/),
  and nothing there is ever rewritten.

What the agent reads is the base with every accepted patch applied in order that the
base does not already hold: each patch is one more version of its file, with its
changelog entry (`learned`: the patch's id). `promote` writes that view into the
base, formatted by `dump` (one top-level key per line, one item of a top-level list
or object per line), so a promotion changes exactly the lines it changes; a base
that holds a patch's id skips it, so promoting twice, or pulling a promotion made
in another checkout, applies nothing twice.

Every file is an object with `version` (an integer, +1 per accepted change) and
`changelog` (one entry per version: when, which proposal, what changed and the
evidence), beside its content.
"""

import datetime
import json
import os
import shutil
import uuid

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "knowledge")

TACTICS = "tactics.json"
REPAIRS = "repairs.json"
RULES = "rules.json"
CALIBRATION = "calibration.json"
ACCEPTED = "accepted.jsonl"


def context_key(family, mode):
    """The key of a seed family and mode in a knowledge file's per-context entries (tactics.json's context_weights)."""
    return "%s/%s" % (family, mode)


def default_dir():
    """The checkout's agent/knowledge: where `bazel run` was invoked, else beside this package."""
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if workspace and os.path.isdir(os.path.join(workspace, "agent", "knowledge")):
        return os.path.join(workspace, "agent", "knowledge")
    return PACKAGE_DIR


def dump(doc):
    """`doc` as the stable text of a knowledge file (top-level containers one item per line)."""
    def one(value):
        return json.dumps(value, ensure_ascii=False)

    def joined(rows):
        return [row + ("," if i < len(rows) - 1 else "") for i, row in enumerate(rows)]

    rows = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            rows.append(" %s: [\n%s\n ]" % (one(key), "\n".join(joined(["  " + one(v) for v in value]))))
        elif isinstance(value, dict) and value:
            rows.append(" %s: {\n%s\n }" % (one(key), "\n".join(
                joined(["  %s: %s" % (one(k), one(v)) for k, v in value.items()]))))
        else:
            rows.append(" %s: %s" % (one(key), one(value)))
    return "{\n%s\n}\n" % "\n".join(joined(rows))


def read(directory, name, default=None):
    """The parsed file `name` in `directory`, or `default` (a fresh version-0 document when None)."""
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        return {"version": 0, "changelog": []} if default is None else json.loads(json.dumps(default))
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data.get("version"), int) or not isinstance(data.get("changelog"), list):
        raise ValueError("%s: a knowledge file needs an integer version and a changelog list" % path)
    return data


def write(directory, name, data):
    """Replace `name` in `directory` with `data` in the stable format (atomically)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(dump(data))
    os.replace(tmp, path)


def apply_patch(doc, patch):
    """`doc` with one patch applied. A patch has any of:
    set {key: value}; append {list key: items, each added unless present};
    update {object key: {k: v}}; fields {list key: {item name: {field: value}}} (items matched by "name")."""
    out = dict(doc)
    for key, value in patch.get("set", {}).items():
        out[key] = value
    for key, items in patch.get("append", {}).items():
        current = list(out.get(key, []))
        out[key] = current + [i for i in items if i not in current]
    for key, entries in patch.get("update", {}).items():
        out[key] = {**out.get(key, {}), **entries}
    for key, changes in patch.get("fields", {}).items():
        out[key] = [dict(item, **changes.get(item.get("name"), {})) for item in out.get(key, [])]
    return out


def of(source):
    """A Knowledge from a Knowledge or a base directory (read-only, nothing learned over it)."""
    return source if isinstance(source, Knowledge) else Knowledge(source)


class Knowledge:
    """The base directory with the learned store over it (learned=None: the base alone, read-only)."""

    def __init__(self, base, learned=None):
        self.base = base
        self.learned = learned

    def __repr__(self):
        return "%s + %s" % (self.base, self.learned) if self.learned else self.base

    def accepted(self):
        """Every accepted patch in the learned store, oldest first."""
        path = os.path.join(self.learned, ACCEPTED) if self.learned else None
        if path is None or not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def pending(self, name=None):
        """Accepted patches (of file `name`, or all) that the base does not hold yet."""
        held = {}
        out = []
        for entry in self.accepted():
            if name is not None and entry["file"] != name:
                continue
            if entry["file"] not in held:
                held[entry["file"]] = {c.get("learned") for c in read(self.base, entry["file"])["changelog"]}
            if entry["id"] not in held[entry["file"]]:
                out.append(entry)
        return out

    def load(self, name, default=None):
        """The file as the agent sees it: the base's, with the pending patches applied as new versions."""
        doc = read(self.base, name, default)
        for entry in self.pending(name):
            doc = apply_patch(doc, entry["patch"])
            doc["version"] = int(doc.get("version", 0)) + 1
            doc["changelog"] = list(doc.get("changelog", [])) + [dict(entry["changelog"], version=doc["version"])]
        return doc

    def path(self, rel):
        """Where a file named in a knowledge file (a gate program) lies: the learned store, else the base."""
        if self.learned and os.path.exists(os.path.join(self.learned, rel)):
            return os.path.join(self.learned, rel)
        return os.path.join(self.base, rel)

    def accept(self, name, patch, summary, proposal=None, evidence=None, files=None):
        """Record an accepted change of file `name` (a patch; `files`: {relative path: text} beside it).
        Returns the file's version that the change makes."""
        if not self.learned:
            raise ValueError("no learned store to record into (the base %s is read-only for runs)" % self.base)
        entry_id = "%s-%s" % (datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), uuid.uuid4().hex[:8])
        changelog = {"at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "summary": summary, "learned": entry_id}
        if proposal is not None:
            changelog["proposal"] = proposal
        if evidence is not None:
            changelog["evidence"] = evidence
        for rel, text in (files or {}).items():
            path = os.path.join(self.learned, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        entry = {"id": entry_id, "file": name, "patch": patch, "files": sorted(files or {}), "changelog": changelog}
        os.makedirs(self.learned, exist_ok=True)
        with open(os.path.join(self.learned, ACCEPTED), "a") as f:
            f.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return self.load(name)["version"]

    def promote(self):
        """Write every pending patch into the base (the files it changes and the programs it names);
        returns the patches promoted."""
        entries = self.pending()
        for name in sorted({e["file"] for e in entries}):
            doc = self.load(name)
            for entry in (e for e in entries if e["file"] == name):
                for rel in entry["files"]:
                    os.makedirs(os.path.dirname(os.path.join(self.base, rel)), exist_ok=True)
                    shutil.copyfile(os.path.join(self.learned, rel), os.path.join(self.base, rel))
            write(self.base, name, doc)
        return entries
