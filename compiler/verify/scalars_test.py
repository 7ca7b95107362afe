"""Register scalars in expressions: where they may appear, who may read them, and data-dependent branches
in the protocol model (explored taken and not taken; no synchronization under them)."""

from cake.ir.v1 import ir_pb2

from compiler.ir.expr import E, as_expr
from compiler.testing.verifier_kernels import data_branch, ring
from compiler.verify import verify
from compiler.verify.context import Context
from compiler.verify.protocol import simulate


def _errors(k):
    return [(d.id, d.path) for d in verify(k)]


def test_a_branch_on_register_data_verifies_clean_and_runs_both_ways():
    k = data_branch()
    assert verify(k) == []
    res = simulate.run(Context(k))
    assert [env["$data"] for _, env in res.scenarios] == [1, 0]


def test_the_condition_reads_its_registers_after_they_are_written():
    (d,) = verify(data_branch(init_last=False))
    assert (d.id, d.path) == ("CAKE-DATA-002", "kernel.roles[0].body[1].loop.body[1].branch")
    assert "register `last`" in d.message and "conditions on register values taken" in d.message


def test_a_register_written_only_under_the_branch_is_unwritten_where_it_is_not_taken():
    (d,) = verify(data_branch(init_changed=False))
    assert (d.id, d.path) == ("CAKE-DATA-002", "kernel.roles[0].body[2].copy")
    assert "not taken" in d.message


def test_synchronization_under_a_data_dependent_branch():
    (d,) = verify(data_branch(sync_in_branch=True))
    assert (d.id, d.path) == ("CAKE-SYNC-017", "kernel.roles[0].body[2].loop.body[1].branch.then_body[1].block_sync")
    assert d.notes[0].path == "kernel.roles[0].body[2].loop.body[1].branch"


def test_registers_with_more_than_one_element_are_not_values():
    k = ring()
    k.roles[1].body[1].loop.body[1].copy.src_tile.stage.CopyFrom(as_expr(E.sym("v")))  # v is [64] per thread
    (d,) = [d for d in verify(k) if d.id == "CAKE-CONTRACT-001"]
    assert "not a one-element one" in d.message


def test_register_scalars_only_as_data():
    k = data_branch()
    loop = k.roles[0].body[2].loop
    loop.end.CopyFrom(as_expr(E.sym("last") + 5))
    assert _errors(k) == [("CAKE-STRUCT-018", "kernel.roles[0].body[2].loop")]


def test_a_loop_variable_may_not_shadow_a_register_scalar():
    k = data_branch()
    k.roles[0].body[2].loop.var = "lab"
    assert ("CAKE-STRUCT-012", "kernel.roles[0].body[2].loop") in _errors(k)


def test_a_scalar_nothing_writes():
    k = data_branch()
    k.regions.add(name="flag", space=ir_pb2.MEMORY_SPACE_REGISTER, dtype=ir_pb2.DTYPE_I32, shape=[1],
                  layout=ir_pb2.FRAGMENT_LAYOUT_PER_THREAD, owner="main")
    k.roles[0].body[2].loop.body[1].branch.cond.CopyFrom(as_expr(E.sym("flag") != E.sym("last")))
    assert _errors(k) == [("CAKE-DATA-001", "kernel.roles[0].body[2].loop.body[1].branch")]


def test_row_per_thread_scalars():
    k = data_branch()
    last = next(r for r in k.regions if r.name == "last")
    last.layout = ir_pb2.FRAGMENT_LAYOUT_ROW_PER_THREAD
    last.shape[:] = [32, 1]
    assert verify(k) == []
    assert Context(k).scalars == [{"lab": 0, "last": 1, "changed": 2}]
