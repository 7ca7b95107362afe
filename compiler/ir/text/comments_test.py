"""Formatting keeps every comment beside its node, parses to the same kernel, and is idempotent."""

import glob
import os

import pytest

from compiler.ir.text import parse_kernel
from compiler.ir.text.comments import comments, format_text

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
GEMM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "gemm_sm90a.cake")


def _messy():
    """The printed GEMM, squashed onto fewer lines, with comments of both kinds."""
    lines = open(GEMM).read().splitlines()
    out = ["# a header comment", "# second header line"]
    for i, line in enumerate(lines):
        if line.strip().startswith("role "):
            out.append("      # about the role below  ")
        if line.strip().startswith("param A"):
            out.append(line + "   # A is row-major")
            continue
        out.append("  " * (i % 3) + line.strip())
    out.append("# trailing remark")
    return "\n".join(out) + "\n"


def test_comments_are_found_outside_strings_only():
    text = 'kernel k {  # one\n  math: "a # not a comment"  # two\n# three\n}\n'
    assert [(c.line, c.column, c.text, c.own_line) for c in comments(text)] == [
        (1, 13, "# one", False), (2, 30, "# two", False), (3, 1, "# three", True)]


def test_format_keeps_comments_next_to_their_nodes():
    messy = _messy()
    out = format_text(messy, "gemm.cake")
    assert parse_kernel(out).kernel == parse_kernel(messy).kernel
    assert [c.text for c in comments(out)] == [c.text.rstrip() for c in comments(messy)]
    lines = out.splitlines()
    assert lines[:3] == ["# a header comment", "# second header line", lines[2]] and lines[2].startswith("kernel ")
    assert any(line.lstrip().startswith("param A") and line.endswith("# A is row-major") for line in lines)
    for i, line in enumerate(lines):
        if line.strip() == "# about the role below":
            assert lines[i + 1].lstrip().startswith("role ")
            assert line[: len(line) - len(line.lstrip())] == lines[i + 1][: len(lines[i + 1]) - len(lines[i + 1].lstrip())]
    assert lines[-1] == "# trailing remark"
    assert format_text(out) == out


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", "*", "*.cake"))),
                         ids=os.path.basename)
def test_corpus_programs_format_stably_with_their_headers(path):
    text = open(path).read()
    out = format_text(text)
    assert parse_kernel(out).kernel == parse_kernel(text).kernel
    assert len(comments(out)) == len(comments(text))
    assert format_text(out) == out
