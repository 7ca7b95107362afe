"""split_producer: a compute role that fills its own ring gets a producer warpgroup."""

import pytest
from cake.ir.v1 import ir_pb2

from agent.ir_edit import NotApplicable
from agent.transforms import split_roles, testing, tma_ring
from compiler.ir.text import print_kernel
from kernels.kmeans.naive import assign_naive


def test_property_every_single_role_ring_splits_into_a_producer_and_a_consumer():
    applied = testing.check("split_producer", [{}])
    assert {p for p, _, _ in applied} == {p for p in testing.programs() if p.endswith("+loads_to_tma")}
    for _, _, out in applied:
        producer, consumer = out.roles
        assert (producer.kind, producer.warpgroups) == (ir_pb2.ROLE_KIND_PRODUCER, 1)
        assert consumer.kind == ir_pb2.ROLE_KIND_CONSUMER
        assert all(p.producer == producer.name and list(p.consumers) == [consumer.name] for p in out.pipelines)


@pytest.mark.parametrize("stages", [1, 2, 4])
def test_the_producer_loads_every_round_in_order(stages):
    out = split_roles.split_producer(tma_ring.loads_to_tma(assign_naive(), stages))
    text = print_kernel(out)
    producer = text[text.find("role load"):text.find("role main")]
    assert "cond: warp == 0 && elected" in producer and "loop t in 0 .. K / 128" in producer
    assert "mbarrier_wait { barrier: empty@round(t) }" in producer
    consumer = text[text.find("role main"):]
    assert "tma_load" not in consumer and "expect_tx" not in consumer and "mbarrier_init" not in consumer


def test_not_applicable_says_why():
    with pytest.raises(NotApplicable, match="roles already"):
        split_roles.split_producer(testing.programs()["kmeans_assign_sm90a"])
    with pytest.raises(NotApplicable, match="single-role shape"):
        split_roles.split_producer(assign_naive())


def test_property_with_stages_a_role_that_loads_its_own_tiles_splits_over_a_new_ring():
    applied = testing.check("split_producer", [{"stages": 2}, {"stages": 3}])
    programs = testing.applied_to(applied)
    assert {"kmeans_assign_naive", "knn_rows_sm80+retarget"} <= set(programs)
    assert not [p for p in programs if p.endswith("+loads_to_tma")]  # a ring already: split it without stages
    for program, args, out in applied:
        loads = tma_ring.loads_to_tma(testing.programs()[program], args["stages"])
        assert out == split_roles.split_producer(loads), program  # the ring, then the split
        assert out.pipelines[0].stages == args["stages"]


def test_stages_need_loads_to_ring():
    with pytest.raises(NotApplicable, match="fills a ring already"):
        split_roles.split_producer(tma_ring.loads_to_tma(assign_naive(), 2), stages=3)
    with pytest.raises(NotApplicable, match="fills a ring already"):
        split_roles.split_producer(testing.programs()["kmeans_assign_sm90a"], stages=2)
    with pytest.raises(NotApplicable, match="no loop of plain or cp.async"):
        split_roles.split_producer(testing.programs()["knn_merge"], stages=2)
