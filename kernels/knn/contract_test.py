"""The KNN oracle's metric on the CPU: exact answers pass, near-ties are accepted, errors are caught."""

import pytest
import torch

from kernels.knn import contract, reference


def _case(metric, seed=0, b=2, nq=30, m=200, d=16, k=5, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, nq, d, generator=g).to(dtype)
    x = torch.randn(b, m, d, generator=g).to(dtype)
    vals, idx = reference.knn(q, x, k, metric)
    return q, x, vals.float(), idx.to(torch.int32)


@pytest.mark.parametrize("metric", reference.METRICS)
def test_the_exact_answer_passes(metric):
    q, x, dist, idx = _case(metric)
    result = contract.neighbours_metric(dist, idx, q, x, 5, metric)
    assert result.passed and result.value == 1.0, result.message


def test_kth_scores_match_the_reference_in_chunks(monkeypatch):
    q, x, dist, _ = _case("l2", m=300)
    monkeypatch.setattr(contract, "_ROWS_PER_CHUNK", 64)
    monkeypatch.setattr(contract, "_QUERIES_PER_CHUNK", 7)
    torch.testing.assert_close(contract.kth_scores(q, x, 5, "l2"), dist[..., -1].double(), rtol=1e-6, atol=1e-6)


def test_an_equidistant_alternative_counts_as_a_hit():
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [3.0, 3.0]]])
    q = torch.zeros(1, 1, 2)
    dist = torch.tensor([[[1.0, 1.0]]])
    assert contract.neighbours_metric(dist, torch.tensor([[[2, 1]]]), q, x, 2, "l2").passed


@pytest.mark.parametrize("mutate, reason", [
    (lambda d, i: (d, i.roll(1, dims=-1).clone().fill_(0)), "twice"),
    (lambda d, i: (d * 1.01, i), "dist error"),
    (lambda d, i: (d.flip(-1), i.flip(-1)), "out of order"),
    (lambda d, i: (d, i + 1000), "outside"),
])
def test_wrong_answers_fail(mutate, reason):
    q, x, dist, idx = _case("l2")
    d2, i2 = mutate(dist.clone(), idx.clone())
    result = contract.neighbours_metric(d2, i2, q, x, 5, "l2")
    assert not result.passed and reason in result.message, result.message


def test_a_far_row_in_place_of_a_neighbour_fails_recall():
    q, x, dist, idx = _case("l2")
    exact = reference.scores(q, x, "l2")
    worst_v, worst_i = exact.max(dim=-1)
    idx[..., -1], dist[..., -1] = worst_i.to(torch.int32), worst_v.float()
    result = contract.neighbours_metric(dist, idx, q, x, 5, "l2")
    assert not result.passed and result.value < contract.MIN_RECALL, result.message


def test_exclude_self_rejects_a_query_listing_itself():
    q, x, dist, idx = _case("l2", b=1, nq=20, m=20)
    _, idx_self = reference.knn(x, x, 5)
    result = contract.neighbours_metric(dist, idx_self.to(torch.int32), x, x, 5, "l2", exclude_self=True)
    assert not result.passed and "itself" in result.message
    vals, idx_ex = reference.knn(x, x, 5, exclude_self=True)
    assert contract.neighbours_metric(vals.float(), idx_ex.to(torch.int32), x, x, 5, "l2", exclude_self=True).passed


def test_one_contract_per_metric_and_k():
    with pytest.raises(ValueError, match="one metric, k, self and exclude_self"):
        contract.knn_contract([dict(B=1, Q=4, M=8, D=8, k=2), dict(B=1, Q=4, M=8, D=8, k=3)])
