"""The task registry: every task and contract file loads, families come from it, bad files say what is wrong."""

import glob
import json
import os

import pytest

from agent import seeds, tactics, task


def test_every_task_file_loads_and_names_a_contract_and_a_family_of_it():
    files = sorted(glob.glob(os.path.join(task.TASK_DIR, "*.json")))
    assert {os.path.basename(f)[:-5] for f in files} == set(task.TASKS)
    assert {"kmeans-assign", "kmeans-assign-paper", "gemm-8192", "knn-search", "knn-all-pairs", "kda-forward"} <= set(task.TASKS)
    for t in task.TASKS.values():
        c = t.kernel_contract
        assert t.family in c.families and seeds.family(t.family).contract_key == c.key
        assert set(t.seed_params) <= set(seeds.family(t.family).space)
        assert t.all_shapes[0] == t.shapes and len(t.all_shapes) == 1 + len(t.check_shapes)


def test_every_contract_file_loads_with_its_requirements_and_peers():
    files = sorted(glob.glob(os.path.join(task.CONTRACT_DIR, "*.json")))
    assert {os.path.basename(f)[:-5] for f in files} == set(task.CONTRACTS)
    for c in task.CONTRACTS.values():
        outputs = {n for n, p in c.params.items() if p.access != "read"}
        assert outputs and outputs == set(c.requires)
        assert all(":" in p.source for p in c.peers) and ":" in c.binding and ":" in c.runtime


def test_tasks_are_keyed_by_contract_and_kernels_find_theirs():
    from kernels.gemm.naive import gemm_naive
    from kernels.kmeans.naive import assign_naive
    from kernels.kmeans.tuned import assign_sm90a_tuned

    assert task.for_kernel(assign_naive()).key == task.for_kernel(assign_sm90a_tuned()).key == "kmeans_assign"
    assert task.for_kernel(gemm_naive()).key == "gemm_bf16"
    assert set(task.tasks_of("kmeans_assign")) >= {"kmeans-assign", "kmeans-assign-paper"}
    from kernels.knn.naive import rows_naive
    from kernels.knn.schedules import rows_sm80

    assert task.for_kernel(rows_naive()).key == task.for_kernel(rows_sm80()).key == "knn_score_l2"
    assert set(task.tasks_of("knn_score_l2")) == {"knn-search", "knn-all-pairs"}
    from kernels.kda.naive import recurrent_naive

    assert task.for_kernel(recurrent_naive()).key == "kda_forward" and set(task.tasks_of("kda_forward")) == {"kda-forward"}


def test_the_cost_model_sees_the_launch_the_binding_makes():
    """Symbols the binding derives (a database split, a padded length) come from the contract's `symbols`,
    restricted to those the kernel declares."""
    from kernels.kmeans.naive import assign_naive
    from kernels.kmeans.tuned import assign_sm90a_tuned
    from kernels.knn import binding

    search = task.task("knn-search")
    family = seeds.family(search.family)
    kernel = family.build(search.seed_params, search.fixed)
    got = family.analysis_shapes(search.shapes, kernel)
    assert got == {**search.shapes, **binding.symbols(search.shapes, {"q": 64, "x": 64})}
    assert got["S"] * got["T"] * 64 >= search.shapes["M"]
    pairs = task.task("knn-all-pairs")
    assert "self" not in family.analysis_shapes(pairs.shapes, kernel)  # the oracle's, not a kernel symbol
    paper = task.task("kmeans-assign-paper")
    kmeans = seeds.family(paper.family)
    assert kmeans.analysis_shapes(paper.shapes, assign_naive()) == paper.shapes  # no KP to derive
    assert kmeans.analysis_shapes(paper.shapes, assign_sm90a_tuned(block_k=256))["KP"] == 1024


def test_param_tactics_come_from_the_family_space():
    made = tactics.for_family(seeds.family("kmeans_assign_sm90a"))
    assert set(made) == {"%s_%s" % (p, d) for p in ("block_k", "stages", "consumers") for d in ("up", "down")}
    loaded, _ = tactics.load(os.path.join(os.path.dirname(task.TASK_DIR), "knowledge"), "gemm_naive")
    assert {"bn_up", "bk_down"} <= set(loaded) and "stages_up" not in loaded


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


GOOD_CONTRACT = json.load(open(os.path.join(task.CONTRACT_DIR, "gemm_bf16.json")))
GOOD_TASK = json.load(open(os.path.join(task.TASK_DIR, "gemm-8192.json")))


@pytest.mark.parametrize("change, why", [
    ({"key": "other"}, "must live in other.json"),
    ({"binding": "kernels.gemm.binding"}, "\"package.module:function\""),
    ({"requires": {}}, "outputs \\['C'\\] have no requirement"),
    ({"requires": {"A": {"ops": ["mma"]}}}, "not an output param"),
    ({"params": {"A": {"dtype": "bf16", "access": "sideways", "rank": 2}}}, "access 'sideways'"),
])
def test_a_malformed_contract_file_is_refused_with_its_problem(tmp_path, change, why):
    with pytest.raises(task.RegistryError, match=why):
        task.load_contract(_write(tmp_path, "gemm_bf16.json", dict(GOOD_CONTRACT, **change)))


@pytest.mark.parametrize("change, why", [
    ({"contract": "fft"}, "unknown contract 'fft'"),
    ({"seed": {"family": "kmeans_assign_naive", "params": {}}}, "does not implement 'gemm_bf16'"),
    ({"budget": {"minutes": 3}}, "budget"),
    ({"shapes": [1, 2]}, "'shapes' must be a dict"),
    ({"colour": "red"}, "unknown fields \\['colour'\\]"),
])
def test_a_malformed_task_file_is_refused_with_its_problem(tmp_path, change, why):
    with pytest.raises(task.RegistryError, match=why):
        task.load_task(_write(tmp_path, "gemm-8192.json", dict(GOOD_TASK, **change)), task.CONTRACTS)


def test_a_file_that_is_not_json_names_itself(tmp_path):
    path = tmp_path / "gemm-8192.json"
    path.write_text("{not json")
    with pytest.raises(task.RegistryError, match="gemm-8192.json"):
        task.load_task(str(path), task.CONTRACTS)
