"""Input distributions: shapes, dtypes, freshness and the property each one is for."""

import pytest
import torch

from runtime import distributions


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dist", distributions.ALL)
@pytest.mark.parametrize("shape", [(7,), (5, 3), (2, 4, 6), (0, 3)])
def test_shape_dtype_and_finite(dist, shape):
    x = distributions.sample(dist, shape, gen(), "cpu", dtype=torch.float16)
    assert x.shape == shape and x.dtype == torch.float16 and torch.isfinite(x).all()


def test_same_seed_same_data_new_seed_new_data():
    a = distributions.sample(distributions.NORMAL, (100,), gen(1), "cpu")
    assert torch.equal(a, distributions.sample(distributions.NORMAL, (100,), gen(1), "cpu"))
    assert not torch.equal(a, distributions.sample(distributions.NORMAL, (100,), gen(2), "cpu"))


def test_large_is_large_and_uniform_is_bounded():
    assert distributions.sample(distributions.LARGE, (1000,), gen(), "cpu").abs().max() > 1e3
    u = distributions.sample(distributions.UNIFORM, (1000,), gen(), "cpu")
    assert u.min() >= -1 and u.max() < 1


def test_clustered_points_sit_near_few_centres():
    x = distributions.sample(distributions.CLUSTERED, (2000, 4), gen(), "cpu", dtype=torch.float64)
    assert x.std() > 1  # centres are spread out
    unassigned, clusters = torch.ones(len(x), dtype=torch.bool), 0
    while unassigned.any():  # greedy grouping: each group is every point within 1.0 of a seed point
        seed = x[unassigned.nonzero()[0, 0]]
        unassigned &= (x - seed).norm(dim=1) > 1.0
        clusters += 1
    assert clusters <= 8


def test_near_ties_produce_nearly_equal_distances():
    x = distributions.sample(distributions.NEAR_TIES, (2000,), gen(), "cpu", dtype=torch.float64)
    frac = x / 0.25 - torch.round(x / 0.25)
    assert frac.abs().max() < 1e-3  # on the grid up to tiny noise
    assert len(torch.unique(torch.round(x / 0.25))) < 100  # many points share a coordinate


def test_unknown_distribution_is_named():
    with pytest.raises(ValueError, match="unknown distribution 'gaussian'"):
        distributions.sample("gaussian", (3,), gen(), "cpu")
