"""The verifier against the corpus: every good program and known-good neighbour verifies clean, every known-bad
program reports exactly its expected diagnostic (id at path) and no other error, and every diagnostic prints located
and with a fix."""

import glob
import os
import re

import pytest
from cake.compiler.v1 import diagnostics_pb2

from compiler.corpus import corpus
from compiler.ir.text import parse_kernel
from compiler.verify import RULES, format_diagnostic, registry, verify

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BAD = sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", "bad", "*.cake")))
NEIGHBOURS = sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", "neighbours", "*.cake")))
EXPECT = re.compile(r"# expect: (CAKE-[A-Z]+-[0-9]{3}) at (\S+)\n")
ERROR = diagnostics_pb2.SEVERITY_ERROR


def _parse(path):
    with open(path) as f:
        text = f.read()
    return text, parse_kernel(text, os.path.basename(path))


def _expectation(text):
    m = EXPECT.match(text)
    assert m, "a bad program starts with `# expect: CAKE-XXX-nnn at <path>`"
    return m.group(1), m.group(2)


def _assert_printable(d, filename):
    text = format_diagnostic(d, filename)
    assert d.location.line > 0, text
    assert "(%s:%d:%d)" % (filename, d.location.line, d.location.column) in text.splitlines()[0]
    assert d.fix_hint and "\n  fix: " in text
    for note in d.notes:
        assert note.location.line > 0, text


@pytest.mark.parametrize("path", BAD, ids=lambda p: os.path.basename(p)[: -len(".cake")])
def test_bad_program_reports_exactly_its_defect(path):
    text, parsed = _parse(path)
    want = _expectation(text)
    diags = verify(parsed.kernel, parsed.source_map)
    errors = [(d.id, d.path) for d in diags if d.severity == ERROR]
    assert errors == [want], "\n".join(format_diagnostic(d) for d in diags)
    for d in diags:
        _assert_printable(d, os.path.basename(path))


def test_bad_corpus_covers_every_family():
    expected = {_expectation(_parse(p)[0])[0] for p in BAD}
    assert len(BAD) >= 30
    by_id = {r.id: r for r in RULES}
    families = {by_id[i].category for i in expected}
    assert families == {c for c in registry.CATEGORIES.values()}
    for protocol in ("CAKE-SYNC-004", "CAKE-SYNC-005", "CAKE-SYNC-006", "CAKE-PIPE-002", "CAKE-DATA-004"):
        assert protocol in expected


@pytest.mark.parametrize("name", sorted(corpus.GOOD))
def test_good_program_verifies_clean(name):
    path = corpus.path(name)
    _, parsed = _parse(path)
    diags = verify(parsed.kernel, parsed.source_map)
    assert diags == [], "\n".join(format_diagnostic(d, os.path.basename(path)) for d in diags)
    assert verify(corpus.build(name)) == []


@pytest.mark.parametrize("path", NEIGHBOURS, ids=lambda p: os.path.basename(p)[: -len(".cake")])
def test_known_good_neighbour_verifies_clean(path):
    text, parsed = _parse(path)
    assert text.startswith("# neighbour: "), "a neighbour starts with `# neighbour: <what it does differently>`"
    diags = verify(parsed.kernel, parsed.source_map)
    assert diags == [], "\n".join(format_diagnostic(d, os.path.basename(path)) for d in diags)
