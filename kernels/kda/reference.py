"""Kimi Delta Attention (KDA) forward: the recurrent definition and its chunked form, in torch.

Layout is head-first: q, k [B, H, T, K], v [B, H, T, V], per-channel log-space decay
gates g [B, H, T, K] (g <= 0) and write strengths beta [B, H, T] in (0, 1). Per head the
state S is K x V, zero unless `initial_state` [B, H, K, V] is given. For each token t

    S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T
    o_t = S_t^T (scale * q_t)

with scale = K^-0.5 unless given, and q, k optionally L2-normalised per token first
(`l2norm_qk`; the kernels expect callers to have normalised them). `recurrent` is
the ground truth. `chunked` computes the same thing chunk by chunk, as the CAKE IR
schedule does (see docs/ir.md for the derivation): within a chunk of C tokens with
state S at its start, G = cumsum(g) (inclusive), a reference row Gm = G[C // 2] keeps
the split exponentials in range, and

    kp = k exp(G - Gm),  km = k exp(Gm - G),  qp = q exp(G - Gm)
    A  = strictly_lower(beta (kp km^T))           (A_ij = beta_i sum_c k_ic k_jc e^{G_ic - G_jc})
    T  = (I + A)^-1                               (unit lower triangular)
    W  = T (beta k exp(G)),   U = T (beta v) - W S
    O  = (q exp(G)) S + lower(qp km^T) U          (lower: j <= i)
    S <- diag(exp(G_last)) S + (k exp(G_last - G))^T U
"""

import torch


def _prepare(q, k, v, g, beta, scale, l2norm_qk, dtype):
    q, k, v, g, beta = (t.to(dtype) for t in (q, k, v, g, beta))
    if l2norm_qk:
        q = q / q.norm(dim=-1, keepdim=True).clamp(min=1e-6)
        k = k / k.norm(dim=-1, keepdim=True).clamp(min=1e-6)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return q * scale, k, v, g, beta


def _initial(q, v, initial_state, dtype):
    B, H, _, K = q.shape
    if initial_state is None:
        return torch.zeros(B, H, K, v.shape[-1], dtype=dtype, device=q.device)
    return initial_state.to(dtype)


def recurrent(q, k, v, g, beta, scale=None, l2norm_qk=False, initial_state=None, dtype=torch.float64):
    """KDA token by token: (o [B, H, T, V], final state [B, H, K, V]), both in `dtype`."""
    q, k, v, g, beta = _prepare(q, k, v, g, beta, scale, l2norm_qk, dtype)
    S = _initial(q, v, initial_state, dtype)
    o = torch.empty(v.shape, dtype=dtype, device=v.device)
    for t in range(q.shape[2]):
        S = S * g[:, :, t, :, None].exp()  # diag(exp(g_t)) S: decay each key channel
        kt, bt = k[:, :, t], beta[:, :, t, None]
        err = v[:, :, t] - torch.einsum("bhkv,bhk->bhv", S, kt)  # v_t - S^T k_t
        S = S + torch.einsum("bhk,bhv->bhkv", kt, bt * err)  # (I - b k k^T) S + b k v^T
        o[:, :, t] = torch.einsum("bhkv,bhk->bhv", S, q[:, :, t])
    return o, S


def chunked(q, k, v, g, beta, scale=None, l2norm_qk=False, initial_state=None, chunk=64, dtype=torch.float64):
    """KDA chunk by chunk (module docstring); same result as `recurrent`. The last chunk may be short."""
    q, k, v, g, beta = _prepare(q, k, v, g, beta, scale, l2norm_qk, dtype)
    S = _initial(q, v, initial_state, dtype)
    o = torch.empty(v.shape, dtype=dtype, device=v.device)
    for t0 in range(0, q.shape[2], chunk):
        qc, kc, vc, gc = (t[:, :, t0 : t0 + chunk] for t in (q, k, v, g))
        bc = beta[:, :, t0 : t0 + chunk, None]
        L = qc.shape[2]
        G = gc.cumsum(2)
        Gm = G[:, :, L // 2 : L // 2 + 1]
        kp, km, qp = kc * (G - Gm).exp(), kc * (Gm - G).exp(), qc * (G - Gm).exp()
        A = (bc * (kp @ km.transpose(-1, -2))).tril(-1)
        eye = torch.eye(L, dtype=dtype, device=q.device)
        T = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
        W = T @ (bc * kc * G.exp())
        U = T @ (bc * vc) - W @ S
        P = (qp @ km.transpose(-1, -2)).tril()
        o[:, :, t0 : t0 + L] = (qc * G.exp()) @ S + P @ U
        G_last = G[:, :, -1:]
        S = G_last.transpose(-1, -2).exp() * S + (kc * (G_last - G).exp()).transpose(-1, -2) @ U
    return o, S


def forward(q, k, v, g, beta):
    """The kernels' contract: o [B, H, T, V] in float32 for caller-normalised q, k, scale K^-0.5, zero initial state."""
    return chunked(q, k, v, g, beta)[0].float()


def to_domain(q, k, v, g, beta, dtype=torch.bfloat16, gate_bound=2.0):
    """Raw samples of each input's shape -> the kernels' domain: unit-norm q, k; v as drawn; g in
    [-gate_bound, 0] and beta in (0, 1) by a sigmoid. q, k, v are rounded to `dtype` (the kernels' operand
    type); g and beta stay float32."""
    q = torch.nn.functional.normalize(q.float(), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(k.float(), dim=-1).to(dtype)
    return q, k, v.to(dtype), -gate_bound * torch.sigmoid(g.float()), torch.sigmoid(beta.float())


def random_inputs(B, H, T, K, V, generator, dtype=torch.bfloat16, gate_bound=2.0):
    """Inputs in the kernels' domain (to_domain) from standard normal samples."""

    def randn(*shape):
        return torch.randn(shape, generator=generator)

    return to_domain(randn(B, H, T, K), randn(B, H, T, K), randn(B, H, T, V), randn(B, H, T, K), randn(B, H, T),
                     dtype, gate_bound)


def token_first(q, k, v, g, beta, scale=None, initial_state=None, cu_seqlens=None, dtype=torch.float32, algo="recurrent"):
    """fla's layout: q, k [B, T, H, K], v [B, T, H, V], g [B, T, H, K], beta [B, T, H], states [N, H, K, V].

    Activated inputs (log-space gates, beta probabilities, q and k as given). Returns (o [B, T, H, V],
    final state [N, H, K, V]) in `dtype`; with `cu_seqlens` (B = 1) each sequence runs from its own
    initial state. `algo` is "recurrent" (the ground truth) or "chunked" (use float64 there: its
    mid-chunk reference row overflows float32 at saturated gates).
    """
    run = recurrent if algo == "recurrent" else chunked
    bounds = [0, q.shape[1]] if cu_seqlens is None else [int(x) for x in cu_seqlens]
    outs, finals = [], []
    for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
        sl = slice(None) if cu_seqlens is None else slice(0, 1)
        head_first = [t[sl, a:b].transpose(1, 2) for t in (q, k, v, g, beta)]
        s0 = None
        if initial_state is not None:
            s0 = initial_state if cu_seqlens is None else initial_state[n : n + 1]
        o, s = run(*head_first, scale=scale, initial_state=s0, dtype=dtype)
        outs.append(o.transpose(1, 2))
        finals.append(s)
    return torch.cat(outs, 1), torch.cat(finals, 0)
