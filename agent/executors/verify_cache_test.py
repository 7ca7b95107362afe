"""Check results cached across runs: the same answers as the port, from the cache the second time, keyed by what
they depend on."""

import pytest

from agent import task as task_mod
from agent.compiler_port import open_port
from agent.executors.verify_cache import CachedPort, CheckCache
from agent.genome import Genome, materialize
from kernels.kmeans.schedules import assign_sm90a


def _kernels():
    t = task_mod.task(task_mod.DEFAULT_TASK)
    good = materialize(Genome(t.family, t.seed_params, {}), t.fixed)
    bad = assign_sm90a(block_k=256, stages=8)  # too much shared memory: the verifier says so
    return t, good, bad


def test_answers_come_back_the_same_from_the_cache_and_across_processes(tmp_path):
    t, good, bad = _kernels()
    with open_port("in-process") as port:
        _same_answers(str(tmp_path / "checks.db"), port, t, good, bad)


def _same_answers(path, port, t, good, bad):
    first = CachedPort(port, CheckCache(path), context="k1")
    want = [port.verify(good), port.verify(bad), port.analyze(good, t.shapes, t.device)]
    got = [first.verify(good), first.verify(bad), first.analyze(good, t.shapes, t.device)]
    assert (first.hits, first.misses) == (0, 3)
    again = CachedPort(port, CheckCache(path), context="k1")  # a later run: a new connection to the same file
    cached = [again.verify(good), again.verify(bad), again.analyze(good, t.shapes, t.device)]
    assert (again.hits, again.misses) == (3, 0)
    for answers in (got, cached):
        assert [d.id for d in answers[1]] == [d.id for d in want[1]] and any(d.severity == 1 for d in answers[1])
        assert answers[0] == want[0]
        assert answers[2].report == want[2].report and answers[2].features == want[2].features


def test_other_knowledge_or_shapes_miss_and_an_unusable_cache_is_skipped(tmp_path):
    t, good, _ = _kernels()
    path = str(tmp_path / "checks.db")
    with open_port("in-process") as port:
        _misses(tmp_path, path, port, t, good)


def _misses(tmp_path, path, port, t, good):
    CachedPort(port, CheckCache(path), context="k1").analyze(good, t.shapes, t.device)
    other = CachedPort(port, CheckCache(path), context="k2")
    other.analyze(good, t.shapes, t.device)
    other.analyze(good, dict(t.shapes, N=4096), t.device)
    assert (other.hits, other.misses) == (0, 2)
    (tmp_path / "file").write_text("")
    with pytest.warns(RuntimeWarning, match="unusable"):
        broken = CachedPort(port, CheckCache(str(tmp_path / "file" / "checks.db")))
    assert broken.verify(good) == port.verify(good) and broken.misses == 1
