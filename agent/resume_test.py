"""A run killed with SIGKILL resumes where it stopped: no recorded row lost, at most one candidate repeated."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

from agent import events
from agent.testing import knowledge_copy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = ("candidates", "diagnostics", "predictions", "failures")


def _evolve(run_dir, kdir, evaluations):
    cmd = [sys.executable, "-m", "agent.evolve", "--run-dir", run_dir, "--knowledge-dir", kdir, "--gpu", "off",
           "--in-process", "--plain", "--no-learn", "--throttle", "0.03", "--evaluations", str(evaluations)]
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _rows(db_path):
    db = sqlite3.connect(db_path)
    out = {}
    for table in TABLES:
        cols = [c[1] for c in db.execute("PRAGMA table_info(%s)" % table)]
        keep = [c for c in cols if c not in ("finished_at",)]
        out[table] = {tuple(r) for r in db.execute("SELECT %s FROM %s" % (", ".join(keep), table))}
    done = db.execute("SELECT COUNT(*) FROM candidates WHERE status != 'pending'").fetchone()[0]
    db.close()
    return out, done


def test_sigkill_then_resume(tmp_path):
    run_dir, kdir = str(tmp_path / "runs" / "r"), knowledge_copy(tmp_path)
    db_path = os.path.join(run_dir, "agent.db")
    proc = _evolve(run_dir, kdir, 40)
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and done < 12:
        time.sleep(0.2)
        if os.path.exists(db_path):
            try:
                done = _rows(db_path)[1]
            except sqlite3.OperationalError:  # the schema is still being created
                pass
    assert done >= 12, proc.communicate()[0].decode()[-2000:]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before, _ = _rows(db_path)

    resumed = _evolve(run_dir, kdir, 40)
    out = resumed.communicate(timeout=300)[0].decode()
    assert resumed.returncode == 0, out[-3000:]
    assert "(resumed)" in out and "report: " in out
    after, _ = _rows(db_path)
    for table in TABLES:
        lost = [r for r in before[table] if r not in after[table]]
        # A row may change only by a pending candidate finishing: compare candidates by id and content.
        if table == "candidates":
            final = {r[0]: r for r in after[table]}
            lost = [r for r in lost if r[9] != "pending" or r[0] not in final]
        assert not lost, (table, lost[:3])
    starts = [e["id"] for e in events.read(os.path.join(run_dir, "events.jsonl")) if e["event"] == "assess"]
    repeated = {i for i in starts if starts.count(i) > 1}
    assert len(repeated) <= 1, repeated
    db = sqlite3.connect(db_path)
    assert db.execute("SELECT COUNT(*) FROM candidates WHERE fitness_s IS NOT NULL").fetchone()[0] >= 40
