"""The tuned kernels the KMeans API runs verify clean (no diagnostic at all): every dispatch variant and the sorted
update; row blocks and centroid tiles keep to what TMA takes."""

import pytest

from compiler.ir import smem_layout
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


def test_row_blocks_split_the_points_into_tma_boxes_of_at_most_256_rows():
    k = tuned.assign_sm90a_tuned(d=16, block_k=32, consumers=4, rows=4, stages=4, x_stages=2)
    boxes = [r for r in k.regions if r.name.startswith("sX")]
    assert [r.name for r in boxes] == ["sX", "sX1", "sX2", "sX3"]
    assert all(list(r.shape) == [256, 16] for r in boxes)
    assert sum(r.name.startswith("acc") for r in k.regions) == 4
    _clean(k)


def test_every_variants_centroid_norm_stages_are_whole_128_byte_tma_destinations():
    # 16-, 48-, 80- and 112-wide tiles (64 to 448 bytes of c_sq a stage) faulted on the H200 (misaligned address)
    # when stages were packed at 16 bytes; the layout pads a TMA destination's stages to 128 (the 16-wide tile's too).
    for v in variants.VARIANTS:
        (slot,) = [r for r in smem_layout.layout(v.kernel()).regions if r.name == "sCsq"]
        assert slot.offset % 128 == 0 and slot.stage_bytes % 128 == 0, v.name


def test_the_streamed_form_keeps_no_points_resident_and_rings_slabs_of_both():
    k = tuned.assign_sm90a_streamed(d=768, block_k=128, dk=64, stages=4, consumers=4)
    shared = {r.name: (list(r.shape), r.stages) for r in k.regions if r.name.startswith("s")}
    assert shared == {"sX": ([256, 64], 4), "sC": ([128, 64], 4), "sCsq": ([128], 4)}
    assert [p.regions for p in k.pipelines] == [["sX", "sC", "sCsq"]]
    _clean(k)
