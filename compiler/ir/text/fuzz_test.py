"""Whatever text comes in, the parser answers with a kernel or a ParseError, never another exception."""

import os

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from compiler.ir.text.lexer import tokenize
from compiler.ir.text.parse import ParseError, parse_kernel
from compiler.ir.text.printer import print_kernel

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "gemm_sm90a.cake")
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

with open(GOLDEN, encoding="utf-8") as _f:
    TEXT = _f.read()
TOKENS = [t.text for t in tokenize(TEXT)[:-1]]
# Tokens and fragments that reach every corner of the grammar when spliced in anywhere.
SPLICES = sorted(set(TOKENS)) + [
    "{", "}", "[", "]", "(", ")", ",", ":", "@", "+:", "..", "-", "{}", "nan(", "0x7ff0000000000001",
    "nan(0x7ff0000000000001)", "1e999", "-0.0", "99999999999999999999999", '"\\u{110000}"', '"\\x"',
    '"', "#", "\n", "loop", "in", "round", "int(", "coord(", "true", "unspecified", "32b", "\ud800",
]  # fmt: skip


def parses_or_raises_parse_error(text):
    try:
        kernel = parse_kernel(text, "fuzz.cake").kernel
    except ParseError as err:
        assert err.line >= 1 and err.column >= 1 and err.message
        return
    # Whatever parsed must print and read back as itself.
    assert parse_kernel(print_kernel(kernel)).kernel == kernel


@FUZZ
@given(st.text())
def test_arbitrary_text(text):
    parses_or_raises_parse_error(text)


@FUZZ
@given(st.binary())
def test_arbitrary_bytes(data):
    parses_or_raises_parse_error(data.decode("utf-8", "surrogateescape"))


@FUZZ
@given(st.lists(st.sampled_from(SPLICES), max_size=40))
def test_token_soup(tokens):
    parses_or_raises_parse_error("kernel k { " + " ".join(tokens))


@FUZZ
@given(st.integers(0, len(TEXT)))
def test_truncations(cut):
    parses_or_raises_parse_error(TEXT[:cut])


@FUZZ
@given(st.lists(st.tuples(st.sampled_from("dxsr"), st.integers(0, len(TOKENS) - 1), st.sampled_from(SPLICES)), min_size=1, max_size=4))
def test_token_edits(edits):
    tokens = list(TOKENS)
    for action, index, splice in edits:
        index %= len(tokens)
        if action == "d":
            del tokens[index]
        elif action == "x":
            tokens.insert(index, tokens[index])
        elif action == "s":
            tokens[index - 1], tokens[index] = tokens[index], tokens[index - 1]
        else:
            tokens[index] = splice
    parses_or_raises_parse_error(" ".join(tokens))


@FUZZ
@given(st.integers(0, len(TEXT)), st.integers(0, 3), st.text(max_size=3))
def test_character_edits(start, length, replacement):
    parses_or_raises_parse_error(TEXT[:start] + replacement + TEXT[start + length:])


def test_deep_nesting_is_an_error_not_a_crash():
    for opener in ("loop { ", "branch { then_body { ", "fill { dst: { stage: ", "{ ", "tma_load { dst: sA@("):
        parses_or_raises_parse_error("kernel k { role r { " + opener * 2000)
