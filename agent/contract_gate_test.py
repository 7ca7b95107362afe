"""Contract preservation: a candidate that drops or changes a required computation gets no fitness, with its reason."""

import pytest
from cake.ir.v1 import ir_pb2

from agent import assess, contract_gate, task
from agent.ir_edit import walk_ops
from agent.testing import lowering_only_port
from agent.transforms import testing
from compiler import analysis
from kernels.kmeans.naive import assign_naive
from kernels.kmeans.schedules import assign_sm90a

TASK = task.task("kmeans-assign")
CONTRACT = TASK.kernel_contract


def _breaks(kernel):
    return contract_gate.breaks(CONTRACT, TASK, kernel)


def _without(kernel, kind):
    """`kernel` with every op of `kind` deleted."""
    out = ir_pb2.Kernel()
    out.CopyFrom(kernel)
    for role in out.roles:
        for ops, i, op in reversed(list(walk_ops(role.body))):
            if op.WhichOneof("kind") == kind:
                del ops[i]
    return out


def test_every_corpus_program_of_a_task_contract_keeps_it():
    kept = 0
    for name, kernel in testing.programs().items():
        c = task.for_kernel(kernel)
        if c is None:
            continue
        t = next(iter(task.tasks_of(c.key).values()))
        assert contract_gate.breaks(c, t, kernel) == [], name
        kept += 1
    assert kept >= 20


def test_dropping_the_argmin_is_rejected_though_it_is_predicted_faster():
    seed = assign_sm90a()
    cheat = _without(seed, "arg_reduce")
    shapes = dict(TASK.shapes)
    assert analysis.analyze(cheat, shapes, TASK.device).predicted_seconds <= \
        analysis.analyze(seed, shapes, TASK.device).predicted_seconds
    # Its labels are the fill of best_i: nothing of the product or the inputs reaches them.
    assert _breaks(cheat) == [
        "labels no longer comes from mma and arg_reduce:argmin (the contract requires mma, arg_reduce:argmin)",
        "labels no longer depends on x, c, c_sq"]
    out = assess.check(lowering_only_port(), cheat, "h", shapes, TASK.device, task=TASK)
    assert out.status == "invalid" and out.fitness_s is None and out.prediction is None
    [(stage, d)] = out.diagnostics
    assert (stage, d.id, d.path) == ("task", contract_gate.DIAGNOSTIC_ID, "kernel")
    assert "labels no longer comes from mma and arg_reduce:argmin" in d.message
    assert out.failures[0]["stage"] == "task" and out.failures[0]["kind"] == "contract"


def test_dropping_an_input_or_the_matrix_product_is_rejected():
    k = assign_naive()
    no_bias = _without(k, "elementwise")  # c_sq - 2 x.c without c_sq
    assert "labels no longer depends on c_sq" in _breaks(no_bias)
    no_mma = _without(k, "mma")
    assert _breaks(no_mma)[0].startswith("labels no longer comes from mma")


def test_changed_params_reference_or_metric_are_rejected():
    k = assign_naive()
    k.params[3].dtype = ir_pb2.DTYPE_I64
    assert _breaks(k) == ["param labels is i64 write of rank 2, the contract's is i32 write of rank 2"]
    k = assign_naive()
    k.params.add(name="scratch", kind=ir_pb2.PARAM_KIND_TENSOR, dtype=ir_pb2.DTYPE_F32, access=ir_pb2.ACCESS_WRITE)
    assert "it takes params the task does not pass: scratch" in _breaks(k)
    k = assign_naive()
    del k.params[2]
    assert "it dropped the params c_sq" in _breaks(k)
    k = assign_naive()
    k.contract.reference = "kernels.kmeans.reference.objective"
    k.contract.metric = ir_pb2.METRIC_REL_L2
    assert _breaks(k)[:2] == ["it computes 'kernels.kmeans.reference.objective', not the task's "
                              "'kernels.kmeans.reference.assign'", "it is judged by rel_l2, not the task's label_agreement"]


def test_a_contract_the_tasks_shapes_violate_is_rejected_and_says_violate():
    from agent import transforms

    wide = transforms.apply(assign_naive(), "tile_shape", {"symbol": "N", "size": 1024})  # the checked N=768
    [why] = _breaks(wide)
    assert "the task's shapes violate its contract" in why and "N = 768 lies outside its range 1024" in why


@pytest.mark.parametrize("name", ["gemm-8192"])
def test_other_contracts_guard_their_outputs_too(name):
    from kernels.gemm.naive import gemm_naive

    t = task.task(name)
    assert contract_gate.breaks(t.kernel_contract, t, gemm_naive()) == []
    assert contract_gate.breaks(t.kernel_contract, t, _without(gemm_naive(), "mma"))[0].startswith(
        "C no longer comes from mma")


def test_in_a_run_a_contract_breaking_proposal_is_recorded_invalid_with_its_reason(tmp_path):
    from agent.authors.base import Proposal
    from agent.testing import measured_run

    class Cheat:
        """An author (say, an LLM) that drops the arg-min from every parent."""

        name = "cheat"

        def propose(self, parent, ctx):
            child = _without(parent.kernel, "arg_reduce")
            return [Proposal(child, None, "cheat", self.name)] if ctx.is_new(child) else []

    _, _, store, evaluator = measured_run(tmp_path, authors=lambda *_: [Cheat()], evaluations=3, stale_generations=2)
    rows = [r for r in store.candidates() if r["tactic"] == "cheat"]
    assert rows and all(r["status"] == "invalid" and r["fitness_s"] is None for r in rows)
    [d] = store.diagnostics(rows[0]["id"])
    assert d["diag_id"] == contract_gate.DIAGNOSTIC_ID and "no longer comes from" in d["message"]
    assert evaluator.calls == 1  # only the seed was measured
