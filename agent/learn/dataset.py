"""The measured-candidate dataset: every candidate a run measured, with its features, as JSON lines.

One row per measured candidate:

    {"task": "kmeans-assign-paper", "run": "h200-paper", "ir_hash": "...", "device": "NVIDIA H200",
     "toolchain": "...", "measured_s": 0.00095, "predicted_s": 0.0011, "features": {"cost.wgmma_s": ..., "ir.roles.consumer": ...}}

`from_store` reads a run's store (agent/store.py): the measured median, the analytic
prediction and calibration features recorded at prediction time, and, through the
compiler port, the verifier's IR features of the candidate's IR (ranker.summarize
makes them one fixed-width row). So the ranker trains and is judged without a GPU and
without the compiler. `write`/`read` keep rows sorted by (task, run, ir_hash), so a
re-export diffs cleanly; `read` refuses a row that lacks a field, naming it.
"""

import json

from agent.learn import ranker

FIELDS = ("task", "run", "ir_hash", "device", "toolchain", "measured_s", "predicted_s", "features")


def from_store(store_path, port, toolchain=None):
    """The dataset rows of every measured candidate in the store at `store_path`.

    The device comes from each measurement's environment record; the toolchain from the
    measurement when it recorded one, else `toolchain` (required then: a row without one
    is refused)."""
    import sqlite3

    from compiler.ir.text import parse_kernel

    db = sqlite3.connect("file:%s?mode=ro" % store_path, uri=True)
    try:
        runs = db.execute("SELECT id, task FROM runs").fetchall()
        query = ("SELECT c.ir_hash, c.ir_text, p.predicted_s, p.features, m.median_s, m.detail FROM candidates c "
                 "JOIN predictions p ON p.candidate_id = c.id JOIN measurements m ON m.candidate_id = c.id "
                 "WHERE c.status = 'measured' ORDER BY c.id")
        found = db.execute(query).fetchall()
    finally:
        db.close()
    if len(runs) != 1:
        raise ValueError("%s: a dataset export reads a store of one run, this one has %d" % (store_path, len(runs)))
    run, task = runs[0][0], json.loads(runs[0][1])
    rows = []
    for ir_hash, ir_text, predicted_s, features, median_s, detail in found:
        detail = json.loads(detail or "{}")
        chain = detail.get("toolchain") or toolchain
        if not chain:
            raise ValueError("%s: candidate %s has no toolchain recorded; pass toolchain=" % (store_path, ir_hash[:12]))
        parsed = parse_kernel(ir_text)
        kernel = getattr(parsed, "kernel", parsed)
        rows.append({"task": task.get("name", run), "run": run, "ir_hash": ir_hash,
                     "device": detail.get("environment", {}).get("gpu_name", task.get("device", "")),
                     "toolchain": chain, "measured_s": median_s, "predicted_s": predicted_s,
                     "features": ranker.summarize(json.loads(features), predicted_s, port.features(kernel))})
    return rows


def dumps(rows):
    """The text of a dataset file of `rows` (sorted by task, run, IR hash)."""
    rows = sorted(rows, key=lambda r: (r["task"], r["run"], r["ir_hash"]))
    return "".join(json.dumps({k: r[k] for k in FIELDS}, sort_keys=True) + "\n" for r in rows)


def write(path, rows):
    with open(path, "w") as f:
        f.write(dumps(rows))


def read(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [k for k in FIELDS if k not in row]
            if missing:
                raise ValueError("%s:%d: a dataset row needs %s" % (path, n, ", ".join(missing)))
            rows.append(row)
    return rows
