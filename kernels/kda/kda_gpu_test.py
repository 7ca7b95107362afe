"""GPU tests of chunk_kda: the float32 recurrence on tails, batches, states, saturated gates and varlen; custom op; graphs."""

import pytest

from kernels.kda import bench

TOLERANCE = 5e-3


@pytest.mark.gpu
@pytest.mark.parametrize("case", bench.correctness_cases(), ids=lambda c: "%s-%s" % (c["mode"], "-".join(map(str, c["lens"]))))
def test_matches_the_float32_recurrence(case):
    import torch

    from kernels.kda import api

    gen = torch.Generator(device="cuda").manual_seed(len(case["lens"]) * 1000 + case["lens"][0])
    kw = bench.correctness_inputs(case, gen)
    want = bench.expected(kw, dtype=torch.float32, algo="recurrent")
    got = bench.check(api.chunk_kda, kw, want, TOLERANCE)
    assert got["passed"], got["message"]


@pytest.mark.gpu
def test_final_state_only_when_asked_and_zero_initial_state_by_default():
    import torch

    from kernels.kda import api

    gen = torch.Generator(device="cuda").manual_seed(3)
    kw = bench.correctness_inputs(dict(B=1, lens=[96], H=2, state=False, mode="log"), gen)
    kw["output_final_state"] = False
    o, s = api.chunk_kda(**kw)
    assert s is None and o.shape == kw["v"].shape and o.dtype == torch.bfloat16
    kw["initial_state"] = torch.zeros(1, 2, 128, 128, device="cuda")
    o2, _ = api.chunk_kda(**kw)
    assert torch.equal(o, o2)


@pytest.mark.gpu
def test_is_a_custom_op_that_passes_opcheck():
    import torch

    from kernels.kda import api

    gen = torch.Generator(device="cuda").manual_seed(4)
    kw = bench.correctness_inputs(dict(B=1, lens=[70], H=1, state=True, mode="log"), gen)
    args = (kw["q"], kw["k"], kw["v"], kw["g"], kw["beta"], 128**-0.5, kw["initial_state"], False, False, None, None,
            None, False, None)
    torch.library.opcheck(api._chunk_kda_op, args, test_utils=("test_schema", "test_faketensor"))


@pytest.mark.gpu
def test_fixed_length_call_replays_in_a_cuda_graph():
    import torch

    from kernels.kda import api

    gen = torch.Generator(device="cuda").manual_seed(5)
    kw = bench.correctness_inputs(dict(B=2, lens=[128], H=2, state=True, mode="log"), gen)
    want, _ = api.chunk_kda(**kw)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, _ = api.chunk_kda(**kw)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)
