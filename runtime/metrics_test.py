"""Correctness metrics on synthetic outputs with known errors."""

import pytest
import torch

from runtime import metrics


def test_allclose_reports_worst_element_and_count():
    ref = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = ref.clone()
    out[1, 0] = 3.1
    r = metrics.allclose(out, ref, rtol=1e-3)
    assert not r.passed and "1 of 4 elements" in r.message and "(1, 0)" in r.message
    assert r.value == pytest.approx(0.1 / 3e-3, rel=1e-4)
    assert metrics.allclose(ref * (1 + 1e-5), ref, rtol=1e-4).passed


def test_allclose_scale_tolerates_cancellation():
    ref = torch.tensor([1e-6], dtype=torch.float64)  # the sum of large terms that cancelled
    out = torch.tensor([2e-6], dtype=torch.float64)
    assert not metrics.allclose(out, ref, rtol=1e-4).passed
    assert metrics.allclose(out, ref, rtol=1e-4, scale=torch.tensor([1.0], dtype=torch.float64)).passed


def test_allclose_empty_and_zero_scale():
    assert metrics.allclose(torch.empty(0), torch.empty(0), rtol=1e-4).passed
    assert metrics.allclose(torch.zeros(3), torch.zeros(3), rtol=1e-4).passed


def test_rel_l2():
    ref = torch.ones(100)
    assert metrics.rel_l2(ref + 1e-4, ref, 1e-3).passed
    r = metrics.rel_l2(ref + 1e-2, ref, 1e-3)
    assert not r.passed and r.value == pytest.approx(1e-2, rel=1e-3)
    assert not metrics.rel_l2(torch.zeros(100), ref, 1e-3).passed


def _kmeans_case():
    g = torch.Generator().manual_seed(0)
    points = torch.randn(20000, 8, generator=g)
    centroids = torch.randn(16, 8, generator=g)
    d = torch.cdist(points.double(), centroids.double())
    return points, centroids, d.argmin(1)


def test_kmeans_exact_labels_pass():
    points, centroids, ref = _kmeans_case()
    assert metrics.kmeans_labels(ref.clone(), points, centroids, ref).passed


def test_kmeans_wrong_labels_fail_on_agreement_and_objective():
    points, centroids, ref = _kmeans_case()
    wrong = ref.clone()
    wrong[:100] = (wrong[:100] + 1) % 16
    r = metrics.kmeans_labels(wrong, points, centroids, ref)
    assert not r.passed and r.value == pytest.approx(1 - 100 / 20000)


def test_kmeans_near_tie_flip_passes_only_when_objective_matches():
    centroids = torch.tensor([[0.0], [2.0]], dtype=torch.float64)
    points = torch.cat([torch.tensor([[1.0]], dtype=torch.float64), torch.randn(20000, 1, dtype=torch.float64) * 0.1])
    ref = torch.cdist(points, centroids).argmin(1)
    flipped = ref.clone()
    flipped[0] = 1 - flipped[0]  # point 1.0 is equidistant: the flip costs nothing
    assert metrics.kmeans_labels(flipped, points, centroids, ref).passed
    far = ref.clone()
    far[1] = 1  # a point near 0 assigned to 2: objective grows
    assert not metrics.kmeans_labels(far, points, centroids, ref, min_agreement=0.99).passed


def test_kmeans_out_of_range_labels():
    points, centroids, ref = _kmeans_case()
    bad = ref.clone()
    bad[3] = -1
    r = metrics.kmeans_labels(bad, points, centroids, ref)
    assert not r.passed and "outside [0, 16)" in r.message


def _knn_case(k=5):
    g = torch.Generator().manual_seed(1)
    points = torch.randn(3000, 16, generator=g)
    queries = torch.randn(200, 16, generator=g)
    exact = torch.cdist(queries.double(), points.double()).topk(k, largest=False).indices
    return queries, points, exact


def test_knn_exact_and_permuted_pass():
    queries, points, exact = _knn_case()
    assert metrics.knn_recall(exact, queries, points, min_recall=1.0).value == 1.0
    assert metrics.knn_recall(exact.flip(1), queries, points, min_recall=1.0).passed


def test_knn_duplicates_and_invalid_indices_do_not_count():
    queries, points, exact = _knn_case()
    dup = exact.clone()
    dup[:, 1] = dup[:, 0]
    assert metrics.knn_recall(dup, queries, points).value == pytest.approx(0.8)
    bad = exact.clone()
    bad[:, 0] = -1
    bad[:, 1] = 10**6
    assert metrics.knn_recall(bad, queries, points).value == pytest.approx(0.6)


def test_knn_ties_are_interchangeable():
    points = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [5.0, 5.0]])
    queries = torch.zeros(1, 2)
    for choice in ([0, 1], [1, 2], [2, 0]):
        assert metrics.knn_recall(torch.tensor([choice]), queries, points, min_recall=1.0).passed
    assert metrics.knn_recall(torch.tensor([[0, 3]]), queries, points).value == 0.5


def test_knn_chunks_agree():
    queries, points, exact = _knn_case()
    noisy = exact.clone()
    noisy[::7, 2] = 2999
    assert metrics.knn_recall(noisy, queries, points, chunk=17).value == metrics.knn_recall(noisy, queries, points).value


def test_kmeans_labels_counts_exact_ties_as_agreement_but_not_wrong_labels():
    import torch

    from runtime import metrics

    # Point 0 is equidistant from centroids 0 and 1; point 1 is nearest to centroid 1.
    points = torch.tensor([[0.0, 0.0], [1.0, 0.1]])
    centroids = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [5.0, 5.0]])
    ref = torch.tensor([0, 0])
    tie = metrics.kmeans_labels(torch.tensor([1, 0]), points, centroids, ref, min_agreement=1.0)
    assert tie.passed and tie.value == 1.0 and "raw 0.500000" in tie.message
    wrong = metrics.kmeans_labels(torch.tensor([0, 2]), points, centroids, ref, min_agreement=0.9)
    assert not wrong.passed and wrong.value == 0.5
