"""KNN oracle against brute force."""

import torch

from kernels.knn.reference import knn, recall, sq_norms


def test_knn_matches_brute_force_sorted_distances():
    g = torch.Generator().manual_seed(0)
    q, x = torch.randn(6, 8, generator=g), torch.randn(40, 8, generator=g)
    dist, idx = knn(q, x, 5)
    assert dist.dtype == torch.float32 and idx.dtype == torch.int32 and dist.shape == idx.shape == (6, 5)
    full = ((q.double()[:, None] - x.double()[None]) ** 2).sum(-1)
    want_d, want_i = full.sort(1)
    assert idx.tolist() == want_i[:, :5].tolist()
    torch.testing.assert_close(dist.double(), want_d[:, :5], rtol=1e-6, atol=1e-6)
    assert (dist[:, 1:] >= dist[:, :-1]).all()


def test_ties_go_to_the_smaller_index_and_given_norms_are_used():
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [5.0, 5.0]])
    q = torch.zeros(1, 2)
    dist, idx = knn(q, x, 3)
    assert idx.tolist() == [[0, 1, 2]] and dist.tolist() == [[1.0, 1.0, 1.0]]
    x_sq = sq_norms(x)
    x_sq[3] = -100.0  # pretend row 3 is closest
    assert knn(q, x, 1, x_sq=x_sq)[1].tolist() == [[3]]


def test_recall_counts_found_reference_neighbours():
    ref = torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]], dtype=torch.int32)
    got = torch.tensor([[3, 2, 1, 0], [4, 5, 9, 9]], dtype=torch.int32)
    assert recall(got, ref) == 6 / 8
