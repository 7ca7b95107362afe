"""repeat_labels on the CPU: the CUDA edits it tests hypotheses with, and what counts as a wrong label."""

import torch

from kernels.kmeans import repeat_labels

SOURCE = """    cake::mbarrier::wait((bar_full + (v_t) % 2), ((v_t) / 2 + 0) & 1);
    r = 1;
    cake::mbarrier::arrive((bar_empty + (v_t) % 2));
    cake::mbarrier::arrive((bar_x_empty + 0));"""


def test_fence_release_fences_only_the_ring_releases():
    lines = repeat_labels.edited(SOURCE, "fence_release").splitlines()
    assert lines[2] == 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'
    assert lines[3].strip().startswith("cake::mbarrier::arrive((bar_empty")
    assert sum("fence.proxy.async" in line for line in lines) == 1


def test_syncwarp_follows_each_wait_on_full_and_base_changes_nothing():
    lines = repeat_labels.edited(SOURCE, "syncwarp_wait").splitlines()
    assert lines[1] == "__syncwarp();"
    assert repeat_labels.edited(SOURCE, "base") == SOURCE + "\n"


def test_a_near_tie_is_not_wrong_but_a_farther_centroid_and_an_invalid_label_are():
    x = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]])
    c = torch.tensor([[[1.0, 0.0], [-1.0, 0.0], [5.0, 5.0]]])
    xd, cd = x.double(), c.double()
    d = ((xd[0][:, None] - cd[0][None]) ** 2).sum(-1)
    best = (d - (xd[0] ** 2).sum(-1)[:, None]).min(-1).values[None]
    x_sq = (xd ** 2).sum(-1)
    scale = x_sq + 1.0
    labels = torch.tensor([[1, 1, 7]], dtype=torch.int32)  # point 0: a tie; point 1: farther; point 2: invalid
    assert repeat_labels.wrong_labels(labels, x, c, best, x_sq, scale) == [[0, 1], [0, 2]]
