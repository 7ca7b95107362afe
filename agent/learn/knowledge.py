"""Versioned knowledge files: what the agent has learned, as JSON a person reviews (git diff).

Every file under agent/knowledge/ is an object with `version` (an integer, +1 per
accepted change) and `changelog` (one entry per version: when, which proposal, what
changed and the evidence), beside its content. Files are replaced atomically.

The knowledge directory is the checkout's agent/knowledge: under `bazel run` that is
$BUILD_WORKSPACE_DIRECTORY/agent/knowledge (the runfiles copy is read-only), else
the directory beside this package.
"""

import datetime
import json
import os

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "knowledge")

TACTICS = "tactics.json"
REPAIRS = "repairs.json"
RULES = "rules.json"
CALIBRATION = "calibration.json"


def default_dir():
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if workspace and os.path.isdir(os.path.join(workspace, "agent", "knowledge")):
        return os.path.join(workspace, "agent", "knowledge")
    return PACKAGE_DIR


def load(directory, name, default=None):
    """The parsed file, or `default` (a fresh version-0 document when None) if it does not exist."""
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        return {"version": 0, "changelog": []} if default is None else default
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data.get("version"), int) or not isinstance(data.get("changelog"), list):
        raise ValueError("%s: a knowledge file needs an integer version and a changelog list" % path)
    return data


def save(directory, name, data, summary, proposal=None, evidence=None):
    """Write `data` as the next version of `name` with a changelog entry; returns the new version."""
    version = int(data.get("version", 0)) + 1
    entry = {
        "version": version,
        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "summary": summary,
    }
    if proposal is not None:
        entry["proposal"] = proposal
    if evidence is not None:
        entry["evidence"] = evidence
    out = {**data, "version": version, "changelog": list(data.get("changelog", [])) + [entry]}
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
    return version
