"""The population: one elite per niche, fastest first, and the latest failures with their errors, from the store."""

from agent.authors.population import Population, niche
from agent.store import Store
from agent.testing import small_task
from compiler.ir.hashing import ir_hash
from compiler.ir.text import print_kernel
from kernels.kmeans.schedules import assign_sm90a


def _store(tmp_path, kernels):
    store = Store(str(tmp_path / "agent.db"))
    store.start_run("r", small_task().to_json(), {}, "measure", 0)
    for kernel, status, fitness, author in kernels:
        cid = store.insert_candidate(ir_hash(kernel), print_kernel(kernel), None, None, "t", author, 0)
        store.record(cid, status, fitness)
    return store


def test_the_niche_is_the_schedules_shape():
    assert niche(assign_sm90a()) == ((("producer", 4), ("consumer", 8)), 3, ("wgmma", 128), False)
    assert niche(assign_sm90a(consumers=1, block_k=64))[0::2] == (((("producer", 4), ("consumer", 4))), ("wgmma", 64))
    assert niche(assign_sm90a(name="renamed")) == niche(assign_sm90a())


def test_one_elite_per_niche_fastest_first_and_failures_newest_first(tmp_path):
    store = _store(tmp_path, [
        (assign_sm90a(), "measured", 3.0e-5, "search"),
        (assign_sm90a(name="same_niche_slower"), "measured", 4.0e-5, "search"),
        (assign_sm90a(stages=2), "measured", 2.5e-5, "llm"),
        (assign_sm90a(stages=5), "invalid", None, "llm"),
        (assign_sm90a(stages=6), "failed", None, "search"),
    ])
    pop = Population(store)
    assert [(e.id, e.fitness_s, e.author) for e in pop.elites(10)] == [(3, 2.5e-5, "llm"), (1, 3.0e-5, "search")]
    assert [e.id for e in pop.elites(1)] == [3]
    assert [(r.id, r.status) for r in pop.rejected(5)] == [(5, "failed"), (4, "invalid")]
    assert [r.id for r in pop.rejected(5, author="llm")] == [4]
