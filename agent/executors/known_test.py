"""Known-hash replication: a worker skips what the store had when the job was sent, exactly as the driver resumes."""

import random

import pytest

from agent import tactics as tactics_mod
from agent.executors import testing, work
from agent.executors.known import KnownCopy, KnownLog
from agent.genome import Genome
from agent.learn import knowledge
from agent.testing import small_task


def test_each_slot_gets_the_log_in_deltas_and_again_after_a_loss():
    log = KnownLog()
    log.extend(["a", "b", "c"])
    first = log.attach(0, {"known_n": 2})
    assert (first["known_base"], first["known_delta"]) == (0, ["a", "b"])
    assert log.attach(0, {"known_n": 3})["known_delta"] == ["c"]
    assert log.attach(0, {"known_n": 1})["known_delta"] == []  # sent before: the prefix is already there
    assert log.attach(1, {"known_n": 3})["known_delta"] == ["a", "b", "c"]  # another worker: all of it
    log.replied(0, {"known_len": 0})  # slot 0 started afresh
    assert log.attach(0, {"known_n": 3})["known_delta"] == ["a", "b", "c"]
    log.lost(1)
    assert log.attach(1, {"known_n": 3})["known_base"] == 0
    assert log.attach(1, {"kernel": b""}) == {"kernel": b""}  # not a proposal: untouched


def test_a_copy_knows_only_the_prefix_a_job_names_and_ignores_a_gap():
    copy = KnownCopy()
    copy.update({"known_base": 0, "known_delta": ["a", "b", "c"]})
    assert copy.known("a", 1) and not copy.known("b", 1) and copy.known("c", 3)
    assert not copy.known("z", 3)
    fresh = KnownCopy()
    fresh.update({"known_base": 2, "known_delta": ["c"]})  # it missed the first two: wait for the whole log
    assert len(fresh) == 0 and not fresh.known("c", 3)


@pytest.fixture(scope="module")
def context():
    task = small_task()
    config = work.WorkerConfig(task=task.to_json(), knowledge=work.WorkerConfig.snapshot(knowledge.PACKAGE_DIR),
                               compiler=testing.WORKER_PORT, check_cache=False)
    ctx = work.Context(config)
    yield ctx
    ctx.close()


def _seed_job(ctx):
    genome = Genome(ctx.task.family, dict(ctx.task.seed_params), {})
    kernel = tactics_mod.materialize(genome, ctx.task.fixed)
    rng = random.Random(7)
    order = sorted(ctx.tactics)
    rng.shuffle(order)
    return {"parent": kernel.SerializeToString(), "genome": genome.to_json(), "order": order, "rng": rng.getstate()}


def test_skipping_a_known_child_in_the_worker_is_the_drivers_resume(context):
    job = _seed_job(context)
    first = context.propose(job)
    assert first["pos"] is not None
    resumed = context.propose(dict(job, order=job["order"][first["pos"] + 1:], rng=first["rng"]))
    skipped = context.propose(dict(job, known_n=1, known_base=len(context.known),
                                        known_delta=[first["child"]["ir_hash"]]))
    assert skipped["child"]["ir_hash"] == resumed["child"]["ir_hash"] != first["child"]["ir_hash"]
    assert skipped["rng"] == resumed["rng"]
    assert skipped["pos"] == first["pos"] + 1 + resumed["pos"]
    assert skipped["known_len"] == 1
    # The same hash beyond the prefix the job names: not known to it.
    again = context.propose(dict(job, known_n=0))
    assert again["child"]["ir_hash"] == first["child"]["ir_hash"]
