"""The search binding end to end on the CPU: the oracle and the timer's call pattern through binding.search.

The score kernel and the merge are stood in for by the reference (what their contracts say they write), so
what is tested is the binding's own work: the database split, the workspace, the norms it keeps and hands
the kernel, and the merge's arguments. The H200 agent run of 2026-12-01 measured nothing but the binding
(its norms were recomputed on every timed call); a GPU run depends on this passing first.
"""

import math
import types

import pytest
import torch

from kernels.knn import binding, dispatch, reference
from kernels.knn.contract import knn_contract
from runtime import compiled as compiled_mod
from runtime.check import check_kernel

K = 10
BLOCK_N = 64
# The knn-search task's oracle shapes (agent/tasks/knn-search.json) and two more tails: one range, a batch.
SHAPES = [
    {"B": 1, "Q": 100, "M": 50001, "D": 128, "k": K},
    {"B": 2, "Q": 64, "M": 4099, "D": 120, "k": K},
    {"B": 1, "Q": 3, "M": 65, "D": 128, "k": K},
]


class ScoreKernel:
    """A score kernel as its contract says: partial list s of each query holds the k best rows of range s."""

    def __init__(self):
        self.md = types.SimpleNamespace(symbols=[types.SimpleNamespace(name="k", value=K)])
        self.cols = []

    def __call__(self, q, x, col, part_v, part_i, symbols):
        m = x.shape[1]
        assert col.shape == (x.shape[0], binding.symbols({"B": 1, "Q": 1, "M": m}, {})["MP"])
        assert torch.allclose(col[:, :m], (x.float() ** 2).sum(-1)) and not col[:, m:].any()
        self.cols.append(col)
        s, t = symbols["S"], symbols["T"]
        rows = t * BLOCK_N  # range r holds database rows [r * rows, (r + 1) * rows)
        assert (s - 1) * rows < m <= s * rows  # every range holds rows: none starts past the end
        scores = reference.ranking_scores(q, x, "l2")
        padded = torch.full((*scores.shape[:2], s * rows), math.inf, dtype=scores.dtype)
        padded[..., :m] = scores
        v, i = reference._rank(padded.reshape(*scores.shape[:2], s, rows), K, False)  # [B, Q, S, k]
        i = torch.where(v < math.inf, i + torch.arange(s)[:, None] * rows, -1)
        part_v[:, :s] = v.permute(0, 2, 1, 3).float()
        part_i[:, :s] = i.permute(0, 2, 1, 3).int()


class Merge:
    def __init__(self, _compiled):
        pass

    def __call__(self, q, x, part_v, part_i, dist, idx):
        v, i = reference.merge_lists(q, x, part_v, part_i.long(), K)
        dist.copy_(v)
        idx.copy_(i)


@pytest.fixture
def search(monkeypatch):
    monkeypatch.setattr(dispatch, "compiled", lambda *a: None)
    monkeypatch.setattr(compiled_mod, "CompiledKernelRunner", Merge)
    kernel = ScoreKernel()
    return kernel, binding.search(kernel, {"tile_rows": {"q": 64, "x": BLOCK_N}})


def test_the_oracle_passes_the_search_at_tail_shapes(search):
    _, launch = search
    result = check_kernel(knn_contract(SHAPES), launch, device="cpu", seed=7)
    assert result.passed, result.message


def test_the_timers_alternating_input_sets_reuse_their_norms(search):
    kernel, launch = search
    contract = knn_contract(SHAPES[1:2])
    g = torch.Generator().manual_seed(3)
    sets = [contract.make_inputs(SHAPES[1], "normal", g, "cpu") for _ in range(2)]
    outs = [[torch.empty(tuple(s.shape), dtype=s.dtype) for s in contract.outputs(i)] for i in sets]
    for i in range(5 + 30):  # agent/measure/gpu.py's TIMING: warmup 5, reps 30, input_sets 2
        launch(outs[i % 2], sets[i % 2])
    assert len({id(c) for c in kernel.cols}) == 2  # computed once per database, not once per call
    for out, inputs in zip(outs, sets):
        assert contract.metric(out, contract.reference(inputs), inputs).passed
