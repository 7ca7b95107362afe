"""The transformations' property tests: the programs they are applied to and the check of each result.

`programs()` is the test corpus: every good program (compiler/corpus) and what the
structural path makes of it, step by step as far as each step applies (sm_80 programs
retargeted to sm_90a, loads into a two-stage TMA ring, the ring's producer split off,
mma.sync turned into wgmma, persistent scheduling), so a transformation meets plain,
cp.async, single-role, warp-specialized, wgmma and persistent schedules of KMeans, GEMM,
KNN and KDA alike. `check(name, args)` applies one transformation with each set of
args to every program where its precondition holds and asserts, for each result:
the input is untouched, the result differs, prints and parses back to itself, and
verifies with no error outside the resources family (a move may outgrow the SM's
shared memory or registers; the verifier says so, CAKE-RES-*, and the search repairs or
drops it: that is a cost, not a change of meaning). It returns what applied, so each
test can also assert where its transformation must apply.
"""

import functools

from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from agent import transforms
from agent.compiler_port import process_port
from agent.ir_edit import NotApplicable
from compiler.corpus import corpus
from compiler.ir.text import parse_kernel, print_kernel

STEPS = (
    ("retarget", {"target": "sm_90a"}),
    ("loads_to_tma", {"stages": 2}),
    ("split_producer", {}),
    ("mma_to_wgmma", {}),
    ("persistent", {}),
)


@functools.lru_cache(maxsize=None)
def _programs():
    out = {}
    for name in corpus.GOOD:
        kernel = corpus.build(name)
        out[name] = kernel
        for step, args in STEPS:
            try:
                kernel = transforms.apply(kernel, step, args)
            except NotApplicable:
                continue
            name = "%s+%s" % (name, step)
            out[name] = kernel
    return out


def programs():
    """name -> kernel of the test corpus (see the module docstring); callers must not edit them."""
    return _programs()


def errors(kernel):
    """The verifier's errors outside the resources family, as (id, path, message)."""
    return [(d.id, d.path, d.message) for d in process_port().verify(kernel)
            if d.severity == diagnostics_pb2.SEVERITY_ERROR and d.category != diagnostics_pb2.CATEGORY_RESOURCES]


def check(name, args_list, only=None):
    """[(program, args, result)] of transformation `name` with each args where it applies; asserts each result."""
    applied = []
    for program, kernel in programs().items():
        if only is not None and not only(program):
            continue
        for args in args_list:
            before = ir_pb2.Kernel()
            before.CopyFrom(kernel)
            try:
                out = transforms.apply(kernel, name, args)
            except NotApplicable:
                assert kernel == before, "%s %s edited its input %s" % (name, args, program)
                continue
            where = "%s %s on %s" % (name, args, program)
            assert kernel == before, "%s edited its input" % where
            assert out != kernel, "%s changed nothing" % where
            assert parse_kernel(print_kernel(out)).kernel == out, "%s does not round-trip as text" % where
            assert not errors(out), "%s: %s" % (where, errors(out))
            applied.append((program, args, out))
    return applied


def applied_to(applied):
    """The programs of check()'s answer."""
    return sorted({p for p, _, _ in applied})
