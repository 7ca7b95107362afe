"""GPU tests of the user-facing Flash-KMeans API: correct labels on odd shapes, custom ops, Lloyd."""

import pytest

SHAPES = [
    {"B": 2, "N": 1000, "K": 37, "D": 64},  # tails everywhere: N, K not multiples of the tiles
    {"B": 1, "N": 4096, "K": 1024, "D": 128},
    {"B": 3, "N": 777, "K": 200, "D": 256},
    {"B": 1, "N": 513, "K": 129, "D": 72},  # D below the tile width: TMA zero-fills the rest
    {"B": 2, "N": 1025, "K": 3, "D": 12},  # D % 8 != 0: zero-padded copies
    {"B": 1, "N": 2049, "K": 65, "D": 300},  # D > 256: the streamed wide tiles (384 here)
    {"B": 2, "N": 1500, "K": 40, "D": 1000},  # the widest tile, 1024
    {"B": 1, "N": 3000, "K": 33, "D": 517},  # wide and D % 8 != 0: zero-padded copies on the 768-wide tile
    {"B": 1, "N": 4097, "K": 2, "D": 8},  # the smallest K and D of the domain
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
def test_assign_passes_the_oracle_on_every_shape(dtype_name):
    import torch

    from kernels.kmeans import api
    from kernels.kmeans.contract import assign_contract
    from runtime.check import check_kernel

    def launch(outputs, inputs):
        outputs[0].copy_(api.kmeans_assign(inputs[0], inputs[1]))

    result = check_kernel(assign_contract(SHAPES, getattr(torch, dtype_name)), launch)
    assert result.passed, result.message


@pytest.mark.gpu
def test_assign_is_a_custom_op_that_passes_opcheck():
    import torch

    from kernels.kmeans import api

    x = torch.randn(2, 300, 64, device="cuda").to(torch.bfloat16)
    c = torch.randn(2, 20, 64, device="cuda").to(torch.bfloat16)
    torch.library.opcheck(api._assign_op, (x, c), test_utils=("test_schema", "test_faketensor"))
    prev = torch.randn(2, 20, 64, device="cuda").to(torch.bfloat16)
    labels = api.kmeans_assign(x, c)
    torch.library.opcheck(api._update_op, (x, labels, prev), test_utils=("test_schema", "test_faketensor"))


@pytest.mark.gpu
def test_update_matches_the_reference_and_keeps_empty_clusters():
    import torch

    from kernels.kmeans import api, reference

    x = torch.randn(2, 5000, 128, device="cuda").to(torch.bfloat16)
    c_prev = torch.randn(2, 64, 128, device="cuda").to(torch.bfloat16)
    labels = torch.randint(0, 60, (2, 5000), device="cuda", dtype=torch.int32)  # clusters 60..63 stay empty
    got = api.kmeans_update(x, labels, c_prev).float()
    want, _ = reference.update(x, labels, c_prev)
    torch.testing.assert_close(got, want.to(torch.bfloat16).float(), rtol=1e-2, atol=1e-2)
    assert torch.equal(got[:, 60:], c_prev[:, 60:].float())


@pytest.mark.gpu
def test_lloyd_lowers_the_objective_and_rejects_bad_arguments():
    import torch

    from kernels.kmeans import api, reference

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, 20000, 64, device="cuda", generator=g).to(torch.bfloat16)
    c0 = api._initial_centroids(x, 50, "random", g)
    obj0 = float(reference.objective(x, c0, reference.assign(x, c0)).sum())
    c, labels = api.kmeans(x, 50, iters=8, tol=0.0, init=c0)
    obj = float(reference.objective(x, c, reference.assign(x, c)).sum())
    assert obj < 0.9 * obj0 and labels.shape == (1, 20000)
    with pytest.raises(ValueError, match="same feature dim"):
        api.kmeans_assign(torch.zeros(10, 12, device="cuda", dtype=torch.bfloat16), torch.zeros(3, 16, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="same dtype"):
        api.kmeans_assign(x, c.half())
    with pytest.raises(ValueError, match="k must be a positive int"):
        api.kmeans(x, 0)


@pytest.mark.gpu
def test_every_variant_passes_the_oracle_through_config():
    import dataclasses

    import torch

    from kernels.kmeans import api, variants
    from kernels.kmeans.contract import assign_contract
    from runtime.check import check_kernel
    from runtime.distributions import CLUSTERED

    failed = []
    for v in variants.VARIANTS:
        for dtype in (torch.bfloat16, torch.float16):
            shape = {"B": 2, "N": 3 * v.block_n + 5, "K": 2 * v.block_k + 3, "D": v.d - 8}
            contract = dataclasses.replace(assign_contract([shape], dtype), distributions=(CLUSTERED,))

            def launch(outputs, inputs, v=v):
                api.assign_into(inputs[0], inputs[1], outputs[0], config=v.name)

            result = check_kernel(contract, launch)
            if not result.passed:
                failed.append("%s %s: %s" % (v.name, dtype, result.message))
    assert not failed, "\n".join(failed)


@pytest.mark.gpu
def test_assign_replays_in_a_cuda_graph_with_fresh_inputs():
    import torch

    from kernels.kmeans import api, reference

    x = torch.randn(2, 3000, 64, device="cuda").to(torch.bfloat16)
    c = torch.randn(2, 70, 64, device="cuda").to(torch.bfloat16)
    api.kmeans_assign(x, c)  # warm: kernels loaded, launch prepared
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        labels = api.kmeans_assign(x, c)
    for _ in range(2):
        x.copy_(torch.randn_like(x, dtype=torch.float32).to(torch.bfloat16))
        c.copy_(torch.randn_like(c, dtype=torch.float32).to(torch.bfloat16))  # new centroids: norms recomputed in the graph
        graph.replay()
        torch.cuda.synchronize()
        want = reference.assign(x, c)
        assert (labels == want).float().mean().item() > 0.999


@pytest.mark.gpu
def test_forced_config_and_autotune_answer_alike():
    import torch

    from kernels.kmeans import api, dispatch

    x = torch.randn(1, 20000, 32, device="cuda").to(torch.bfloat16)
    c = torch.randn(1, 50, 32, device="cuda").to(torch.bfloat16)
    base = api.kmeans_assign(x, c)
    forced = api.kmeans_assign(x, c, config="d32_k64_c1_s4_x2")
    tuned = api.kmeans_assign(x, c, autotune=True)
    assert torch.equal(base, forced) and torch.equal(base, tuned)
    assert dispatch.explain({"B": 1, "N": 20000, "K": 50, "D": 32})["how"] == "autotuned"
    with pytest.raises(ValueError, match="holds up to 16 features"):
        api.kmeans_assign(x, c, config="d16_k32_c1_s4_x2")
