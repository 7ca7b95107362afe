"""Every good program verifies with zero errors, from its canonical text (so locations resolve too)."""

import pytest

from compiler.corpus import corpus
from compiler.ir.text import parse_kernel
from compiler.verify import format_diagnostic, has_errors, verify


@pytest.mark.parametrize("name", sorted(corpus.GOOD))
def test_good_program_verifies_clean(name):
    with open(corpus.path(name)) as f:
        parsed = parse_kernel(f.read(), corpus.path(name))
    diags = verify(parsed.kernel, parsed.source_map)
    assert not has_errors(diags), "\n".join(format_diagnostic(d) for d in diags)
