"""Kimi Delta Attention forward in CAKE IR, K = V = 128, as two kernels (sm_90a).

The math is reference.chunked's with chunks of C = 64 tokens. The chunk algorithm has
a part that needs no state (the gates' cumsum, the intra-chunk matrices and the
triangular inverse) and a short serial part that carries the state; they are split:

1. `intra_sm90a`, one block per (chunk, head, batch), all in parallel. With G the
   chunk's inclusive gate cumsum, it writes per chunk
       wneg = -T (beta k e^G)       ut = T (beta v)        T = (I + A)^-1
       pm   = lower(qs e^G (k e^-G)^T)  (j <= i)            qg = qs e^G
       kd   = k e^(G_last - G)         gl = e^G_last        (qs = scale q)
   into a workspace. Exponentials are referenced causally, per sub-chunk of 16
   tokens: the row block I (tokens 16I..16I+15) of A and P uses the reference row
   r = 16I, e^(G_i - G_j) = e^(G_i - G_r) e^(G_r - G_j). For i >= r the first factor
   is at most 1; for j < r the second is too, and for r <= j <= i it is at most
   e^(15 |g|max) (75 nats at lower_bound = -5, inside fp32 and bf16 range). Rows
   outside block I are zeroed in its left factor, so the four blocks' products sum
   into one accumulator; entries a mask drops (j > i) are kept finite by clamping the
   right factor's exponent at CLAMP nats. No factor depends on a token after row i.
2. `chain_sm90a`, one block per (value slice of 64, head, batch): the serial state
   chain, split over V so each head has V / 64 blocks. The state is carried
   transposed, St = S^T [64 values, K], as a wgmma accumulator; per chunk
       U = ut + wneg S,   O = qg S + pm U,   St = St diag(gl) + U^T kd
   four wgmmas on a TMA ring that prefetches the next chunks' workspace tiles.

Inputs are token-first ([B, T, H, K]) viewed as 2-D [B T, H K] so a TMA box is one
chunk of one head; T is a whole number of chunks (the API pads with g = 0, beta = 0,
k = v = 0 rows, which leave the state and every earlier output unchanged).
"""

from compiler.ir.builder import KernelBuilder, block, coord
from kernels.gemm.idioms import init_barriers

C = 64  # tokens per chunk: one wgmma row window
SUB = 16  # tokens per sub-chunk: the span of an exponential's reference row
HEAD = 128  # K = V: a multiple of the 64-column halves the fragments are built in
HALF = 64
CLAMP = 80.0  # nats: e^80 * 128 stays finite in fp32 and bf16; only masked entries reach it

WORKSPACE = ("wneg", "ut", "pm", "qg", "kd", "gl")


def _symbols(kb):
    B = kb.symbol("B", min=1, max=1 << 16, doc="batch (sequences)")
    H = kb.symbol("H", min=1, max=1 << 10, doc="heads")
    T = kb.symbol("T", min=C, max=1 << 22, doc="tokens per sequence, padded to whole chunks")
    kb.require(T % C == 0, "T comes in whole %d-token chunks (the API pads)" % C)
    return B, H, T


def _contract(kb, math):
    kb.contract(math=math, reference="kernels.kda.reference.forward", metric="rel_l2", tolerance=1e-2)


