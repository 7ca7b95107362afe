"""Property: whatever a kernel holds, the verifier answers with diagnostics (never a crash, never an
internal failure). Mutations of every corpus program, and arbitrary kernels from the schema.

CAKE_MUTATION_EXAMPLES raises the example count for a long local run (CI runs the default)."""

import glob
import os

from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2
from hypothesis import HealthCheck, given, settings

from compiler.ir.text import parse_kernel
from compiler.testing import strategies
from compiler.testing.mutations import mutated
from compiler.testing.verifier_kernels import ring
from compiler.verify import registry, verify

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = int(os.environ.get("CAKE_MUTATION_EXAMPLES", "1500"))


def _corpus():
    out = [ring(), ring(stages=3, release=False)]
    for path in sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", "*", "*.cake"))):
        with open(path) as f:
            out.append(parse_kernel(f.read(), path).kernel)
    return out


BASES = _corpus()
_SETTINGS = dict(derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


def _check(kernel):
    diags = verify(kernel)
    assert isinstance(diags, list)
    for d in diags:
        assert isinstance(d, diagnostics_pb2.Diagnostic)
        assert d.id != registry.INTERNAL_ID, d.message
        assert d.path.startswith("kernel") and d.fix_hint and d.message


@settings(max_examples=EXAMPLES, **_SETTINGS)
@given(mutated(BASES))
def test_mutated_corpus_programs_get_diagnostics(kernel):
    _check(kernel)


@settings(max_examples=EXAMPLES // 3, **_SETTINGS)
@given(strategies.messages(ir_pb2.Kernel))
def test_arbitrary_kernels_get_diagnostics(kernel):
    _check(kernel)
