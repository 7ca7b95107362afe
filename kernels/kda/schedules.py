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
from compiler.targets import registers
from kernels.gemm.idioms import init_barriers

C = 64  # tokens per chunk: one wgmma row window
SUB = 16  # tokens per sub-chunk: the span of an exponential's reference row
HEAD = 128  # K = V: a multiple of the 64-column halves the fragments are built in
HALF = 64
CLAMP = 80.0  # nats: e^80 * 128 stays finite in fp32 and bf16; only masked entries reach it
L2NORM_EPS = 1e-6  # fla's l2norm_fwd: x / sqrt(sum x^2 + eps)

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


def _variant(gate, g_dtype, l2norm, beta_sigmoid):
    """The kernel name's suffix for fla's in-kernel options (none for the plain schedule)."""
    parts = ([gate + "_gate"] if gate else []) + (["g" + g_dtype] if g_dtype != "f32" else []) + \
        (["l2norm"] if l2norm else []) + (["beta_sigmoid"] if beta_sigmoid else [])
    return "".join("_" + p for p in parts)


def _fused_math(gate, l2norm, beta_sigmoid):
    """The contract's words for fla's in-kernel options, ahead of the chunk matrices'."""
    steps = (["q, k <- x rsqrt(sum x^2 + %g) per row" % L2NORM_EPS] if l2norm else []) + \
        (["g <- s %s(m g + a) with (m, a, s) = gate_rows[3 h .. 3 h + 2]" % gate] if gate else []) + \
        (["beta <- sigmoid(beta)"] if beta_sigmoid else [])
    return "".join(x + "; " for x in steps)


def _publish(r, wg):
    """Generic-proxy shared writes become visible to wgmma, across the warpgroup."""
    r.fence("proxy_async")
    r.named_sync(wg)


