"""The tuned kernels the KMeans API runs verify clean (no diagnostic at all) for every parameter set it uses."""

import pytest

from compiler.verify import format_diagnostic, verify
from kernels.kmeans import tuned
from kernels.kmeans.api import assign_params


def _clean(kernel):
    diags = verify(kernel)
    assert diags == [], "\n".join(format_diagnostic(d) for d in diags)


@pytest.mark.parametrize("consumers", [2, 3, 4])
@pytest.mark.parametrize("d", [64, 128, 256])
def test_tuned_assign_verifies_for_the_apis_parameters(consumers, d):
    _clean(tuned.assign_sm90a_tuned(consumers=consumers, **assign_params(d)))


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("d", [64, 128, 256])
def test_sorted_update_verifies(d, dtype):
    _clean(tuned.update_sorted(d=d, dtype=dtype))
