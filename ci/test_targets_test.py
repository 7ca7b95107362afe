"""Plain pytest and `bazel test //...` run the same tests: every *_test.py has a Bazel target beside it.

A test file that plain pytest collects but no BUILD file names passes unseen by CI (which runs
Bazel) and by the lent GPU machine's reader; this keeps the two test runs the same.
"""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = {".git", ".venv", ".tools", ".gen", ".cake", ".dev", ".whl", "node_modules", "gpu-results"}


def _test_files():
    for dirpath, dirnames, files in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith("bazel-"))
        for f in sorted(files):
            if f.endswith("_test.py"):
                yield dirpath, f


def _package(dirpath):
    """The directory of the Bazel package a file in `dirpath` belongs to (the nearest BUILD.bazel above)."""
    while dirpath != ROOT and not os.path.exists(os.path.join(dirpath, "BUILD.bazel")):
        dirpath = os.path.dirname(dirpath)
    return dirpath


def test_every_test_file_has_a_bazel_target():
    if "TEST_TMPDIR" in os.environ:
        pytest.skip("Bazel's runfiles hold only this package: runs under plain pytest")
    missing = []
    for dirpath, f in _test_files():
        package = _package(dirpath)
        with open(os.path.join(package, "BUILD.bazel")) as b:
            text = b.read()
        rel = os.path.relpath(os.path.join(dirpath, f), package)[:-len(".py")]
        if not re.search(r'"%s(\.py)?"' % re.escape(rel), text):
            missing.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    assert not missing, "no Bazel target runs these (add a pytest_test to their package's BUILD.bazel): %s" % missing
