"""The naive KDA forward kernel: the token recurrence itself, the plainest correct schedule, where the agent starts.

reference.recurrent's definition, one token after the other: per (b, h) the state S is
K x V, and for each token t

    S <- diag(exp(g_t)) S;   u = S^T k_t;   S <- S + k_t (beta_t (v_t - u))^T;   o_t = S^T (scale q_t)

Column j of S evolves alone (its update reads only column j, k_t, v_t[j] and beta_t), so
one warp carries one column: one block of one warp per (value channel j, head, batch),
lane l holding S[4 l .. 4 l + 3, j] in registers. Every token it loads its slices of q,
k, g and the scalars v[j], beta with plain loads, and the two dot products over K are a
warp sum. No shared memory, no asynchronous copies, no mma, no chunking: the chunked
algorithm (kernels/kda/schedules.py: intra-chunk matrices, then a state chain on wgmma)
is what the tuned forward does instead.

Shapes are head-first as reference.recurrent's (q, k, g [B, H, T, K], v [B, H, T, V],
beta [B, H, T]) with K = V = 128 and any T; o [B, H, T, V] in f32, and the final state
written transposed, st [B, H, V, K] = S^T (row j is column j of S), as the chain kernel
carries it; the binding (kernels/kda/binding.py) turns it into [B, H, K, V].
"""

from compiler.ir.builder import KernelBuilder, block
from kernels.kda.schedules import HEAD  # K = V

PER_LANE = HEAD // 32  # key channels of S's column each lane holds


def recurrent_naive(scale=HEAD**-0.5, name="kda_recurrent_naive"):
    """o and the final state S^T of KDA for caller-normalised q, k and a zero initial state: one warp per value channel."""
    kb = KernelBuilder(name, target="sm_90a")
    B = kb.symbol("B", min=1, max=1 << 16, doc="batch (sequences)")
    H = kb.symbol("H", min=1, max=1 << 10, doc="heads")
    T = kb.symbol("T", min=1, max=1 << 22, doc="tokens per sequence")
    kb.contract(
        math="per (b, h), from S = 0, for each token t: S = diag(exp(g[b, h, t])) S; u = S^T k[b, h, t];"
        " S += k[b, h, t] (beta[b, h, t] (v[b, h, t] - u))^T; o[b, h, t] = S^T (scale q[b, h, t]);"
        " st[b, h] = the final S^T",
        reference="kernels.kda.reference.recurrent",
        metric="rel_l2",
        tolerance=1e-2,
    )
    q = kb.tensor("q", "bf16", [B, H, T, HEAD], doc="queries, unit norm per token")
    k = kb.tensor("k", "bf16", [B, H, T, HEAD], doc="keys, unit norm per token")
    v = kb.tensor("v", "bf16", [B, H, T, HEAD], doc="values")
    g = kb.tensor("g", "f32", [B, H, T, HEAD], doc="log-space decay per key channel, <= 0")
    beta = kb.tensor("beta", "f32", [B, H, T], doc="write strengths in (0, 1)")
    o = kb.tensor("o", "f32", [B, H, T, HEAD], access="write", doc="outputs S_t^T (scale q_t)")
    st = kb.tensor("st", "f32", [B, H, HEAD, HEAD], access="write", doc="final state transposed, S^T [V, K]")
    kb.grid(HEAD, H, B)  # block.x = j, the value channel (column of S) this block's warp carries
    j, h, b = block.x, block.y, block.z

    owner = "main"
    s = kb.registers("s", "f32", [PER_LANE], layout="per_thread", owner=owner)  # S[4 lane + i, j]
    kt, qt, gt, tmp = (kb.registers(n, "f32", [PER_LANE], layout="per_thread", owner=owner)
                       for n in ("kt", "qt", "gt", "tmp"))
    vt, bt, u, ot = (kb.registers(n, "f32", [1], layout="per_thread", owner=owner) for n in ("vt", "bt", "u", "ot"))
    with kb.role(owner, "compute", warps=1) as r:
        c0 = r.lane * PER_LANE
        r.fill(s.all, 0.0)
        with r.loop("t", 0, T) as t:
            r.copy(k[b, h, t, c0], kt.all)
            r.copy(q[b, h, t, c0], qt.all)
            r.copy(g[b, h, t, c0], gt.all)
            r.copy(v[b, h, t, j], vt.all)
            r.copy(beta[b, h, t], bt.all)
            r.ew("exp", gt.all, gt.all)
            r.ew("mul", s.all, s.all, gt.all)  # decay each key channel
            r.ew("mul", tmp.all, s.all, kt.all)
            r.reduce("sum", tmp.all, u.all, axis=0, scope="warp")  # u = S^T k, in every lane
            r.ew("sub", u.all, vt.all, u.all)
            r.ew("mul", u.all, u.all, bt.all)  # beta (v - u)
            r.ew("fma", s.all, kt.all, u.all, s.all)  # S += k (beta (v - u))
            r.ew("mul", tmp.all, s.all, qt.all)
            r.reduce("sum", tmp.all, ot.all, axis=0, scope="warp")
            r.ew("mul", ot.all, ot.all, float(scale))
            with r.if_(r.lane == 0):
                r.copy(ot.all, o[b, h, t, j])
        r.copy(s.all, st[b, h, j, c0])
    return kb.build()
