"""docs/README.md indexes every document: each docs/*.md, and outside Bazel every *.md in the checkout."""

import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SKIP = {".git", ".venv", ".tools", ".gen", ".cake", ".dev", ".whl", "node_modules", "gpu-results"}


def _linked():
    with open(os.path.join(HERE, "README.md")) as f:
        return {os.path.normpath(os.path.join(HERE, target)) for target in re.findall(r"\]\(([^)]+\.md)\)", f.read())}


def test_every_design_note_is_indexed():
    missing = [f for f in sorted(os.listdir(HERE)) if f.endswith(".md") and f != "README.md"
               and os.path.join(HERE, f) not in _linked()]
    assert not missing, "add to docs/README.md: %s" % ", ".join(missing)


def test_every_document_of_the_checkout_is_indexed_and_every_link_resolves():
    if "TEST_TMPDIR" in os.environ:
        pytest.skip("Bazel's runfiles hold only docs/: runs under plain pytest")
    found = set()
    for dirpath, dirnames, files in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP and not d.startswith("bazel-")]
        found |= {os.path.join(dirpath, f) for f in files if f.endswith(".md")}
    found.discard(os.path.join(HERE, "README.md"))
    linked = _linked()
    assert not sorted(found - linked), "add to docs/README.md: %s" % sorted(os.path.relpath(p, ROOT) for p in found - linked)
    assert not sorted(linked - found), "docs/README.md links to missing files: %s" % sorted(linked - found)
