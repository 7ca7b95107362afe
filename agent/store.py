"""The run database: every candidate, diagnostic, prediction, measurement, failure and proposal.

One SQLite file per run directory (agent.db), in WAL mode. Every step of the loop
commits before the next begins, and everything it learns about a candidate is
written in one transaction with the candidate's final status, so a run killed at
any moment (SIGKILL included) resumes from the database: finished candidates keep
their rows, and a candidate caught in flight (status pending or analyzed) is simply
processed again. synchronous=NORMAL keeps commits durable against a killed process
(the WAL is in the OS's hands); only a power loss can lose the last commits.
"""

import contextlib
import json
import sqlite3
import time

FILE = "agent.db"  # a run directory's store

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, task TEXT NOT NULL, config TEXT NOT NULL, mode TEXT NOT NULL, seed INTEGER NOT NULL,
  started_at REAL NOT NULL, finished_at REAL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates (
  id INTEGER PRIMARY KEY, ir_hash TEXT NOT NULL UNIQUE, ir_text TEXT NOT NULL, genome TEXT,
  parent_id INTEGER REFERENCES candidates(id), tactic TEXT NOT NULL, author TEXT NOT NULL,
  generation INTEGER NOT NULL, repair_depth INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,
  fitness_s REAL, created_at REAL NOT NULL, finished_at REAL);
CREATE INDEX IF NOT EXISTS candidates_status ON candidates(status);
CREATE INDEX IF NOT EXISTS candidates_fitness ON candidates(fitness_s);
CREATE TABLE IF NOT EXISTS diagnostics (
  id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id), stage TEXT NOT NULL,
  severity TEXT NOT NULL, diag_id TEXT NOT NULL, path TEXT NOT NULL, message TEXT NOT NULL, fix_hint TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS predictions (
  candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id), predicted_s REAL NOT NULL, bottleneck TEXT NOT NULL,
  calibration TEXT NOT NULL, report TEXT NOT NULL, features TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
  candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id), median_s REAL NOT NULL, p10_s REAL, p90_s REAL,
  device_s REAL NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS failures (
  id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id), stage TEXT NOT NULL,
  kind TEXT NOT NULL, diag_id TEXT NOT NULL, signature TEXT NOT NULL, message TEXT NOT NULL, ir_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tactic_stats (tactic TEXT PRIMARY KEY, n INTEGER NOT NULL, reward_sum REAL NOT NULL);
