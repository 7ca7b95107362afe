"""The protocol model on a small TMA ring: defects that need the ring to wrap show at t = stages + 1,
and the model's limits turn into a note, never an exception."""

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir.expr import E, as_expr
from compiler.testing.verifier_kernels import alternating, lapping, ring, warpgroup_sync
from compiler.verify import threads, verify
from compiler.verify.context import Context
from compiler.verify.protocol import program, simulate


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_clean_ring_runs_every_trip_count_up_to_2s_plus_1(stages):
    res = simulate.run(Context(ring(stages=stages)))
    assert res.violation is None and res.skipped is None
    assert [t for t, _ in res.scenarios] == list(range(1, 2 * stages + 2))


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("knob, kind", [("release", "deadlock"), ("wait_empty", "ring_race")])
def test_wrap_around_defects_show_at_stages_plus_one(stages, knob, kind):
    res = simulate.run(Context(ring(stages=stages, **{knob: False})))
    assert res.violation.kind == kind
    assert res.scenarios[-1][0] == stages + 1


def test_short_arrivals_show_on_the_first_trip():
    res = simulate.run(Context(ring(empty_arrivals=33)))
    assert res.violation.kind == "arrival_count" and res.scenarios[-1][0] == 1


def test_expect_tx_mismatch():
    k = ring(expect_bytes=128)
    res = simulate.run(Context(k))
    assert res.violation.kind == "tx_bytes"


def test_lapped_waiter_sees_another_rounds_phase():
    res = simulate.run(Context(lapping()))
    assert res.violation.kind == "phase_mismatch"
    assert res.violation.path == "kernel.roles[1].body[2].mbarrier_wait"


@pytest.mark.parametrize("stages", [2, 3, 4, 5, 6])
def test_consumers_taking_turns_need_a_ring_lap_of_their_own_rounds(stages):
    # With an odd depth the round a lap before warp 0's round 2j is warp 1's, which warp 0 never waited for: on
    # hardware it may still be in flight, and the slot's parity then reads as complete for warp 0 already (two
    # interleaved KNN classes on a 5-deep ring faulted on the H200).
    found = [(d.id, d.path) for d in verify(alternating(stages))]
    if stages % 2 == 0:
        assert found == []
    else:
        assert found == [("CAKE-SYNC-008", "kernel.roles[1].body[1].loop.body[0].mbarrier_wait")]
        (d,) = verify(alternating(stages))
        assert "without being ordered after any wait that observed completion 0 (round 0)" in d.message


def test_too_many_thread_classes_skip_the_model_with_a_note():
    k = ring()
    # A condition comparing `thread` with a loop variable gives every thread its own class.
    loop = k.roles[1].body[1].loop
    arrive = loop.body[2]
    guarded = ir_pb2.Op(branch=ir_pb2.Branch(cond=as_expr(E.sym("thread") != E.sym("i") + 100)))
    guarded.branch.then_body.add().CopyFrom(arrive)
    arrive.CopyFrom(guarded)
    k.roles[1].warps = 4
    res = simulate.run(Context(k))
    assert res.skipped and "thread classes" in res.skipped
    notes = [d for d in verify(k) if d.id == "CAKE-SYNC-016"]
    assert len(notes) == 1 and "did not run" in notes[0].message


def test_huge_loops_stop_at_the_step_budget():
    k = ring()
    busy = k.roles[1].body.add(loop=ir_pb2.Loop(var="b", start=as_expr(0), end=as_expr(10 ** 9)))
    busy.loop.body.add(fill=ir_pb2.Fill(dst=ir_pb2.TileRef(region="v")))
    res = simulate.run(Context(k))
    assert res.skipped and "stopped after" in res.skipped


@pytest.mark.parametrize("warpgroups", [1, 2, 4])
def test_each_warpgroup_syncs_on_its_own_named_barrier(warpgroups):
    k = warpgroup_sync(warpgroups)
    assert verify(k) == []
    ctx = Context(k)
    ((nodes, conds, values),), _ = program.compile_roles(ctx)
    # The index reads only `warpgroup`: one class spans the warpgroups and reaches each of their barriers.
    (cls,) = threads.role_classes(0, ctx.spans[0].threads, conds, values)
    assert cls.weight == 128 * warpgroups


def test_named_barrier_array_indices():
    k = warpgroup_sync(2, index=(E.sym("warpgroup") + E.sym("i")) % 2)  # changes with the loop variable
    assert verify(k) == []
    one = [(d.id, d.path) for d in verify(warpgroup_sync(2, count=1, index=None))]
    assert one == [("CAKE-SYNC-005", "kernel.roles[0].body[0].loop.body[1].named_barrier_sync")]
    short = verify(warpgroup_sync(3, count=2))
    assert [d.id for d in short] == ["CAKE-SYNC-014"] and "index 2 is outside `done`'s 2" in short[0].message
    past = verify(warpgroup_sync(2, index=2))
    assert [(d.id, d.message) for d in past] == [("CAKE-SYNC-015", "index 2 is outside `done`'s 2 barriers")]


def test_named_barrier_index_by_lane_splits_classes():
    k = warpgroup_sync(1, count=2, threads=64, index=E.sym("lane") % 2)
    assert verify(k) == []


def test_a_named_barrier_short_of_threads_deadlocks_naming_it():
    (d,) = verify(warpgroup_sync(2, threads=256))
    assert d.id == "CAKE-SYNC-004" and "`done[0]` (128 of its 256 threads arrived)" in d.message
