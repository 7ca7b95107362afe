"""Check results kept across runs: a compiler port whose verify and analyze answers are cached by IR hash.

Within a run the store never assesses one IR twice; across runs the same kernels come
back (the seed and its neighbourhood). `CheckCache` is one SQLite file (WAL) in CAKE's
cache root (compiler/locations.py: agent/checks.db), shared by every worker process on
the machine. A key is the IR hash with everything else the answer depends on: the
knowledge the port applies (learned rules, calibration: `context`), the shapes and
device of an analysis, and a fingerprint of the compiler's own files, so an edited
verifier or cost model never answers from an old entry. A cache that cannot be opened
or written is skipped with one warning: the answers are computed as without it.
"""

import functools
import hashlib
import importlib.util
import json
import os
import sqlite3
import warnings

from cake.compiler.v1 import compiler_service_pb2

from compiler import locations
from compiler.ir.hashing import ir_hash

SCHEMA = "CREATE TABLE IF NOT EXISTS checks (key TEXT PRIMARY KEY, answer BLOB NOT NULL, features TEXT)"


class CacheUnavailable(RuntimeWarning):
    """The check cache cannot be used here; checks are computed uncached."""


@functools.lru_cache(maxsize=None)
def compiler_fingerprint():
    """A digest of the compiler package's sources and data (what a verify or analyze answer depends on)."""
    spec = importlib.util.find_spec("compiler")
    digest = hashlib.sha256()
    for root in sorted(spec.submodule_search_locations):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".py", ".json")):
                    path = os.path.join(dirpath, name)
                    digest.update(os.path.relpath(path, root).encode() + b"\0")
                    with open(path, "rb") as f:
                        digest.update(f.read())
    return digest.hexdigest()


def default_path():
    return os.path.join(locations.cache_dir(), "agent", "checks.db")


class CheckCache:
    def __init__(self, path=None):
        self.path = path or default_path()
        self.db = None
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(SCHEMA)
        except (OSError, sqlite3.Error) as e:
            self._give_up(e)

    def _give_up(self, error):
        warnings.warn(CacheUnavailable("check cache %s unusable (%s): checking uncached" % (self.path, error)),
                      stacklevel=3)
        if self.db is not None:
            self.db.close()
        self.db = None

    def get(self, key):
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT answer, features FROM checks WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return row

    def put(self, key, answer, features=None):
        if self.db is None:
            return
        try:
            self.db.execute("INSERT OR REPLACE INTO checks VALUES (?, ?, ?)", (key, answer, features))
        except sqlite3.Error as e:
            self._give_up(e)

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None


def _key(*parts):
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()


class CachedPort:
    """`port` with verify and analyze answered from `cache` when it holds the answer (compile passes through)."""

    def __init__(self, port, cache, context=""):
        self.port, self.cache = port, cache
        self.context = "%s|%s" % (context, compiler_fingerprint())
        self.name = port.name
        self.hits = self.misses = 0

    def verify(self, kernel):
        key = _key("verify", ir_hash(kernel), self.context)
        row = self.cache.get(key)
        if row is not None:
            self.hits += 1
            return list(compiler_service_pb2.VerifyResponse.FromString(row[0]).diagnostics)
        self.misses += 1
        diags = self.port.verify(kernel)
        self.cache.put(key, compiler_service_pb2.VerifyResponse(diagnostics=diags).SerializeToString())
        return diags

    def analyze(self, kernel, shapes, device):
        from agent.compiler_port import Analysis

        key = _key("analyze", ir_hash(kernel), json.dumps(shapes, sort_keys=True), device, self.context)
        row = self.cache.get(key)
        if row is not None:
            self.hits += 1
            r = compiler_service_pb2.AnalyzeResponse.FromString(row[0])
            return Analysis(r.report if r.HasField("report") else None, list(r.diagnostics), json.loads(row[1]))
        self.misses += 1
        a = self.port.analyze(kernel, shapes, device)
        answer = compiler_service_pb2.AnalyzeResponse(diagnostics=a.diagnostics)
        if a.report is not None:
            answer.report.CopyFrom(a.report)
        self.cache.put(key, answer.SerializeToString(), json.dumps(a.features, sort_keys=True))
        return a

    def compile(self, kernel):
        return self.port.compile(kernel)

    def close(self):
        self.port.close()
