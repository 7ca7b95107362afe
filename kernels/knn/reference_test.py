"""KNN oracle against brute force: metrics, ties, exclude_self, batches, partial lists and their merge."""

import math

import pytest
import torch

from kernels.knn import reference


def _brute(q, x, k, metric):
    out = []
    for i in range(q.shape[0]):
        s = [reference.scores(q[i : i + 1], x[j : j + 1], metric).item() for j in range(x.shape[0])]
        order = sorted(range(len(s)), key=lambda j: (-s[j] if metric != "l2" else s[j], j))
        out.append(order[:k])
    return out


@pytest.mark.parametrize("metric", reference.METRICS)
def test_knn_matches_brute_force(metric):
    g = torch.Generator().manual_seed(0)
    q, x = torch.randn(6, 8, generator=g), torch.randn(40, 8, generator=g)
    vals, idx = reference.knn(q, x, 5, metric)
    assert vals.dtype == torch.float64 and idx.dtype == torch.int64 and vals.shape == idx.shape == (6, 5)
    assert idx.tolist() == _brute(q, x, 5, metric)
    step = vals[:, 1:] - vals[:, :-1]
    assert (step >= 0).all() if metric == "l2" else (step <= 0).all()


def test_ties_go_to_the_smaller_index_and_exclude_self_skips_the_diagonal():
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [5.0, 5.0]])
    vals, idx = reference.knn(torch.zeros(1, 2), x, 3)
    assert idx.tolist() == [[0, 1, 2]] and vals.tolist() == [[1.0, 1.0, 1.0]]
    _, idx = reference.knn(x, x, 1, exclude_self=True)
    assert idx[:, 0].tolist() == [2, 0, 0, 0]


def test_batched_problems_are_independent():
    g = torch.Generator().manual_seed(1)
    q, x = torch.randn(3, 4, 6, generator=g), torch.randn(3, 20, 6, generator=g)
    _, idx = reference.knn(q, x, 4, "cos")
    for b in range(3):
        assert idx[b].tolist() == reference.knn(q[b], x[b], 4, "cos")[1].tolist()


def test_cosine_of_a_zero_row_is_zero():
    s = reference.scores(torch.zeros(1, 3), torch.ones(2, 3), "cos")
    assert s.tolist() == [[0.0, 0.0]]


def test_partial_lists_and_their_merge_give_the_exact_answer():
    g = torch.Generator().manual_seed(2)
    q, x = torch.randn(1, 5, 8, generator=g), torch.randn(1, 70, 8, generator=g)
    owners = torch.arange(70) % 3
    part_v, part_i = reference.partial_lists(q, x, 4, owners)
    assert part_v.shape == (1, 3, 5, 4)
    assert all(int(j) % 3 == p for p in range(3) for j in part_i[0, p].flatten())
    dist, idx = reference.merge_lists(q, x, part_v, part_i, 4)
    want_v, want_i = reference.knn(q, x, 4)
    assert idx.tolist() == want_i.tolist()
    torch.testing.assert_close(dist, want_v)


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_fanning_partial_lists_in_leaves_the_merge_its_answer(metric):
    """merge_fanin's lists (each 32 partial lists' k best) merge to what the partial lists do, ties included."""
    g = torch.Generator().manual_seed(5)
    q, x = torch.randn(2, 6, 8, generator=g), torch.randn(2, 900, 8, generator=g).round(decimals=1)  # ties
    owners = torch.arange(900) % 70  # 70 lists, padded to 96 with placeholders as the workspace is
    part_v, part_i = reference.partial_lists(q, x, 5, owners, metric)
    worst = -math.inf if metric == "ip" else math.inf
    part_v = torch.cat([part_v, torch.full((2, 26, 6, 5), worst, dtype=part_v.dtype)], 1)
    part_i = torch.cat([part_i, torch.full((2, 26, 6, 5), -1, dtype=part_i.dtype)], 1)
    fan_v, fan_i = reference.fan_in_lists(part_v, part_i, 5, metric)
    assert fan_v.shape == (2, 3, 6, 5)
    assert reference.merge_lists(q, x, fan_v, fan_i, 5, metric)[1].tolist() == \
        reference.merge_lists(q, x, part_v, part_i, 5, metric)[1].tolist()
    # List g holds the 5 best of partial lists 32 g .. 32 g + 31, best first.
    want_v, _ = reference._rank(part_v[:, 32:64].permute(0, 2, 1, 3).reshape(2, 6, -1), 5, metric == "ip")
    torch.testing.assert_close(fan_v[:, 1], want_v)


def test_partial_lists_pad_short_ranges_with_the_worst_score():
    q, x = torch.randn(1, 2, 4), torch.randn(1, 3, 4)
    part_v, part_i = reference.partial_lists(q, x, 5, torch.tensor([0, 0, 1]), metric="ip")
    assert part_i[0, 1, :, 1:].eq(-1).all() and part_v[0, 1, :, 1:].eq(-math.inf).all()


def test_recall_counts_found_reference_neighbours():
    ref = torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]], dtype=torch.int32)
    got = torch.tensor([[3, 2, 1, 0], [4, 5, 9, 9]], dtype=torch.int32)
    assert reference.recall(got, ref) == 6 / 8


@pytest.mark.parametrize("metric", reference.METRICS)
def test_group_best_lists_are_the_k_best_group_bests_named_by_their_groups(metric):
    g = torch.Generator().manual_seed(5)
    q, x = torch.randn(1, 4, 8, generator=g), torch.randn(1, 60, 8, generator=g)
    owners, groups = torch.arange(60) // 30, torch.arange(60) // 30 * 30 + torch.arange(60) % 10
    part_v, part_i = reference.group_best_lists(q, x, 3, owners, groups, metric)
    s = reference.ranking_scores(q, x, metric)
    large = metric != "l2"
    for p in range(2):
        for name in part_i[0, p].flatten().tolist():
            assert name in groups[owners == p].tolist()
        for qi in range(4):
            bests = {int(n): (s[0, qi, groups == n].max() if large else s[0, qi, groups == n].min()).item()
                     for n in torch.unique(groups[owners == p])}
            want = sorted(bests.items(), key=lambda kv: (-kv[1] if large else kv[1], kv[0]))[:3]
            assert part_i[0, p, qi].tolist() == [n for n, _ in want]
            assert part_v[0, p, qi].tolist() == [v for _, v in want]
    # One row per group: the k best rows themselves, as partial_lists gives them.
    one_v, one_i = reference.group_best_lists(q, x, 3, owners, torch.arange(60), metric)
    want_v, want_i = reference.partial_lists(q, x, 3, owners, metric)
    assert one_i.tolist() == want_i.tolist()
    torch.testing.assert_close(one_v, want_v)
