"""KMeans oracles against brute force on small CPU problems."""

import torch

from kernels.kmeans import reference as ref


def _data(B=2, N=50, K=7, D=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, N, D, generator=g), torch.randn(B, K, D, generator=g), g


def _brute_distances(x, c):
    return ((x.double()[:, :, None, :] - c.double()[:, None, :, :]) ** 2).sum(-1)


def test_assign_matches_brute_force_nearest_centroid():
    x, c, _ = _data()
    want = _brute_distances(x, c).argmin(-1)
    assert ref.assign(x, c, dtype=torch.float64).tolist() == want.tolist()
    labels = ref.assign(x, c)
    assert labels.dtype == torch.int32 and labels.shape == (2, 50)
    assert labels.tolist() == want.tolist()  # no near-ties in this draw: fp32 agrees


def test_assign_bounds_its_scores_by_chunking_over_problems_and_rows(monkeypatch):
    x, c, _ = _data(B=5, N=37, K=7)
    want = ref.assign(x, c, dtype=torch.float64)
    for budget in (7, 30, 7 * 37 * 2):  # one row of one problem, a few rows, two whole problems
        monkeypatch.setattr(ref, "_SCORE_ELEMENTS", budget)
        assert ref.assign(x, c, dtype=torch.float64).tolist() == want.tolist()


def test_assign_breaks_ties_toward_the_smallest_index_and_uses_given_c_sq():
    x, c, _ = _data(B=1, N=9, K=4)
    c[0, 3] = c[0, 1]  # centroids 1 and 3 coincide: 1 must win
    labels = ref.assign(x, c, dtype=torch.float64)
    assert 3 not in labels.tolist()[0]
    # A c_sq that makes centroid 2 far more attractive than its true norm says.
    c_sq = ref.sq_norms(c)
    c_sq[0, 2] -= 1e6
    assert set(ref.assign(x, c, c_sq=c_sq).tolist()[0]) == {2}


def test_objective_is_the_sum_of_squared_distances_to_the_assigned_centroid():
    x, c, _ = _data()
    labels = ref.assign(x, c)
    d = _brute_distances(x, c)
    want = d.gather(2, labels.long()[..., None]).sum((1, 2))
    torch.testing.assert_close(ref.objective(x, c, labels), want)


def test_update_averages_members_and_keeps_empty_clusters():
    x, c, _ = _data(B=1, N=6, K=3, D=2)
    labels = torch.tensor([[0, 0, 2, 2, 2, 0]], dtype=torch.int32)
    new, counts = ref.update(x, labels, c)
    assert counts.tolist() == [[3, 0, 3]]
    torch.testing.assert_close(new[0, 0], x[0, [0, 1, 5]].mean(0))
    torch.testing.assert_close(new[0, 2], x[0, [2, 3, 4]].mean(0))
    assert torch.equal(new[0, 1], c[0, 1])  # empty: unchanged


def test_accumulate_adds_to_given_buffers_in_the_kernels_counts_shape():
    x, _, _ = _data(B=2, N=10, K=4, D=3)
    labels = torch.randint(0, 4, (2, 10), generator=torch.Generator().manual_seed(1), dtype=torch.int32)
    sums = torch.ones(2, 4, 3)
    counts = torch.full((2, 4, 1), 5, dtype=torch.int32)
    s, n = ref.accumulate(x, labels, sums, counts)
    assert n.shape == (2, 4, 1) and n.dtype == torch.int32
    assert n.sum().item() == 2 * 4 * 5 + 20
    for b in range(2):
        for k in range(4):
            torch.testing.assert_close(s[b, k], 1 + x[b][labels[b] == k].sum(0))
    torch.testing.assert_close(ref.finalize(s - 1, n - 5, sums), ref.update(x, labels, sums)[0])


def test_lloyd_finds_well_separated_clusters():
    g = torch.Generator().manual_seed(3)
    centres = torch.tensor([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    which = torch.arange(90) % 3
    x = (centres[which] + 0.1 * torch.randn(90, 2, generator=g))[None]
    c, labels, obj = ref.lloyd(x, 3, iters=50, init=centres[None] + 1.0)
    assert torch.equal(labels[0].long(), which)
    torch.testing.assert_close(c[0], centres, atol=0.1, rtol=0)
    assert obj.item() < 90 * 0.1
