"""chunk_kda (and its per-phase launches) on CPU: the launch plan, fla's gate and norm formulas, and every argument error names its argument."""

import pytest
import torch

from kernels.kda import api


def _args(B=1, T=100, H=2, K=128, V=128, **kw):
    bf = dict(dtype=torch.bfloat16)
    args = dict(q=torch.zeros(B, T, H, K, **bf), k=torch.zeros(B, T, H, K, **bf), v=torch.zeros(B, T, H, V, **bf),
                g=torch.zeros(B, T, H, K), beta=torch.zeros(B, T, H))
    args.update(kw)
    return args


def test_plan_pads_every_sequence_to_whole_chunks():
    p = api.plan(2, 100, 3)
    assert p.lengths == (100, 100) and p.padded_t == 128 and p.chunks == 2
    assert p.intra_grid == (2, 3, 2) and p.chain_grid == (6, 2)


def test_varlen_plan_runs_each_sequence_as_a_row_of_the_longest():
    p = api.plan(1, 500, 4, [0, 100, 164, 500])
    assert p.n == 3 and p.lengths == (100, 64, 336) and p.padded_t == 384
    assert p.intra_grid == (6, 4, 3)
    assert api.plan(1, 1, 1).padded_t == 64


@pytest.mark.parametrize(
    "change, name, words",
    [
        (dict(q=torch.zeros(1, 100, 2, 64, dtype=torch.bfloat16)), "q", "head dim K = 128"),
        (dict(v=torch.zeros(1, 100, 2, 64, dtype=torch.bfloat16)), "v", "head dim V = 128"),
        (dict(v=torch.zeros(1, 100, 4, 128, dtype=torch.bfloat16)), "v", "grouped value heads"),
        (dict(k=torch.zeros(1, 100, 2, 128)), "k", "torch.bfloat16"),
        (dict(g=torch.zeros(1, 100, 2, 127)), "g", "shape"),
        (dict(beta=torch.zeros(1, 100)), "beta", "shape"),
        (dict(scale=-1.0), "scale", "positive"),
        (dict(initial_state=torch.zeros(1, 2, 128, 128, dtype=torch.bfloat16)), "initial_state", "torch.float32"),
        (dict(initial_state=torch.zeros(3, 2, 128, 128)), "initial_state", "shape [1, 2, 128, 128]"),
        (dict(use_gate_in_kernel=True), "A_log", "lower_bound is not set"),
        (dict(use_gate_in_kernel=True, A_log=torch.zeros(2), dt_bias=torch.zeros(3)), "dt_bias", "H * K = 256"),
        (dict(lower_bound=1.0), "lower_bound", "negative"),
        (dict(cu_seqlens=torch.tensor([0, 50, 90])), "cu_seqlens", "from 0 to T = 100"),
        (dict(cu_seqlens=torch.tensor([0.0, 100.0])), "cu_seqlens", "int32 or int64"),
        (dict(state_v_first=True), "state_v_first", "not supported"),
        (dict(cp_context=object()), "cp_context", "not supported"),
    ],
)
def test_unsupported_arguments_raise_value_error_naming_them(change, name, words):
    with pytest.raises(ValueError, match=r"^%s .*%s" % (name, words.replace("[", r"\[").replace("*", r"\*"))):
        api.chunk_kda(**_args(**change))


def test_varlen_needs_batch_one_and_states_per_sequence():
    with pytest.raises(ValueError, match="^cu_seqlens needs flattened inputs with B = 1"):
        api.chunk_kda(**_args(B=2, cu_seqlens=torch.tensor([0, 100])))
    with pytest.raises(ValueError, match=r"^initial_state must have shape \[2, 2, 128, 128\]"):
        api.chunk_kda(**_args(cu_seqlens=torch.tensor([0, 40, 100]), initial_state=torch.zeros(1, 2, 128, 128)))


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'not_an_option'"):
        api.chunk_kda(**_args(not_an_option=1))


def test_cpu_tensors_are_refused_after_the_checks():
    with pytest.raises(ValueError, match="^q must be on an sm_90"):
        api.chunk_kda(**_args())


def test_gate_formulas_are_flas():
    g = torch.randn(1, 3, 2, 4)
    A_log, dt_bias = torch.randn(2), torch.randn(8)
    x = g + dt_bias.view(2, 4)
    softplus = -A_log.exp().view(2, 1) * torch.log1p(torch.exp(x))
    torch.testing.assert_close(api.gate(g, A_log, dt_bias, None), softplus)
    bounded = -5.0 * torch.sigmoid(A_log.exp().view(2, 1) * x)
    torch.testing.assert_close(api.gate(g, A_log, dt_bias, -5.0), bounded)
    torch.testing.assert_close(api.gate(g, None, None, -5.0), -5.0 * torch.sigmoid(g))
    assert float(api.gate(100 * g.abs(), A_log, None, -5.0).min()) >= -5.0


def test_gate_rows_are_the_kernels_form_and_a_raw_minus_inf_pads_to_a_zero_log_gate():
    A_log, dt_bias = torch.randn(2), torch.randn(8)
    fn, rows = api.gate_rows(A_log, dt_bias, -5.0, 2, "cpu", keys=4)
    assert fn == "sigmoid" and rows.shape == (6, 4) and rows.dtype == torch.float32
    torch.testing.assert_close(rows[2], torch.full((4,), -5.0))  # head 0's s is lower_bound
    assert api.gate_rows(A_log, dt_bias, None, 2, "cpu", keys=4)[0] == "softplus"
    pad = torch.full((1, 3, 2, 4), float("-inf"))
    for lower_bound in (-5.0, None):  # the rows the API pads raw g with change nothing
        assert torch.equal(api.gate(pad, A_log, dt_bias, lower_bound), torch.zeros(1, 3, 2, 4))


def test_l2norm_is_flas():
    x = torch.randn(2, 5, 3, 128)
    want = x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(api.l2norm(x), want)


def test_host_copy_of_cu_seqlens_is_checked_and_used():
    args = _args(cu_seqlens=torch.tensor([0, 40, 100]))
    with pytest.raises(ValueError, match="^cu_seqlens_cpu must be a host copy of cu_seqlens"):
        api.chunk_kda(**args, cu_seqlens_cpu=torch.tensor([0, 100]))
    p = api.check_arguments(**{n: args[n] for n in ("q", "k", "v", "g", "beta", "cu_seqlens")}, scale=None,
                            initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
                            use_gate_in_kernel=False, A_log=None, dt_bias=None, lower_bound=None,
                            use_beta_sigmoid_in_kernel=False, extra={"cu_seqlens_cpu": [0, 30, 100]})
    assert p.lengths == (30, 70)  # the host copy is what the plan reads: no device sync


def test_zero_length_sequences_keep_their_state():
    p = api.plan(1, 100, 2, [0, 0, 100, 100])
    assert p.lengths == (0, 100, 0) and p.padded_t == 128


def test_gate_parameters_without_the_in_kernel_gate_are_ignored_as_fla_ignores_them():
    with pytest.raises(ValueError, match="^q must be on an sm_90"):  # past every argument check
        api.chunk_kda(**_args(A_log=torch.zeros(2), dt_bias=torch.zeros(7), lower_bound=-5.0))


def test_phases_checks_its_arguments_as_chunk_kda_does():
    with pytest.raises(ValueError, match="^scale .*positive"):
        api.phases(**_args(scale=-1.0), output_final_state=True)
    with pytest.raises(ValueError, match="^q must be on an sm_90"):  # past every argument check
        api.phases(**_args(), output_final_state=True)
