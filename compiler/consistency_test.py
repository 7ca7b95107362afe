"""The verifier accepts a kernel iff the cost model and lowering find it fits (resources, features, layout),
and compiler/targets/fits.py (what schedules ask) finds a block short iff the verifier does.

Over the good corpus and thousands of resource, target, launch and top-k list mutations of it
(compiler/testing/resource_mutations.py), in the domain compiler/testing/consistency.py
defines: any disagreement fails with the kernel's text. Every kernel with top-k lists (the
KNN kernels) must yield mutants both accepted and refused. CI runs MUTANTS mutants (about a
minute on 2 cores); `python -m compiler.testing.bench_consistency` runs a larger sample
and writes benchmarks/results/consistency.json.
"""

import collections

import pytest
from cake.ir.v1 import ir_pb2

from compiler.corpus import corpus
from compiler.ir import paths
from compiler.ir.text import print_kernel
from compiler.testing import consistency, resource_mutations

MUTANTS = 1200


@pytest.fixture(scope="module")
def bases():
    return {name: corpus.build(name) for name in corpus.GOOD}


def _fails(name, kernel, verdict, why):
    pytest.fail("%s: %s\nverifier errors: %s\n%s" % (name, why, ", ".join(verdict.errors) or "none",
                                                      print_kernel(kernel)), pytrace=False)


def test_every_good_program_is_accepted_by_all_three(bases):
    for name, kernel in bases.items():
        v = consistency.judge(kernel)
        if v.errors or v.analysis or v.lowering or consistency.disagreement(v):
            _fails(name, kernel, v, consistency.disagreement(v) or "a good program is refused: %s %s" % (
                v.analysis, v.lowering))


def test_the_stages_agree_on_mutations(bases):
    seen, per_base = collections.Counter(), collections.defaultdict(collections.Counter)
    for name, kernel in resource_mutations.mutants(bases, MUTANTS, seed=0):
        v = consistency.judge(kernel)
        why = consistency.disagreement(v)
        if why:
            _fails(name, kernel, v, why)
        answer = "outside" if not v.in_domain else "accepted" if not v.errors else "refused"
        seen[answer] += 1
        per_base[name.split("#")[0]][answer] += 1
    # The sample must exercise both answers in the domain, or it tests nothing.
    assert seen["accepted"] > MUTANTS // 5 and seen["refused"] > MUTANTS // 5, seen
    # So must it for every kernel with register lists (the KNN kernels: top-k lists of every layout).
    listed = [name for name, k in bases.items() if any(isinstance(n, ir_pb2.TopK) for _, n in paths.walk(k))]
    assert len(listed) >= 5, listed  # knn_rows_sm90a, knn_cols_sm90a, knn_rows_sm80, knn_rows_sm100a, knn_merge
    for name in listed:
        assert per_base[name]["accepted"] and per_base[name]["refused"], (name, per_base[name])


def test_a_disagreement_is_reported():
    block = consistency.Verdict(["CAKE-RES-005"], True, "role mma is short", None, None, [])
    assert consistency.disagreement(block) == "the verifier reports CAKE-RES-005, fits.shortfalls finds the block fits"
    v = consistency.Verdict(["CAKE-RES-004"], True, None, None, None)
    assert "the verifier refuses it (CAKE-RES-004), the analysis finds it fits" in consistency.disagreement(v)
    fits = consistency.Verdict([], True, None, None, {"verifier": (384, 1, 168), "analysis": (384, 1, 168),
                                                       "lowering": (384, 2, 168)})
    assert "differ" in consistency.disagreement(fits)
