"""Forked inputs find what running each input alone from its start finds (forks.py): for every corpus program
(good, known-good neighbour, known-bad) and each op deleted from the kernels whose inputs fork, the model's result
(finding, inputs run, why skipped) is the same with and without forks."""

import glob
import os

import pytest
from cake.ir.v1 import ir_pb2

from compiler.ir import paths
from compiler.ir.text import parse_kernel
from compiler.verify.context import Context
from compiler.verify.protocol import forks, simulate

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
PROGRAMS = sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", "*", "*.cake")))
# Kernels whose inputs fork at loop ends and at branches: their op deletions break the protocol everywhere.
FORKING = ("good/knn_rows_sm90a", "good/kmeans_assign_sm100a", "good/gemm_sm90a", "good/kda_chain_sm90a")


def _kernel(path):
    with open(path) as f:
        return parse_kernel(f.read(), os.path.basename(path)).kernel


def _result(kernel):
    res = simulate.run(Context(kernel))
    v = res.violation
    return (v and (v.kind, v.path, v.message, v.notes, v.hint), res.scenarios, res.skipped)


def _alone(kernel, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(forks, "groups", lambda runs, read: {})
        return _result(kernel)


def _deletions(kernel):
    """A copy of `kernel` with one op deleted, for every op of its roles."""
    sites = [(path, f.name, i) for path, node in paths.walk(kernel) for f in node.DESCRIPTOR.fields
             if f.message_type is not None and f.message_type.name == "Op" and f.is_repeated
             for i in range(len(getattr(node, f.name)))]
    for path, field, i in sites:
        k = ir_pb2.Kernel()
        k.CopyFrom(kernel)
        node = next(n for p, n in paths.walk(k) if p == path)
        del getattr(node, field)[i]
        yield "%s.%s[%d]" % (path, field, i), k


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: os.path.relpath(p, os.path.join(ROOT, "compiler", "corpus")))
def test_corpus_programs_find_the_same_with_forks(path, monkeypatch):
    kernel = _kernel(path)
    assert _result(kernel) == _alone(kernel, monkeypatch)


@pytest.mark.parametrize("name", FORKING)
def test_op_deletions_find_the_same_with_forks(name, monkeypatch):
    kernel = _kernel(os.path.join(ROOT, "compiler", "corpus", name + ".cake"))
    runs = []
    real = forks.groups
    monkeypatch.setattr(forks, "groups", lambda r, read: runs.append(real(r, read)) or runs[-1])
    simulate.run(Context(kernel))
    assert runs and runs[0], "%s's inputs no longer fork: pick kernels whose inputs do" % name
    found = set()
    for where, k in _deletions(kernel):
        want = _alone(k, monkeypatch)
        assert _result(k) == want, where
        found.add(want[0] and want[0][0])
    assert len(found) > 3  # the deletions break the protocol in several ways
