"""The tuned kernels the KMeans API runs verify clean (no diagnostic at all): every dispatch variant and the sorted update."""

import pytest

from compiler.verify import format_diagnostic, verify
from kernels.kmeans import tuned, variants


def _clean(kernel):
    diags = verify(kernel)
    assert diags == [], "\n".join(format_diagnostic(d) for d in diags)


@pytest.mark.parametrize("variant", variants.VARIANTS, ids=lambda v: v.name)
def test_every_dispatch_variant_verifies(variant):
    _clean(variant.kernel("bf16"))


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("d", [64, 128, 256])
def test_sorted_update_verifies(d, dtype):
    _clean(tuned.update_sorted(d=d, dtype=dtype))