def intra_sm90a(scale=HEAD**-0.5, gate=None, g_dtype="f32", l2norm=False, beta_sigmoid=False, name=None):
    """Phase 1: per (chunk, head, batch) the chunk's matrices (module docstring) into the workspace.

    fla's in-kernel options run in the load phase, on the tiles the block reads anyway, so the
    caller passes q, k, g and beta as the user gave them:
    `l2norm` scales each row of q and k by rsqrt(sum x^2 + L2NORM_EPS) in shared memory (each
    warpgroup sums whole rows, both halves, then rewrites its own half); `gate` ("sigmoid" or
    "softplus") turns raw g (of `g_dtype`) into log-gates s f(m g + a) with the head's rows
    (m, a, s) of `gate_rows` [H 3, K] (api.gate_rows: fla's formula with A_log, dt_bias and
    lower_bound folded in), before the cumsum; a bf16 g lands in stage 1 of `skm`, free until
    the second sub-chunk; `beta_sigmoid` takes beta as logits.

    Two consumer warpgroups split the key columns: warpgroup `wa` owns columns 0..63 and `wb`
    columns 64..127 of every gated tile. Each holds its half of the gate cumsum G in registers
    for the whole block (one shared read of G per element instead of one per sub-chunk and
    factor), and from one exponent difference per sub-chunk builds its halves of all three
    operand tiles (left factors of A and P, the shared right factor). The products contract over
    both halves: `wa` runs A, the inverse and W, U of its half; `wb` runs P, then, while `wa`
    inverts, qg, kd and W's and U's right operands of both halves, then W, U of its half. They
    meet at the 256-thread barrier `both` wherever one reads what the other wrote.
    """
    if gate not in (None, "sigmoid", "softplus"):
        raise ValueError("gate must be None, 'sigmoid' or 'softplus', got %r" % (gate,))
    if g_dtype not in ("f32", "bf16"):
        raise ValueError("g_dtype must be 'f32' or 'bf16', got %r" % (g_dtype,))
    kb = KernelBuilder(name or "kda_intra_sm90a" + _variant(gate, g_dtype, l2norm, beta_sigmoid), target="sm_90a")
    B, H, T = _symbols(kb)
    _contract(
        kb,
        _fused_math(gate, l2norm, beta_sigmoid) +
        "per (b, h, chunk c of 64 tokens) with G = cumsum(g) in the chunk, A = strict_lower(beta (k e^G)(k e^-G)^T),"
        " T = (I + A)^-1: wneg = -T (beta k e^G), ut = T (beta v), pm = lower(scale q e^G (k e^-G)^T),"
        " qg = scale q e^G, kd = k e^(G_last - G), gl = e^G_last",
    )
    q = kb.tensor("q", "bf16", [B * T, H * HEAD], doc="queries [B, T, H, K] as [B T, H K]")
    k = kb.tensor("k", "bf16", [B * T, H * HEAD], doc="keys [B, T, H, K] as [B T, H K]")
    v = kb.tensor("v", "bf16", [B * T, H * HEAD], doc="values [B, T, H, V] as [B T, H V]")
    g = kb.tensor("g", g_dtype, [B * T, H * HEAD],
                  doc="%s [B, T, H, K] as [B T, H K]" % ("raw gate inputs" if gate else "log-space decay gates"))
    beta = kb.tensor("beta", "f32", [B, H, T], doc="write %s, head-first" % ("logits" if beta_sigmoid else "strengths"))
    if gate:
        gate_rows = kb.tensor("gate_rows", "f32", [H * 3, HEAD], doc="per head the rows m, a, s of s f(m g + a)")
    ws = _workspace(kb, B, H, T, access="write")
    kb.grid(T // C, H, B)

    sq, sk, sv = (kb.shared(n, "bf16", [C, HEAD], swizzle="128b") for n in ("sq", "sk", "sv"))
    # g, then its cumsum in place; swizzled so that reads in the accumulator layout are 2-way
    # bank conflicted, not 8-way (a plain f32 row is 128 words: its 8 rows of a read share banks).
    sG = kb.shared("sG", "f32", [C, HEAD], swizzle="128b")
    # Operand tiles of the four sub-chunk products, two stages: sub-chunk blk builds stage blk % 2
    # while the products of blk - 1 run. After them stage 0 of skp holds beta k e^G and of sqp
    # beta v, the right operands of W and U.
    skp, sqp, skm = (kb.shared(n, "bf16", [C, HEAD], stages=2, swizzle="128b") for n in ("skp", "sqp", "skm"))
    sA = kb.shared("sA", "f32", [C, C])
    sT = kb.shared("sT", "bf16", [C, C], swizzle="128b")
    sgl = kb.shared("sgl", "f32", [1, HEAD])
    staged = g_dtype != "f32"  # g lands in skm's stage 1, then becomes f32 in sG
    g_dst = skm[1] if staged else sG.all
    loads = [(q, sq.all), (k, sk.all), (v, sv.all)]
    in_bytes = kb.tile_bytes(sq, sk, sv, skm if staged else sG)
    if gate:
        sgate = kb.shared("sgate", "f32", [3, HEAD])
        in_bytes += kb.tile_bytes(sgate)
    full = kb.mbarrier("full", arrivals=1, tx_bytes=in_bytes)
    both = kb.named_barrier("both", threads=256)
    c, h, b = block.x, block.y, block.z
    row0 = b * T + c * C

    producer_regs, consumer_regs = registers.producer_consumer_split("sm_90a", 128, 40, 256)
    with kb.role("load", "producer", warpgroups=1, registers=producer_regs) as r:
        init_barriers(r, full)
        with r.if_((r.warp == 0) & r.elected):
            r.expect_tx(full[0], in_bytes)
            for src, dst in loads:
                r.tma_load(src[row0, h * HEAD], dst, full[0])
            r.tma_load(g[row0, h * HEAD], g_dst, full[0])
            if gate:
                r.tma_load(gate_rows[h * 3, 0], sgate.all, full[0])

    def half(t, hc, stage=None):
        return t.tile(stage=stage, window=[(0, C), (hc, HALF)])

    def row(i, hc):
        return sG.tile(window=[(i, 1), (hc, HALF)])

    def consumer(role):
        """A consumer warpgroup's fragments: G, K (its halves of the cumsum and of k, kept for the
        block), X (exponents, then factors), Y (gated products), its two product accumulators; its
        beta rows, the sub-chunk row mask and its own barrier."""
        frags = [kb.registers("%s_%s" % (n, role), "f32", [C, HALF], layout="wgmma_acc", owner=role)
                 for n in ("G", "K", "X", "Y", "acc", "out")]
        rows = [kb.registers("%s_%s" % (n, role), "f32", [C], layout="wgmma_rows", owner=role)
                for n in ("beta", "mask") + (("nq", "nk") if l2norm else ())]
        return frags, rows, kb.named_barrier("wg_%s" % role, threads=128)

    def gated(r, Y, dst, src, *factors):
        r.ew("mul", Y.all, src, factors[0])
        for f in factors[1:]:
            r.ew("mul", Y.all, Y.all, f)
        r.copy(Y.all, dst)

    def row_norms(r, X, own, norms, hc):
        """rsqrt(sum x^2 + eps) of every row of sq and of sk into the rows fragments: this half from
        `own` (its values in registers), the other half read from shared."""
        for t, mine, n in zip((sq, sk), own, norms):
            r.ew("mul", X.all, mine.all, mine.all)
            r.reduce("sum", X.all, n.all, 1, "lanes")
            r.copy(half(t, HALF - hc), X.all)
            r.ew("mul", X.all, X.all, X.all)
            r.reduce("sum", X.all, n.all, 1, "lanes", accumulate=True)
            r.ew("add", n.all, n.all, L2NORM_EPS)
            r.ew("rsqrt", n.all, n.all)

    def log_gates(r, X, wg, hc):
        """This half of sG: the log-gates from the raw (or bf16-staged) g, before the cumsum."""
        r.copy(half(skm, hc, 1) if staged else half(sG, hc), X.all)
        if not staged:
            r.named_sync(wg)  # every read of this half of sG before it is rewritten in place
        if gate:
            r.ew("fma", X.all, X.all, sgate.tile(window=[(0, 1), (hc, HALF)]), sgate.tile(window=[(1, 1), (hc, HALF)]))
            r.ew(gate, X.all, X.all)
            r.ew("mul", X.all, X.all, sgate.tile(window=[(2, 1), (hc, HALF)]))
        r.copy(X.all, half(sG, hc))
        r.named_sync(wg)  # before the scan reads them column by column

    def start(r, beta_r, G, K, X, Y, norms, wg, hc):
        """Meet the init, wait for the inputs, read beta; fla's options (the docstring); the cumsum of this
        half's gate columns in place, then that half and this half of k into registers."""
        r.block_sync()
        r.wait(full[0], phase=0)
        r.copy(beta[b, h, c * C], beta_r.all)
        if beta_sigmoid:
            r.ew("sigmoid", beta_r.all, beta_r.all)
        r.copy(half(sk, hc), K.all)
        if l2norm:  # q's half in Y, k's in K; both warpgroups read whole rows before either rewrites its half
            nq, nk = norms
            r.copy(half(sq, hc), Y.all)
            row_norms(r, X, (Y, K), norms, hc)
            r.named_sync(both)
            r.ew("mul", Y.all, Y.all, nq.all)
            r.copy(Y.all, half(sq, hc))
            r.ew("mul", K.all, K.all, nk.all)
            r.copy(K.all, half(sk, hc))  # wb reads wa's half of k from shared (outputs)
        if gate or staged:
            log_gates(r, X, wg, hc)
        r.scan(half(sG, hc), half(sG, hc), 0, "role")
        r.named_sync(wg)
        r.copy(half(sG, hc), G.all)

    def sub_chunk_tiles(r, G, K, X, Y, mask, blk, hc):
        """This half of the three operand tiles of row block blk (reference row ref = 16 blk, stage blk % 2):
        skm = k e^min(G_ref - G_j, CLAMP) (clamped where only masked entries use it) and, on the
        rows of block blk only (zero elsewhere), skp = k e^min(G_i - G_ref, 0), sqp alike of q."""
        ref, s = blk * SUB, blk % 2
        r.ew("sub", X.all, G.all, row(ref, hc))
        r.ew("neg", Y.all, X.all)
        r.ew("min", Y.all, Y.all, CLAMP)
        r.ew("exp", Y.all, Y.all)
        gated(r, Y, half(skm, hc, s), K.all, Y.all)
        # mask = [|i - ref - 7.5| < 8]: the rows ref .. ref + 15.
        r.ew("sub", mask.all, coord(0), ref + (SUB - 1) / 2.0)
        r.ew("abs", mask.all, mask.all)
        r.ew("lt", mask.all, mask.all, SUB / 2.0)
        r.ew("min", X.all, X.all, 0.0)
        r.ew("exp", X.all, X.all)
        r.ew("mul", X.all, X.all, mask.all)
        gated(r, Y, half(skp, hc, s), K.all, X.all)
        gated(r, Y, half(sqp, hc, s), half(sq, hc), X.all)

    def products(r, G, K, X, Y, acc, mask, left, hc):
        """The four sub-chunk products left . skm^T summed into acc (A for skp, P for sqp), each
        warpgroup's product of blk running while both build the tiles of blk + 1."""
        for blk in range(C // SUB):
            s = blk % 2
            if blk >= 2:
                r.mma_wait(1)  # this warpgroup's product of blk - 2 is done ...
                r.named_sync(both)  # ... and the other's: stage s may be rebuilt
            sub_chunk_tiles(r, G, K, X, Y, mask, blk, hc)
            r.fence("proxy_async")
            r.named_sync(both)
            r.mma("wgmma", left[s], skm[s], acc.all, accumulate=0 if blk == 0 else 1)
        r.mma_wait(0)
        r.named_sync(both)  # both products are done before the tiles are reused

    def outputs(r, G, K, X, Y, beta_r, hc):
        """Column half hc of qg, kd and of W's and U's right operands (into skp, sqp, free now), from
        that half of G and k (register fragments, or the shared tiles' windows)."""
        r.ew("exp", X.all, G)
        gated(r, Y, half(skp, hc, 0), K, X.all, beta_r.all)
        gated(r, Y, ws["qg"][b, h, c * C, hc], half(sq, hc), X.all, scale)
        r.ew("sub", X.all, row(C - 1, hc), G)
        r.ew("exp", X.all, X.all)
        gated(r, Y, ws["kd"][b, h, c * C, hc], K, X.all)
        gated(r, Y, half(sqp, hc, 0), half(sv, hc), beta_r.all)

    def w_and_u(r, w, u, hc):
        """This half of wneg = -T (beta k e^G) and ut = T (beta v), once sT and both halves are in."""
        r.named_sync(both)
        r.mma("wgmma", sT.all, half(skp, hc, 0), w.all, accumulate=0, b_major="mn")
        r.mma("wgmma", sT.all, half(sqp, hc, 0), u.all, accumulate=0, b_major="mn")
        r.mma_wait(0)
        r.ew("neg", w.all, w.all)
        r.copy(w.all, ws["wneg"][b, h, c * C, hc])
        r.copy(u.all, ws["ut"][b, h, c * C, hc])

    (Ga, Ka, Xa, Ya, acc_a, out_a), (beta_a, mask_a, *norms_a), wg_a = consumer("wa")  # acc: A, then T, then U
    (Gb, Kb, Xb, Yb, acc_b, out_b), (beta_b, mask_b, *norms_b), wg_b = consumer("wb")  # acc: P, then U

    with kb.role("wa", "consumer", warpgroups=1, registers=consumer_regs) as r:
        start(r, beta_a, Ga, Ka, Xa, Ya, norms_a, wg_a, 0)
        products(r, Ga, Ka, Xa, Ya, acc_a, mask_a, skp, 0)
        # A = beta (products); the inverse reads only its strictly lower part.
        r.ew("mul", acc_a.all, acc_a.all, beta_a.all)
        r.copy(acc_a.all, sA.all)
        r.named_sync(wg_a)
        r.tri_solve(sA.all, acc_a.all, lower=True, unit_diagonal=True)  # meanwhile wb writes both halves' outputs
        r.copy(acc_a.all, sT.all)
        r.fence("proxy_async")
        w_and_u(r, out_a, acc_a, 0)
        r.ew("exp", sgl.all, sG.tile(window=[(C - 1, 1), (0, HEAD)]))
        r.named_sync(wg_a)
        r.copy(sgl.all, ws["gl"][b, h, c, 0])

    with kb.role("wb", "consumer", warpgroups=1, registers=consumer_regs) as r:
        start(r, beta_b, Gb, Kb, Xb, Yb, norms_b, wg_b, HALF)
        products(r, Gb, Kb, Xb, Yb, acc_b, mask_b, sqp, HALF)
        r.ew("le", Xb.all, coord(1), coord(0))
        r.ew("mul", acc_b.all, acc_b.all, Xb.all)
        r.ew("mul", acc_b.all, acc_b.all, scale)
        r.copy(acc_b.all, ws["pm"][b, h, c * C, 0])
        outputs(r, Gb.all, Kb.all, Xb, Yb, beta_b, HALF)
        outputs(r, half(sG, 0), half(sk, 0), Xb, Yb, beta_b, 0)  # wa's half too: wa runs the inverse
        r.fence("proxy_async")
        w_and_u(r, out_b, acc_b, HALF)
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
