"""Test helpers: a knowledge copy and store, a compiler port whose builds skip nvcc, a small task, a fake-measured run."""

import io
import os
import shutil

from agent import loop
from agent import task as task_mod
from agent.authors.search import SearchAuthor
from agent.bandit import Bandit
from agent.compiler_port import in_process_port
from agent.events import EventLog
from agent.learn import knowledge
from agent.measure.fake import FakeEvaluator
from agent.progress import PlainProgress
from agent.repair import RepairMap
from agent.store import FILE as STORE_FILE, Store
from agent.tactics import load as load_tactics


def knowledge_copy(tmp_path):
    """A writable copy of agent/knowledge in tmp_path."""
    out = os.path.join(str(tmp_path), "knowledge")
    shutil.copytree(knowledge.PACKAGE_DIR, out)
    return out


def knowledge_store(tmp_path):
    """A Knowledge: a copy of agent/knowledge as the base, with an empty learned store over it."""
    return knowledge.Knowledge(knowledge_copy(tmp_path), os.path.join(str(tmp_path), "learned"))


def lowering_only_port(extra_rules=(), calibration=None):
    """A port over the in-process service whose builds lower to CUDA without nvcc (CompileRequest.source_only:
    no cubin): fast, GPU-free tests. The caller closes it."""
    return in_process_port(extra_rules, calibration, source_only=True)


def small_task(**budget):
    """The default task with a small budget (evaluations, wall_s, device_s, stale_generations)."""
    t = task_mod.task(task_mod.DEFAULT_TASK)
    return t.with_budget(**dict({"evaluations": 20, "wall_s": 60.0}, **budget))


def measured_run(tmp_path, fail_when=None, authors=None, ranking=None, **budget):
    """Run the loop in measure mode on CPU (lowering-only builds, FakeEvaluator); (evolver, why, store, evaluator).
    `authors`: (tactics, bandit, fixed) -> the authors (default: the tactic search); `ranking`: the evolver's
    learned ranker (a live_ranker.LiveRanker)."""
    task = small_task(**budget)
    tactics, _ = load_tactics(knowledge.PACKAGE_DIR, task.family)
    os.makedirs(str(tmp_path), exist_ok=True)
    store = Store(str(tmp_path / STORE_FILE))
    store.start_run("m", task.to_json(), {"mode_line": "fake"}, loop.MEASURE, 0)
    bandit = Bandit({n: t.weight for n, t in tactics.items()})
    evaluator = FakeEvaluator(task.shapes, task.device, fail_when=fail_when)
    evolver = loop.Evolver(task, store, EventLog(str(tmp_path / "events.jsonl")), lowering_only_port(), evaluator,
                           tactics, RepairMap.load(knowledge.PACKAGE_DIR), bandit,
                           (authors or _search)(tactics, bandit, task.fixed), PlainProgress(io.StringIO()),
                           loop.Settings(mode=loop.MEASURE, seed=0))
    evolver.ranking = ranking
    return evolver, evolver.run(), store, evaluator


def _search(tactics, bandit, fixed):
    return [SearchAuthor(tactics, bandit, fixed)]
