"""Targeted mutations (compiler/testing/class_mutations.py): for each rule of the classes the verifier used to
miss, random edits that break what it checks are caught by it, and edits that keep a kernel's meaning (renames,
reorders, consistent stage changes, the seed schedules' other tile and stage parameters) keep every good program
and known-good neighbour free of diagnostics."""

import glob
import os

import pytest
from cake.compiler.v1 import diagnostics_pb2
from hypothesis import HealthCheck, given, settings

from compiler.ir.text import parse_kernel
from compiler.testing import class_mutations as cm
from compiler.verify import format_diagnostic, registry, verify
from kernels.gemm.schedules import gemm_sm90a, gemm_sm100a
from kernels.kmeans.schedules import assign_sm90a
from kernels.kmeans.tuned import assign_sm90a_tuned
from kernels.knn.schedules import cols_sm90a, rows_sm90a

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = int(os.environ.get("CAKE_CLASS_MUTATION_EXAMPLES", "30"))
_SETTINGS = dict(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


def _programs(kind):
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", kind, "*.cake"))):
        with open(path) as f:
            out.append(parse_kernel(f.read(), path).kernel)
    return out


# Good programs and neighbours, and seed schedules with other tiles and stages (all verify clean).
GOOD = _programs("good") + _programs("neighbours") + [
    gemm_sm90a(stages=3, bn=128), gemm_sm90a(bm=64, consumers=1), gemm_sm100a(stages=2, epilogue_cols=64),
    rows_sm90a(k=32, row_groups=2, stages=3), cols_sm90a(k=16, consumers=1, stages=3), assign_sm90a(stages=2, block_k=64),
    assign_sm90a_tuned(consumers=2, d=64),
]


def _errors(kernel):
    diags = verify(kernel)
    assert all(d.id != registry.INTERNAL_ID for d in diags), "\n".join(format_diagnostic(d) for d in diags)
    return diags, {d.id for d in diags if d.severity == diagnostics_pb2.SEVERITY_ERROR}


def test_the_bases_verify_clean():
    for kernel in GOOD:
        diags, _ = _errors(kernel)
        assert diags == [], "\n".join(format_diagnostic(d) for d in diags)


@pytest.mark.parametrize("rule_id", sorted(cm.BREAKING))
def test_breaking_mutations_are_caught_by_their_rule(rule_id):
    bases = cm.applicable(GOOD, rule_id)
    assert len(bases) >= 1 if rule_id == "CAKE-SYNC-008" else len(bases) >= 3, "too few programs to mutate"

    @settings(**_SETTINGS)
    @given(cm.broken(bases, rule_id))
    def caught(kernel):
        diags, ids = _errors(kernel)
        assert rule_id in ids, "\n".join(format_diagnostic(d) for d in diags) or "no diagnostics"

    caught()


@pytest.mark.parametrize("strategy", [cm.renamed, cm.reordered, cm.restaged], ids=lambda s: s.__name__)
def test_meaning_preserving_mutations_stay_clean(strategy):
    @settings(**_SETTINGS)
    @given(strategy(GOOD))
    def clean(kernel):
        diags, _ = _errors(kernel)
        assert diags == [], "\n".join(format_diagnostic(d) for d in diags)

    clean()
