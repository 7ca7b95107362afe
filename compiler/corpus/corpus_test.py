"""The good corpus: files equal to their builders, parse back to the same proto, and cover every family."""

import os
import re

import pytest
from cake.ir.v1 import ir_pb2

from compiler.corpus import corpus
from compiler.ir.text import parse_kernel


@pytest.mark.parametrize("name", sorted(corpus.GOOD))
def test_file_is_the_printed_builder_and_parses_back_to_it(name):
    kernel = corpus.build(name)
    assert os.path.exists(corpus.path(name)), "missing: run python -m compiler.corpus.corpus --write"
    with open(corpus.path(name)) as f:
        text = f.read()
    assert text == corpus.text(name), "%s.cake is stale: run python -m compiler.corpus.corpus --write" % name
    assert parse_kernel(text, corpus.path(name)).kernel == kernel


def test_no_file_without_a_builder():
    assert corpus.stale() == []


def test_covers_a_gemm_per_target_and_each_proving_kernel():
    kernels = {name: corpus.build(name) for name in corpus.GOOD}
    gemm_targets = {k.target for n, k in kernels.items() if n.startswith("gemm_")}
    assert gemm_targets == {ir_pb2.TARGET_SM_80, ir_pb2.TARGET_SM_90A, ir_pb2.TARGET_SM_100A}
    references = {k.contract.reference.rsplit(".", 1)[0] for k in kernels.values()}
    assert {"kernels.kmeans.reference", "kernels.knn.reference", "kernels.kda.reference"} <= references


def test_write_then_check_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "GOOD_DIR", str(tmp_path))
    (tmp_path / "orphan.cake").write_text("kernel orphan {}\n")
    assert corpus.main([]) == 1
    corpus.write()
    assert sorted(os.listdir(tmp_path)) == sorted(n + ".cake" for n in corpus.GOOD)
    assert corpus.main([]) == 0


# docs/ir.md quotes the corpus in ```cake <name> blocks; each must be a verbatim slice of that program.
_DOC = os.path.join(os.path.dirname(corpus.GOOD_DIR), "..", "..", "docs", "ir.md")


def test_docs_quote_the_corpus_verbatim():
    if not os.path.exists(_DOC):
        pytest.skip("docs/ir.md is not an input of this test here (Bazel sandbox); plain pytest checks it")
    with open(_DOC) as f:
        excerpts = re.findall(r"^```cake (\w+)\n(.*?)^```", f.read(), re.M | re.S)
    assert excerpts
    for name, body in excerpts:
        assert name in corpus.GOOD, "docs/ir.md quotes unknown program %r" % name
        assert body in corpus.text(name), "docs/ir.md quotes %s.cake wrongly:\n%s" % (name, body)
