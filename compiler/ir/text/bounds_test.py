"""Hostile text costs what it must and no more: an error near the start of a huge text is found without
lexing the rest, and an error message quotes at most a short excerpt of what was written."""

import time
import tracemalloc

import pytest

from compiler.ir.text import ParseError, parse_kernel

HEAD = "kernel k { @@ "  # '@' at column 12 cannot start a token
FILLER = "  role r { kind: compute  warps: 1 }\n"


def _parse_error(text):
    with pytest.raises(ParseError) as e:
        parse_kernel(text)
    return e.value


def test_an_early_error_in_30_mb_of_text_costs_milliseconds():
    text = HEAD + FILLER * (30_000_000 // len(FILLER))
    tracemalloc.start()
    start = time.process_time()
    error = _parse_error(text)
    cpu = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (error.line, error.column) == (1, 12)
    assert cpu < 0.5, cpu
    assert peak < 1 << 20, peak  # the text's tokens were never built


@pytest.mark.parametrize("template", [
    "kernel k {\n  %s: 1\n}\n",  # an unknown field
    "kernel k {\n  role r {\n    kind: compute\n    warps: 1\n    %s {}\n  }\n}\n",  # an unknown op
    "kernel k {\n  target: %s\n}\n",  # an unknown enum value
])
def test_a_long_unknown_name_is_quoted_as_an_excerpt(template):
    name = "x" * 100_000
    start = time.process_time()
    error = _parse_error(template % name)
    assert time.process_time() - start < 0.5
    assert len(error.message) < 1000 and "xxxxx..." in error.message
