"""Test helpers for the executors: small runs of the serial loop and the pipeline, side by side.

Builds run with agent.testing's lowering-only port (no nvcc), measurements with the
fake evaluator, so a run takes seconds on CPU; `rows` is what two runs must agree on.
"""

import io
import os

from agent import loop
from agent.authors.search import SearchAuthor
from agent.bandit import Bandit
from agent.events import EventLog
from agent.executors import open_executor
from agent.executors.pipeline import Pipeline
from agent.executors.work import Measurer, WorkerConfig
from agent.learn import knowledge
from agent.measure.fake import FakeEvaluator
from agent.progress import PlainProgress
from agent.repair import RepairMap
from agent.store import FILE as STORE_FILE, Store
from agent.tactics import load as load_tactics
from agent.testing import lowering_only_port, small_task

WORKER_PORT = "agent.testing:lowering_only_port"


def run(directory, mode, executor=None, window=0, workers=2, gpus=2, fake_delay_s=0.0, during=None, ranking=None,
        **budget):
    """One run in `directory`: the serial loop (executor None) or the pipeline on "local" or "ray";
    `during(executor, database path)` is called from a thread once the run is under way; `ranking`: the learned
    ranker (loop.Evolver.ranking). (store, why it stopped)."""
    task = small_task(**budget)
    os.makedirs(directory, exist_ok=True)
    tactics, _ = load_tactics(knowledge.PACKAGE_DIR, task.family)  # as evolve loads them: the family's moves too
    store = Store(os.path.join(directory, STORE_FILE))
    store.start_run("t", task.to_json(), {"mode_line": "test"}, mode, 0)
    bandit = Bandit({n: t.weight for n, t in tactics.items()})
    measure = mode == loop.MEASURE
    args = (task, store, EventLog(os.path.join(directory, "events.jsonl")), lowering_only_port(),
            FakeEvaluator(task.shapes, task.device) if measure else None, tactics,
            RepairMap.load(knowledge.PACKAGE_DIR), bandit, [SearchAuthor(tactics, bandit, task.fixed)],
            PlainProgress(io.StringIO()), loop.Settings(mode=mode, seed=0))
    if executor is None:
        evolver = loop.Evolver(*args)
        evolver.ranking = ranking
        return store, evolver.run()
    config = WorkerConfig(task=task.to_json(), knowledge=WorkerConfig.snapshot(knowledge.PACKAGE_DIR),
                          compiler=WORKER_PORT, check_cache=False)
    measurer = Measurer(task.to_json(), fake=True, fake_delay_s=fake_delay_s) if measure else None
    from agent import seeds

    ex = open_executor(executor, config, workers, measurer, gpus if measure else 0,
                       seeds.family(task.family).binding, os.path.join(directory, "evaluations.jsonl"))
    try:
        evolver = Pipeline(*args, executor=ex, window=window)
        evolver.ranking = ranking
        if during is not None:
            import threading

            threading.Thread(target=during, args=(ex, store.path), daemon=True).start()
        return store, evolver.run()
    finally:
        ex.close()


def rows(store):
    """Every candidate as two runs that decided the same must both have it."""
    return [tuple(r) for r in store.db.execute(
        "SELECT id, ir_hash, parent_id, tactic, generation, repair_depth, status, fitness_s FROM candidates ORDER BY id")]


def finished(db_path):
    """Candidates no longer pending, read on a connection of the caller's own (a test's thread)."""
    import sqlite3

    db = sqlite3.connect(db_path, timeout=30.0)
    try:
        return db.execute("SELECT COUNT(*) FROM candidates WHERE status != 'pending'").fetchone()[0]
    finally:
        db.close()
