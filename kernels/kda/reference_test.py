"""KDA oracles: the recurrence against explicit matrices, the chunked form against the recurrence."""

import pytest
import torch

from kernels.kda import reference as ref


def _inputs(T, K, V, seed=0, B=1, H=2):
    inputs = ref.random_inputs(B, H, T, K, V, torch.Generator().manual_seed(seed), dtype=torch.float64)
    return tuple(t.double() for t in inputs)


def _rel(a, b):
    return ((a - b).norm() / b.norm()).item()


def test_recurrent_step_is_the_matrix_definition():
    q, k, v, g, beta = _inputs(T=3, K=4, V=5)
    S0 = torch.randn(1, 2, 4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    o, S = ref.recurrent(q, k, v, g, beta, scale=0.5, initial_state=S0)
    for h in range(2):
        St = S0[0, h]
        for t in range(3):
            kt, bt = k[0, h, t, :, None], beta[0, h, t]
            St = (torch.eye(4, dtype=torch.float64) - bt * kt @ kt.T) @ torch.diag(g[0, h, t].exp()) @ St
            St = St + bt * kt @ v[0, h, t, None, :]
            torch.testing.assert_close(o[0, h, t], St.T @ (0.5 * q[0, h, t]))
        torch.testing.assert_close(S[0, h], St)


@pytest.mark.parametrize("T, K, V", [(128, 32, 32), (256, 64, 64), (100, 32, 64)])
def test_chunked_equals_recurrent_in_fp64(T, K, V):
    q, k, v, g, beta = _inputs(T, K, V)
    S0 = torch.randn(1, 2, K, V, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    o_r, S_r = ref.recurrent(q, k, v, g, beta, initial_state=S0)
    o_c, S_c = ref.chunked(q, k, v, g, beta, initial_state=S0)
    assert _rel(o_c, o_r) < 1e-10
    assert _rel(S_c, S_r) < 1e-10


def test_l2norm_and_scale_options():
    q, k, v, g, beta = _inputs(T=16, K=8, V=8)
    o1, _ = ref.recurrent(3 * q, 2 * k, v, g, beta, l2norm_qk=True)
    o2, _ = ref.recurrent(q, k, v, g, beta)
    torch.testing.assert_close(o1, o2)
    o3, _ = ref.recurrent(q, k, v, g, beta, scale=1.0)
    torch.testing.assert_close(o3, o2 * 8**0.5)


def test_forward_is_float32_on_the_kernels_inputs():
    q, k, v, g, beta = ref.random_inputs(1, 1, 64, 16, 16, torch.Generator().manual_seed(0))
    assert beta.shape == (1, 1, 64) and q.dtype == torch.bfloat16
    assert float(g.min()) >= -2.0 and float(g.max()) <= 0.0
    o = ref.forward(q, k, v, g, beta)
    assert o.dtype == torch.float32 and o.shape == (1, 1, 64, 16)
    want = ref.recurrent(q, k, v, g, beta)[0]
    assert _rel(o.double(), want) < 1e-6


def test_token_first_is_the_head_first_recurrence_per_sequence():
    q, k, v, g, beta = _inputs(T=40, K=8, V=4, H=3)
    tf = [t.transpose(1, 2) for t in (q, k, v, g, beta)]  # [1, T, H, ...]
    S0 = torch.randn(2, 3, 8, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    o, S = ref.token_first(*tf, initial_state=S0, cu_seqlens=[0, 15, 40], dtype=torch.float64)
    for n, (a, b) in enumerate(((0, 15), (15, 40))):
        o_n, S_n = ref.recurrent(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], g[:, :, a:b], beta[:, :, a:b],
                                 initial_state=S0[n : n + 1])
        torch.testing.assert_close(o[:, a:b], o_n.transpose(1, 2))
        torch.testing.assert_close(S[n : n + 1], S_n)
    o_c, S_c = ref.token_first(*tf, initial_state=S0, cu_seqlens=[0, 15, 40], dtype=torch.float64, algo="chunked")
    assert _rel(o_c, o) < 1e-10 and _rel(S_c, S) < 1e-10