CREATE TABLE IF NOT EXISTS proposals (
  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, signature TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL,
  gate TEXT NOT NULL, knowledge_version INTEGER, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS peers (name TEXT PRIMARY KEY, median_s REAL, detail TEXT NOT NULL);
"""

FINAL = ("invalid", "evaluated", "pruned", "measured", "failed")
REJECTED = ("invalid", "failed")  # the final statuses of candidates the compiler, the contract or the GPU refused


class Store:
    def __init__(self, path):
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)

    def close(self):
        self.db.close()

    @contextlib.contextmanager
    def tx(self):
        """One transaction: committed when the block ends, rolled back if it raises."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- the run -----------------------------------------------------------------

    def run(self):
        row = self.db.execute("SELECT * FROM runs").fetchone()
        return dict(row) if row else None

    def start_run(self, run_id, task, config, mode, seed):
        with self.tx() as db:
            db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, NULL, 'running')",
                       (run_id, json.dumps(task, sort_keys=True), json.dumps(config, sort_keys=True), mode, seed,
                        time.time()))

    def finish_run(self, status):
        with self.tx() as db:
            db.execute("UPDATE runs SET finished_at = ?, status = ?", (time.time(), status))

    def meta(self, key, default=None):
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row["value"]) if row else default

    def set_meta(self, key=None, value=None, **values):
        """Set one key (key, value) or several (keyword arguments) in one transaction."""
        if key is not None:
            values[key] = value
        with self.tx() as db:
            for k, v in values.items():
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (k, json.dumps(v)))

    # -- candidates ------------------------------------------------------------------

    def insert_candidate(self, ir_hash, ir_text, genome, parent_id, tactic, author, generation, repair_depth=0):
        with self.tx() as db:
            cur = db.execute(
                "INSERT INTO candidates (ir_hash, ir_text, genome, parent_id, tactic, author, generation, repair_depth,"
                " status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                (ir_hash, ir_text, genome, parent_id, tactic, author, generation, repair_depth, time.time()))
            return cur.lastrowid

    def hashes_after(self, cid):
        """(id, ir_hash) of the candidates inserted after candidate `cid`, in insertion order."""
        return self.db.execute("SELECT id, ir_hash FROM candidates WHERE id > ? ORDER BY id", (cid,)).fetchall()

    def has_hash(self, ir_hash):
        return self.db.execute("SELECT 1 FROM candidates WHERE ir_hash = ?", (ir_hash,)).fetchone() is not None

    def candidate(self, cid):
        row = self.db.execute("SELECT * FROM candidates WHERE id = ?", (cid,)).fetchone()
        return dict(row) if row else None

    def candidates(self, status=None):
        if status is None:
            rows = self.db.execute("SELECT * FROM candidates ORDER BY id")
        else:
            rows = self.db.execute("SELECT * FROM candidates WHERE status = ? ORDER BY id", (status,))
        return [dict(r) for r in rows]

    def rejected(self, limit, author=None):
        """The latest `limit` candidates the verifier, the contract, the build or the GPU rejected (newest first),
        of `author` alone when given."""
        query = "SELECT * FROM candidates WHERE status IN (%s)" % ", ".join("?" * len(REJECTED))
        args = REJECTED
        if author is not None:
            query, args = query + " AND author = ?", args + (author,)
        return [dict(r) for r in self.db.execute(query + " ORDER BY id DESC LIMIT ?", args + (limit,))]

    def first(self):
        """The run's first candidate (its seed)."""
        row = self.db.execute("SELECT * FROM candidates ORDER BY id LIMIT 1").fetchone()
        return dict(row) if row else None

    def ranked(self, limit=None, exclude=frozenset()):
        """Candidates with a fitness, fastest first, but those whose ids are in `exclude`.

        With a limit, the ranking reads ids only and then the rows it returns: a pipeline
        with thousands of measurements in flight excludes them all at every draw, and
        reading their whole rows (IR text included) was most of its driver's time."""
        if not limit:
            rows = self.db.execute("SELECT * FROM candidates WHERE fitness_s IS NOT NULL ORDER BY fitness_s, id")
            return [dict(r) for r in rows if r["id"] not in exclude]
        ids = self.db.execute("SELECT id FROM candidates WHERE fitness_s IS NOT NULL ORDER BY fitness_s, id LIMIT ?",
                              (limit + len(exclude),))
        chosen = [i for (i,) in ids if i not in exclude][:limit]
        return [self.candidate(i) for i in chosen]

    def count(self, table, where="1", args=()):
        return self.db.execute("SELECT COUNT(*) FROM %s WHERE %s" % (table, where), args).fetchone()[0]

    def record(self, cid, status, fitness_s=None, diagnostics=(), prediction=None, measurement=None, failures=(),
               rewards=(), children=(), device_s=0.0):
        """Everything learned about candidate `cid`, with its new status, in one transaction.

        diagnostics: (stage, Diagnostic) pairs; prediction/measurement: column dicts;
        failures: column dicts; rewards: (tactic, reward) pairs; children: insert_candidate
        argument tuples (repair candidates), inserted pending; device_s: GPU seconds spent
        (added to the run's total). Returns the children's ids.
        """
        now = time.time()
        ids = []
        with self.tx() as db:
            db.execute("UPDATE candidates SET status = ?, fitness_s = ?, finished_at = ? WHERE id = ?",
                       (status, fitness_s, now, cid))
            for stage, d in diagnostics:
                db.execute("INSERT INTO diagnostics (candidate_id, stage, severity, diag_id, path, message, fix_hint)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (cid, stage, _severity(d.severity), d.id, d.path, d.message, d.fix_hint))
            if prediction is not None:
                db.execute("INSERT OR REPLACE INTO predictions VALUES (?, ?, ?, ?, ?, ?)",
                           (cid, prediction["predicted_s"], prediction["bottleneck"], prediction["calibration"],
                            prediction["report"], json.dumps(prediction["features"], sort_keys=True)))
            if measurement is not None:
                db.execute("INSERT OR REPLACE INTO measurements VALUES (?, ?, ?, ?, ?, ?)",
                           (cid, measurement["median_s"], measurement.get("p10_s"), measurement.get("p90_s"),
                            measurement["device_s"], json.dumps(measurement.get("detail", {}), sort_keys=True,
                                                                default=str)))
            for f in failures:
                db.execute("INSERT INTO failures (candidate_id, stage, kind, diag_id, signature, message, ir_hash)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (cid, f["stage"], f["kind"], f["diag_id"], f["signature"], f["message"], f["ir_hash"]))
            for tactic, reward in rewards:
                _reward(db, tactic, reward)
            if device_s:
                db.execute("INSERT INTO meta VALUES ('device_s', ?) ON CONFLICT(key) DO UPDATE SET"
                           " value = CAST(value AS REAL) + excluded.value", (json.dumps(float(device_s)),))
            for child in children:
                ir_hash, ir_text, genome, parent_id, tactic, author, generation, depth = child
                cur = db.execute(
                    "INSERT OR IGNORE INTO candidates (ir_hash, ir_text, genome, parent_id, tactic, author, generation,"
                    " repair_depth, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                    (ir_hash, ir_text, genome, parent_id, tactic, author, generation, depth, now))
                if cur.rowcount:
                    ids.append(cur.lastrowid)
        return ids

    def diagnostics(self, cid):
        return [dict(r) for r in self.db.execute("SELECT * FROM diagnostics WHERE candidate_id = ? ORDER BY id", (cid,))]

    def prediction(self, cid):
        row = self.db.execute("SELECT * FROM predictions WHERE candidate_id = ?", (cid,)).fetchone()
        return dict(row) if row else None

    def measurement(self, cid):
        row = self.db.execute("SELECT * FROM measurements WHERE candidate_id = ?", (cid,)).fetchone()
        return dict(row) if row else None

    def failures(self):
        return [dict(r) for r in self.db.execute("SELECT * FROM failures ORDER BY id")]

    def failure_counts(self):
        """(stage:kind) -> count, for the progress display and the report."""
        rows = self.db.execute("SELECT stage || ':' || kind AS k, COUNT(*) AS n FROM failures GROUP BY k ORDER BY n DESC")
        return {r["k"]: r["n"] for r in rows}

    def predicted_and_measured(self):
        """(candidate id, predicted seconds, measured seconds) of every measured candidate."""
        rows = self.db.execute("SELECT p.candidate_id, p.predicted_s, m.median_s FROM predictions p "
                               "JOIN measurements m ON m.candidate_id = p.candidate_id ORDER BY p.candidate_id")
        return [tuple(r) for r in rows]

    def calibration_pairs(self):
        """(features dict, measured seconds) of every measured candidate, in candidate order."""
        rows = self.db.execute("SELECT p.features, m.median_s FROM predictions p "
                               "JOIN measurements m ON m.candidate_id = p.candidate_id ORDER BY p.candidate_id")
        return [(json.loads(r["features"]), r["median_s"]) for r in rows if r["features"] != "{}"]

    # -- tactic statistics, proposals, peers ---------------------------------------------

    def tactic_stats(self):
        return {r["tactic"]: [r["n"], r["reward_sum"]] for r in self.db.execute("SELECT * FROM tactic_stats")}

    def add_reward(self, tactic, reward):
        with self.tx() as db:
            _reward(db, tactic, reward)

    def add_proposal(self, kind, signature, payload, status, gate, knowledge_version):
        with self.tx() as db:
            db.execute("INSERT INTO proposals (kind, signature, payload, status, gate, knowledge_version, created_at)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (kind, signature, json.dumps(payload, sort_keys=True), status, json.dumps(gate, sort_keys=True),
                        knowledge_version, time.time()))

    def proposals(self):
        return [dict(r) for r in self.db.execute("SELECT * FROM proposals ORDER BY id")]

    def set_peer(self, name, median_s, detail):
        with self.tx() as db:
            db.execute("INSERT OR REPLACE INTO peers VALUES (?, ?, ?)", (name, median_s, json.dumps(detail, default=str)))

    def peers(self):
        return {r["name"]: dict(r) for r in self.db.execute("SELECT * FROM peers")}


def _reward(db, tactic, reward):
    db.execute("INSERT INTO tactic_stats VALUES (?, 1, ?) ON CONFLICT(tactic) DO UPDATE SET n = n + 1,"
               " reward_sum = reward_sum + excluded.reward_sum", (tactic, reward))


def _severity(value):
    return {1: "error", 2: "warning", 3: "note"}.get(value, "unspecified")
