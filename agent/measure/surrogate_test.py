"""The surrogate GPU: known kernels at their measured medians, others at the ranker's estimate, and a measured replay."""

import os
import statistics

import pytest

from agent import task as task_mod
from agent import tactics as tactics_mod
from agent.learn import dataset, knowledge, macros
from agent.measure.surrogate import SurrogateEvaluator
from agent.repair import RepairMap
from agent.seeds import family
from agent.testing import lowering_only_port
from compiler.ir.hashing import ir_hash

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATASET = os.path.join(ROOT, "benchmarks", "datasets", "measured_candidates_h200.jsonl")


@pytest.fixture(scope="module")
def port():
    p = lowering_only_port()
    yield p
    p.close()


def _seed(task):
    return family(task.family).build(task.seed_params, task.fixed)


def test_a_measured_kernel_gets_its_median_and_another_the_rankers_estimate(port):
    task = task_mod.task("kmeans-assign-paper")
    rows = dataset.read(DATASET)
    ev = SurrogateEvaluator(task, rows, port)
    seed = _seed(task)
    seed_times = [r["measured_s"] for r in rows if r["task"] == task.name and r["ir_hash"] == ir_hash(seed)]
    assert len(seed_times) >= 3  # each H200 run measured the seed
    m = ev.measure(None, seed, None, "seed")
    assert m.passed and m.median_s == statistics.median(seed_times) and m.detail == {"surrogate": "measured before"}
    renamed = type(seed)()
    renamed.CopyFrom(seed)
    renamed.name = "never_measured"
    est = ev.measure(None, renamed, None, "renamed")
    assert est.passed and est.detail == {"surrogate": "estimated"} and est.median_s >= ev.best_s
    assert dict(ev.answers) == {"measured before": 1, "estimated": 1}


def test_too_few_rows_of_the_task_are_refused(port):
    with pytest.raises(ValueError, match="a surrogate of kmeans-assign-paper needs at least 12 measured rows of it, got 0"):
        SurrogateEvaluator(task_mod.task("kmeans-assign-paper"), [], port)


def test_a_measured_replay_on_it_improves_on_the_seed(port):
    task = task_mod.task("kmeans-assign-paper")
    kb = knowledge.Knowledge(knowledge.PACKAGE_DIR)
    ev = macros.surrogate(task, kb, port)
    current, _ = tactics_mod.load(kb, task.family, "measure")
    [curve] = macros.replay(task, current, port, RepairMap.load(kb), seeds=(0,), evaluations=12, evaluator=ev)
    assert len(curve) == 12 and curve[-1] < curve[0] and curve == sorted(curve, reverse=True)