def _workspace(kb, B, H, T, access):
    """The tensors phase 1 writes and phase 2 reads, head-first per chunk."""
    return {
        "wneg": kb.tensor("wneg", "bf16", [B, H, T, HEAD], access=access, doc="-T (beta k e^G) per chunk"),
        "ut": kb.tensor("ut", "bf16", [B, H, T, HEAD], access=access, doc="T (beta v) per chunk"),
        "pm": kb.tensor("pm", "bf16", [B, H, T, C], access=access, doc="causal intra-chunk scores qg (k e^-G)^T"),
        "qg": kb.tensor("qg", "bf16", [B, H, T, HEAD], access=access, doc="scale q e^G"),
        "kd": kb.tensor("kd", "bf16", [B, H, T, HEAD], access=access, doc="k e^(G_last - G)"),
        "gl": kb.tensor("gl", "f32", [B, H, T // C, HEAD], access=access, doc="e^G_last per chunk"),
    }


def _publish(r, wg):
    """Generic-proxy shared writes become visible to wgmma, across the warpgroup."""
    r.fence("proxy_async")
    r.named_sync(wg)


def intra_sm90a(scale=HEAD**-0.5, name="kda_intra_sm90a"):
    """Phase 1: per (chunk, head, batch) the chunk's matrices (module docstring) into the workspace.

    Two consumer warpgroups share the work: `wa` builds the left factors of A and the
    first half of the right factors, then runs A, the inverse and W; `wb` builds the left
    factors of P and the second half, then runs P, U, qg and kd. They meet at the
    256-thread barrier `both` wherever one reads what the other wrote.
    """
    kb = KernelBuilder(name, target="sm_90a")
    B, H, T = _symbols(kb)
    _contract(
        kb,
        "per (b, h, chunk c of 64 tokens) with G = cumsum(g) in the chunk, A = strict_lower(beta (k e^G)(k e^-G)^T),"
        " T = (I + A)^-1: wneg = -T (beta k e^G), ut = T (beta v), pm = lower(scale q e^G (k e^-G)^T),"
        " qg = scale q e^G, kd = k e^(G_last - G), gl = e^G_last",
    )
    q = kb.tensor("q", "bf16", [B * T, H * HEAD], doc="queries [B, T, H, K] as [B T, H K]")
    k = kb.tensor("k", "bf16", [B * T, H * HEAD], doc="keys [B, T, H, K] as [B T, H K]")
    v = kb.tensor("v", "bf16", [B * T, H * HEAD], doc="values [B, T, H, V] as [B T, H V]")
    g = kb.tensor("g", "f32", [B * T, H * HEAD], doc="log-space decay gates [B, T, H, K] as [B T, H K]")
    beta = kb.tensor("beta", "f32", [B, H, T], doc="write strengths, head-first")
    ws = _workspace(kb, B, H, T, access="write")
    kb.grid(T // C, H, B)

    sq, sk, sv = (kb.shared(n, "bf16", [C, HEAD], swizzle="128b") for n in ("sq", "sk", "sv"))
    sG = kb.shared("sG", "f32", [C, HEAD])  # g, then its cumsum in place
    # Operand tiles of the four sub-chunk products, then of W and U (halves of 64 columns).
    skp, sqp, skm = (kb.shared(n, "bf16", [C, HEAD], swizzle="128b") for n in ("skp", "sqp", "skm"))
    skbg, svb = (kb.shared(n, "bf16", [C, HALF], swizzle="128b") for n in ("skbg", "svb"))
    sA = kb.shared("sA", "f32", [C, C])
    sT = kb.shared("sT", "bf16", [C, C], swizzle="128b")
    sgl = kb.shared("sgl", "f32", [1, HEAD])
    # smask[i, I] = 1 where token i is in sub-chunk I; sbase is scratch for building it.
    smask, sbase = (kb.shared(n, "f32", [C, C // SUB]) for n in ("smask", "sbase"))
    in_bytes = C * HEAD * (2 * 3 + 4)
    full = kb.mbarrier("full", arrivals=1, tx_bytes=in_bytes)
    both = kb.named_barrier("both", threads=256)
    c, h, b = block.x, block.y, block.z
    row0 = b * T + c * C

    with kb.role("load", "producer", warps=1) as r:
        init_barriers(r, full)
        with r.if_(r.elected):
            r.expect_tx(full[0], in_bytes)
            for src, dst in ((q, sq), (k, sk), (v, sv), (g, sG)):
                r.tma_load(src[row0, h * HEAD], dst.all, full[0])

    def half(t, hc):
        return t.tile(window=[(0, C), (hc, HALF)])

    def row(i, hc):
        return sG.tile(window=[(i, 1), (hc, HALF)])

    def consumer(role, *products):
        """A consumer warpgroup's fragments (X, Y: exponentials and gated halves; then its two
        products), its beta rows and its own barrier."""
        regs = [kb.registers("%s_%s" % (n, role), "f32", [C, HALF], layout="wgmma_acc", owner=role)
                for n in ("X", "Y") + products]
        beta_r = kb.registers("beta_%s" % role, "f32", [C], layout="wgmma_rows", owner=role)
        return regs, beta_r, kb.named_barrier("wg_%s" % role, threads=128)

    (Xa, Ya, acc_a, w_a), beta_a, wg_a = consumer("wa", "A", "W")  # A, then T; W by halves
    (Xb, Yb, acc_p, u_b), beta_b, wg_b = consumer("wb", "P", "U")  # P; U by halves

    def gated(r, Y, dst, src, *factors):
        r.ew("mul", Y.all, src, factors[0])
        for f in factors[1:]:
            r.ew("mul", Y.all, Y.all, f)
        r.copy(Y.all, dst)

    def left_factors(r, X, Y, blk, dst, src):
        """dst = src e^(G_i - G_r) on the rows of sub-chunk blk (r = its first row), zero elsewhere."""
        ref = blk * SUB
        for hc in (0, HALF):
            r.ew("sub", X.all, half(sG, hc), row(ref, hc))
            r.ew("min", X.all, X.all, 0.0)
            r.ew("exp", X.all, X.all)
            r.ew("mul", X.all, X.all, smask.tile(window=[(0, C), (blk, 1)]))
            gated(r, Y, half(dst, hc), half(src, hc), X.all)

    def right_factors(r, X, Y, blk, hc):
        """skm's half hc: k e^(G_r - G_j), clamped where only masked entries use it."""
        r.ew("sub", X.all, row(blk * SUB, hc), half(sG, hc))
        r.ew("min", X.all, X.all, CLAMP)
        r.ew("exp", X.all, X.all)
        gated(r, Y, half(skm, hc), half(sk, hc), X.all)

    def start(r, beta_r, cols):
        """Meet the init, wait for the inputs, read beta; the cumsum of the gate columns `cols`, in place."""
        r.block_sync()
        r.wait(full[0], phase=0)
        r.copy(beta[b, h, c * C], beta_r.all)
        r.scan(sG.tile(window=[(0, C), (cols, HALF)]), sG.tile(window=[(0, C), (cols, HALF)]), 0, "role")

    with kb.role("wa", "consumer", warpgroups=1) as r:
        start(r, beta_a, 0)
        # The sub-chunk masks: [16 I <= i] * [i - 16 I < 16].
        r.ew("mul", sbase.all, coord(1), float(SUB))
        r.named_sync(wg_a)
        r.ew("le", smask.all, sbase.all, coord(0))
        r.named_sync(wg_a)
        r.ew("sub", sbase.all, coord(0), sbase.all)
        r.named_sync(wg_a)
        r.ew("lt", sbase.all, sbase.all, float(SUB))
        r.named_sync(wg_a)
        r.ew("mul", smask.all, smask.all, sbase.all)
        r.named_sync(both)
        for blk in range(C // SUB):
            left_factors(r, Xa, Ya, blk, skp, sk)
            right_factors(r, Xa, Ya, blk, 0)
            r.fence("proxy_async")
            r.named_sync(both)
            r.mma("wgmma", skp.all, skm.all, acc_a.all, accumulate=0 if blk == 0 else 1)
            r.mma_wait(0)
            r.named_sync(both)  # both products are done before the tiles are rebuilt
        # A = beta (products); the inverse reads only its strictly lower part.
        r.ew("mul", acc_a.all, acc_a.all, beta_a.all)
        r.copy(acc_a.all, sA.all)
        r.named_sync(wg_a)
        r.tri_solve(sA.all, acc_a.all, lower=True, unit_diagonal=True)
        r.copy(acc_a.all, sT.all)
        r.fence("proxy_async")
        r.named_sync(both)  # sT is wb's operand too
        for hc in (0, HALF):
            r.ew("exp", Xa.all, half(sG, hc))
            gated(r, Ya, skbg.all, half(sk, hc), Xa.all, beta_a.all)
            _publish(r, wg_a)
            r.mma("wgmma", sT.all, skbg.all, w_a.all, accumulate=0, b_major="mn")
            r.ew("sub", Xa.all, row(C - 1, hc), half(sG, hc))
            r.ew("exp", Xa.all, Xa.all)
            gated(r, Ya, ws["kd"][b, h, c * C, hc], half(sk, hc), Xa.all)
            r.mma_wait(0)
            r.ew("neg", w_a.all, w_a.all)
            r.copy(w_a.all, ws["wneg"][b, h, c * C, hc])
            r.named_sync(wg_a)  # skbg is rebuilt for the next half
        r.ew("exp", sgl.all, sG.tile(window=[(C - 1, 1), (0, HEAD)]))
        r.named_sync(wg_a)
        r.copy(sgl.all, ws["gl"][b, h, c, 0])

    with kb.role("wb", "consumer", warpgroups=1) as r:
        start(r, beta_b, HALF)
        r.named_sync(both)
        for blk in range(C // SUB):
            left_factors(r, Xb, Yb, blk, sqp, sq)
            right_factors(r, Xb, Yb, blk, HALF)
            r.fence("proxy_async")
            r.named_sync(both)
            r.mma("wgmma", sqp.all, skm.all, acc_p.all, accumulate=0 if blk == 0 else 1)
            r.mma_wait(0)
            r.named_sync(both)
        r.ew("le", Xb.all, coord(1), coord(0))
        r.ew("mul", acc_p.all, acc_p.all, Xb.all)
        r.ew("mul", acc_p.all, acc_p.all, scale)
        r.copy(acc_p.all, ws["pm"][b, h, c * C, 0])
        for hc in (0, HALF):
            gated(r, Yb, svb.all, half(sv, hc), beta_b.all)
            r.ew("exp", Xb.all, half(sG, hc))
            gated(r, Yb, ws["qg"][b, h, c * C, hc], half(sq, hc), Xb.all, scale)
            r.fence("proxy_async")
            if hc == 0:
                r.named_sync(both)  # wa's sT is complete
            else:
                r.named_sync(wg_b)
            r.mma("wgmma", sT.all, svb.all, u_b.all, accumulate=0, b_major="mn")
            r.mma_wait(0)
            r.copy(u_b.all, ws["ut"][b, h, c * C, hc])
            r.named_sync(wg_b)  # svb is rebuilt for the next half
    return kb.build()


def chain_sm90a(stages=2, name="kda_chain_sm90a"):
    """Phase 2: per (64-value slice, head, batch) the state chain over the chunks (module docstring)."""
    kb = KernelBuilder(name, target="sm_90a")
    B, H, T = _symbols(kb)
    _contract(
        kb,
        "per (b, h) and value slice, from St = h0t[b, h] (S^T) and for each chunk c: U = ut + wneg S,"
        " o[b, c 64 + i, h V + v] = (qg S + pm U)[i, v], St = St diag(gl[b, h, c]) + U^T kd; ht[b, h] = final St",
    )
    ws = _workspace(kb, B, H, T, access="read")
    h0t = kb.tensor("h0t", "f32", [B, H, HEAD, HEAD], doc="initial state transposed, S^T [V, K]")
    o = kb.tensor("o", "bf16", [B, T, H * HEAD], access="write", doc="outputs [B, T, H, V] as [B, T, H V]")
    ht = kb.tensor("ht", "f32", [B, H, HEAD, HEAD], access="write", doc="final state transposed, S^T [V, K]")
    kb.grid(H * (HEAD // HALF), B)  # block.x = h * 2 + (value slice): its 64 output columns are block.x * 64

    sw = kb.shared("sw", "bf16", [C, HEAD], stages=stages, swizzle="128b")
    su0 = kb.shared("su0", "bf16", [C, HALF], stages=stages, swizzle="128b")
    sp = kb.shared("sp", "bf16", [C, C], stages=stages, swizzle="128b")
    sqg = kb.shared("sqg", "bf16", [C, HEAD], stages=stages, swizzle="128b")
    skd = kb.shared("skd", "bf16", [C, HEAD], stages=stages, swizzle="128b")
    sgl = kb.shared("sgl", "f32", [HEAD], stages=stages)
    sS = kb.shared("sS", "bf16", [HALF, HEAD], swizzle="128b")  # St, the S operand
    sU = kb.shared("sU", "bf16", [C, HALF], swizzle="128b")
    St = kb.registers("St", "f32", [HALF, HEAD], layout="wgmma_acc", owner="mma")
    U = kb.registers("U", "f32", [C, HALF], layout="wgmma_acc", owner="mma")
    O = kb.registers("O", "f32", [C, HALF], layout="wgmma_acc", owner="mma")
    chunk_bytes = kb.tile_bytes(sw, su0, sp, sqg, skd, sgl)
    full = kb.mbarrier("full", arrivals=1, count=stages, tx_bytes=chunk_bytes)
    empty = kb.mbarrier("empty", arrivals=128, count=stages)
    wg = kb.named_barrier("wg", threads=128)
    kb.pipeline("ring", stages, full, empty, [sw, su0, sp, sqg, skd, sgl], producer="load", consumers=["mma"])
    slices = HEAD // HALF
    vs, h, b = block.x % slices, block.x // slices, block.y
    n_chunks = T // C

    with kb.role("load", "producer", warps=1) as r:
        init_barriers(r, full, empty)
        with r.if_(r.elected):
            with r.loop("c", 0, n_chunks) as c:
                s = c % stages
                r.wait(empty.round(c))
                r.expect_tx(full.round(c), chunk_bytes)
                r.tma_load(ws["wneg"][b, h, c * C, 0], sw[s], full.round(c))
                r.tma_load(ws["ut"][b, h, c * C, vs * HALF], su0[s], full.round(c))
                r.tma_load(ws["pm"][b, h, c * C, 0], sp[s], full.round(c))
                r.tma_load(ws["qg"][b, h, c * C, 0], sqg[s], full.round(c))
                r.tma_load(ws["kd"][b, h, c * C, 0], skd[s], full.round(c))
                r.tma_load(ws["gl"][b, h, c, 0], sgl[s], full.round(c))

    with kb.role("mma", "consumer", warpgroups=1) as r:
        r.block_sync()
        r.copy(h0t[b, h, vs * HALF, 0], St.all)
        r.copy(St.all, sS.all)
        _publish(r, wg)
        with r.loop("c", 0, n_chunks) as c:
            s = c % stages
            r.wait(full.round(c))
            r.copy(su0[s], U.all)
            r.mma("wgmma", sw[s], sS.all, U.all, accumulate=1)  # U = ut + wneg S
            r.mma("wgmma", sqg[s], sS.all, O.all, accumulate=0)  # O = qg S ...
            r.mma_wait(0)
            r.copy(U.all, sU.all)
            _publish(r, wg)
            r.mma("wgmma", sp[s], sU.all, O.all, accumulate=1, b_major="mn")  # ... + pm U
            r.ew("mul", St.all, St.all, sgl[s])
            r.mma("wgmma", sU.all, skd[s], St.all, accumulate=1, a_major="mn", b_major="mn")  # St += U^T kd
            r.mma_wait(0)
            r.fence("proxy_async")  # the ld.shared of sgl complete before the TMA refill (CAKE-DATA-011)
            r.arrive(empty.round(c))
            r.copy(O.all, o[b, c * C, block.x * HALF])
            r.copy(St.all, sS.all)
            _publish(r, wg)
        r.copy(St.all, ht[b, h, vs * HALF, 0])
    return kb.build()
