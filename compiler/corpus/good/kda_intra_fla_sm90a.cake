kernel kda_intra_sm90a_sigmoid_gate_gbf16_l2norm_beta_sigmoid {
  contract {
    math: "q, k <- x rsqrt(sum x^2 + 1e-06) per row; g <- s sigmoid(m g + a) with (m, a, s) = gate_rows[3 h .. 3 h + 2]; beta <- sigmoid(beta); per (b, h, chunk c of 64 tokens) with G = cumsum(g) in the chunk, A = strict_lower(beta (k e^G)(k e^-G)^T), T = (I + A)^-1: wneg = -T (beta k e^G), ut = T (beta v), pm = lower(scale q e^G (k e^-G)^T), qg = scale q e^G, kd = k e^(G_last - G), gl = e^G_last"
    reference: "kernels.kda.reference.forward"
    symbol B { min: 1  max: 65536  doc: "batch (sequences)" }
    symbol H { min: 1  max: 1024  doc: "heads" }
    symbol T { min: 64  max: 4194304  doc: "tokens per sequence, padded to whole chunks" }
    constraint { expr: T % 64 == 0  doc: "T comes in whole 64-token chunks (the API pads)" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_90a
  launch { grid: [T / 64, H, B] }
  param q {
    kind: tensor
    dtype: bf16
    shape: [B * T, H * 128]
    access: read
    align_bytes: 16
    doc: "queries [B, T, H, K] as [B T, H K]"
  }
  param k {
    kind: tensor
    dtype: bf16
    shape: [B * T, H * 128]
    access: read
    align_bytes: 16
    doc: "keys [B, T, H, K] as [B T, H K]"
  }
  param v {
    kind: tensor
    dtype: bf16
    shape: [B * T, H * 128]
    access: read
    align_bytes: 16
    doc: "values [B, T, H, V] as [B T, H V]"
  }
  param g {
    kind: tensor
    dtype: bf16
    shape: [B * T, H * 128]
    access: read
    align_bytes: 16
    doc: "raw gate inputs [B, T, H, K] as [B T, H K]"
  }
  param beta {
    kind: tensor
    dtype: f32
    shape: [B, H, T]
    access: read
    align_bytes: 16
    doc: "write logits, head-first"
  }
  param gate_rows {
    kind: tensor
    dtype: f32
    shape: [H * 3, 128]
    access: read
    align_bytes: 16
    doc: "per head the rows m, a, s of s f(m g + a)"
  }
  param wneg {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: write
    align_bytes: 16
    doc: "-T (beta k e^G) per chunk"
  }
  param ut {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: write
    align_bytes: 16
    doc: "T (beta v) per chunk"
  }
  param pm {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 64]
    access: write
    align_bytes: 16
    doc: "causal intra-chunk scores qg (k e^-G)^T"
  }
  param qg {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: write
    align_bytes: 16
    doc: "scale q e^G"
  }
  param kd {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: write
    align_bytes: 16
    doc: "k e^(G_last - G)"
  }
  param gl {
    kind: tensor
    dtype: f32
    shape: [B, H, T / 64, 128]
    access: write
    align_bytes: 16
    doc: "e^G_last per chunk"
  }
  region sq { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sk { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sv { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sG { space: shared  dtype: f32  shape: [64, 128]  stages: 1  swizzle: 128b }
  region skp { space: shared  dtype: bf16  shape: [64, 128]  stages: 2  swizzle: 128b }
  region sqp { space: shared  dtype: bf16  shape: [64, 128]  stages: 2  swizzle: 128b }
  region skm { space: shared  dtype: bf16  shape: [64, 128]  stages: 2  swizzle: 128b }
  region sA { space: shared  dtype: f32  shape: [64, 64]  stages: 1 }
  region sT { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sgl { space: shared  dtype: f32  shape: [1, 128]  stages: 1 }
  region sgate { space: shared  dtype: f32  shape: [3, 128]  stages: 1 }
  region G_wa { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wa" }
  region K_wa { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wa" }
  region X_wa { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wa" }
  region Y_wa { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wa" }
  region acc_wa { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wa" }
  region out_wa { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wa" }
  region beta_wa { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wa" }
  region mask_wa { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wa" }
  region nq_wa { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wa" }
  region nk_wa { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wa" }
  region G_wb { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wb" }
  region K_wb { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wb" }
  region X_wb { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wb" }
  region Y_wb { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wb" }
  region acc_wb { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wb" }
  region out_wb { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "wb" }
  region beta_wb { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wb" }
  region mask_wb { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wb" }
  region nq_wb { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wb" }
  region nk_wb { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "wb" }
  barrier full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 67072 }
  barrier both { kind: named  count: 1  arrivals: 256 }
  barrier wg_wa { kind: named  count: 1  arrivals: 128 }
  barrier wg_wb { kind: named  count: 1  arrivals: 128 }
  role load {
    kind: producer
    warpgroups: 1
    registers: 40
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "full" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: warp == 0 && elected
      then_body {
        mbarrier_expect_tx { barrier: full[0]  bytes: 67072 }
        tma_load { src: q[block.z * T + block.x * 64, block.y * 128]  dst: sq  barrier: full[0] }
        tma_load { src: k[block.z * T + block.x * 64, block.y * 128]  dst: sk  barrier: full[0] }
        tma_load { src: v[block.z * T + block.x * 64, block.y * 128]  dst: sv  barrier: full[0] }
        tma_load { src: g[block.z * T + block.x * 64, block.y * 128]  dst: skm@1  barrier: full[0] }
        tma_load { src: gate_rows[block.y * 3, 0]  dst: sgate  barrier: full[0] }
      }
    }
  }
  role wa {
    kind: consumer
    warpgroups: 1
    registers: 232
    block_sync {}
    mbarrier_wait { barrier: full[0]  phase: 0 }
    copy { src_global: beta[block.z, block.y, block.x * 64]  dst_tile: beta_wa }
    elementwise { op: sigmoid  dst: beta_wa  srcs: [beta_wa] }
    copy { src_tile: sk[0 +: 64, 0 +: 64]  dst_tile: K_wa }
    copy { src_tile: sq[0 +: 64, 0 +: 64]  dst_tile: Y_wa }
    elementwise { op: mul  dst: X_wa  srcs: [Y_wa, Y_wa] }
    reduce { op: sum  src: X_wa  dst: nq_wa  axis: 1  scope: lanes }
    copy { src_tile: sq[0 +: 64, 64 +: 64]  dst_tile: X_wa }
    elementwise { op: mul  dst: X_wa  srcs: [X_wa, X_wa] }
    reduce { op: sum  src: X_wa  dst: nq_wa  axis: 1  scope: lanes  accumulate: true }
    elementwise { op: add  dst: nq_wa  srcs: [nq_wa, 1e-06] }
    elementwise { op: rsqrt  dst: nq_wa  srcs: [nq_wa] }
    elementwise { op: mul  dst: X_wa  srcs: [K_wa, K_wa] }
    reduce { op: sum  src: X_wa  dst: nk_wa  axis: 1  scope: lanes }
    copy { src_tile: sk[0 +: 64, 64 +: 64]  dst_tile: X_wa }
    elementwise { op: mul  dst: X_wa  srcs: [X_wa, X_wa] }
    reduce { op: sum  src: X_wa  dst: nk_wa  axis: 1  scope: lanes  accumulate: true }
    elementwise { op: add  dst: nk_wa  srcs: [nk_wa, 1e-06] }
    elementwise { op: rsqrt  dst: nk_wa  srcs: [nk_wa] }
    named_barrier_sync { barrier: "both" }
    elementwise { op: mul  dst: Y_wa  srcs: [Y_wa, nq_wa] }
    copy { src_tile: Y_wa  dst_tile: sq[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: K_wa  srcs: [K_wa, nk_wa] }
    copy { src_tile: K_wa  dst_tile: sk[0 +: 64, 0 +: 64] }
    copy { src_tile: skm@1[0 +: 64, 0 +: 64]  dst_tile: X_wa }
    elementwise { op: fma  dst: X_wa  srcs: [X_wa, sgate[0 +: 1, 0 +: 64], sgate[1 +: 1, 0 +: 64]] }
    elementwise { op: sigmoid  dst: X_wa  srcs: [X_wa] }
    elementwise { op: mul  dst: X_wa  srcs: [X_wa, sgate[2 +: 1, 0 +: 64]] }
    copy { src_tile: X_wa  dst_tile: sG[0 +: 64, 0 +: 64] }
    named_barrier_sync { barrier: "wg_wa" }
    scan { src: sG[0 +: 64, 0 +: 64]  dst: sG[0 +: 64, 0 +: 64]  scope: role }
    named_barrier_sync { barrier: "wg_wa" }
    copy { src_tile: sG[0 +: 64, 0 +: 64]  dst_tile: G_wa }
    elementwise { op: sub  dst: X_wa  srcs: [G_wa, sG[0 +: 1, 0 +: 64]] }
    elementwise { op: neg  dst: Y_wa  srcs: [X_wa] }
    elementwise { op: min  dst: Y_wa  srcs: [Y_wa, 80.0] }
    elementwise { op: exp  dst: Y_wa  srcs: [Y_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, Y_wa] }
    copy { src_tile: Y_wa  dst_tile: skm@0[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: mask_wa  srcs: [coord(0), 7.5] }
    elementwise { op: abs  dst: mask_wa  srcs: [mask_wa] }
    elementwise { op: lt  dst: mask_wa  srcs: [mask_wa, 8.0] }
    elementwise { op: min  dst: X_wa  srcs: [X_wa, 0.0] }
    elementwise { op: exp  dst: X_wa  srcs: [X_wa] }
    elementwise { op: mul  dst: X_wa  srcs: [X_wa, mask_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, X_wa] }
    copy { src_tile: Y_wa  dst_tile: skp@0[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y_wa  srcs: [sq[0 +: 64, 0 +: 64], X_wa] }
    copy { src_tile: Y_wa  dst_tile: sqp@0[0 +: 64, 0 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: skp@0  b: skm@0  acc: acc_wa  accumulate: 0 }
    elementwise { op: sub  dst: X_wa  srcs: [G_wa, sG[16 +: 1, 0 +: 64]] }
    elementwise { op: neg  dst: Y_wa  srcs: [X_wa] }
    elementwise { op: min  dst: Y_wa  srcs: [Y_wa, 80.0] }
    elementwise { op: exp  dst: Y_wa  srcs: [Y_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, Y_wa] }
    copy { src_tile: Y_wa  dst_tile: skm@1[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: mask_wa  srcs: [coord(0), 23.5] }
    elementwise { op: abs  dst: mask_wa  srcs: [mask_wa] }
    elementwise { op: lt  dst: mask_wa  srcs: [mask_wa, 8.0] }
    elementwise { op: min  dst: X_wa  srcs: [X_wa, 0.0] }
    elementwise { op: exp  dst: X_wa  srcs: [X_wa] }
    elementwise { op: mul  dst: X_wa  srcs: [X_wa, mask_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, X_wa] }
    copy { src_tile: Y_wa  dst_tile: skp@1[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y_wa  srcs: [sq[0 +: 64, 0 +: 64], X_wa] }
    copy { src_tile: Y_wa  dst_tile: sqp@1[0 +: 64, 0 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: skp@1  b: skm@1  acc: acc_wa  accumulate: 1 }
    mma_wait { pending: 1 }
    named_barrier_sync { barrier: "both" }
    elementwise { op: sub  dst: X_wa  srcs: [G_wa, sG[32 +: 1, 0 +: 64]] }
    elementwise { op: neg  dst: Y_wa  srcs: [X_wa] }
    elementwise { op: min  dst: Y_wa  srcs: [Y_wa, 80.0] }
    elementwise { op: exp  dst: Y_wa  srcs: [Y_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, Y_wa] }
    copy { src_tile: Y_wa  dst_tile: skm@0[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: mask_wa  srcs: [coord(0), 39.5] }
    elementwise { op: abs  dst: mask_wa  srcs: [mask_wa] }
    elementwise { op: lt  dst: mask_wa  srcs: [mask_wa, 8.0] }
    elementwise { op: min  dst: X_wa  srcs: [X_wa, 0.0] }
    elementwise { op: exp  dst: X_wa  srcs: [X_wa] }
    elementwise { op: mul  dst: X_wa  srcs: [X_wa, mask_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, X_wa] }
    copy { src_tile: Y_wa  dst_tile: skp@0[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y_wa  srcs: [sq[0 +: 64, 0 +: 64], X_wa] }
    copy { src_tile: Y_wa  dst_tile: sqp@0[0 +: 64, 0 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: skp@0  b: skm@0  acc: acc_wa  accumulate: 1 }
    mma_wait { pending: 1 }
    named_barrier_sync { barrier: "both" }
    elementwise { op: sub  dst: X_wa  srcs: [G_wa, sG[48 +: 1, 0 +: 64]] }
    elementwise { op: neg  dst: Y_wa  srcs: [X_wa] }
    elementwise { op: min  dst: Y_wa  srcs: [Y_wa, 80.0] }
    elementwise { op: exp  dst: Y_wa  srcs: [Y_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, Y_wa] }
    copy { src_tile: Y_wa  dst_tile: skm@1[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: mask_wa  srcs: [coord(0), 55.5] }
    elementwise { op: abs  dst: mask_wa  srcs: [mask_wa] }
    elementwise { op: lt  dst: mask_wa  srcs: [mask_wa, 8.0] }
    elementwise { op: min  dst: X_wa  srcs: [X_wa, 0.0] }
    elementwise { op: exp  dst: X_wa  srcs: [X_wa] }
    elementwise { op: mul  dst: X_wa  srcs: [X_wa, mask_wa] }
    elementwise { op: mul  dst: Y_wa  srcs: [K_wa, X_wa] }
    copy { src_tile: Y_wa  dst_tile: skp@1[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y_wa  srcs: [sq[0 +: 64, 0 +: 64], X_wa] }
    copy { src_tile: Y_wa  dst_tile: sqp@1[0 +: 64, 0 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: skp@1  b: skm@1  acc: acc_wa  accumulate: 1 }
    mma_wait {}
    named_barrier_sync { barrier: "both" }
    elementwise { op: mul  dst: acc_wa  srcs: [acc_wa, beta_wa] }
    copy { src_tile: acc_wa  dst_tile: sA }
    named_barrier_sync { barrier: "wg_wa" }
    tri_solve { a: sA  x: acc_wa  lower: true  unit_diagonal: true }
    copy { src_tile: acc_wa  dst_tile: sT }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: sT  b: skp@0[0 +: 64, 0 +: 64]  acc: out_wa  b_major: mn  accumulate: 0 }
    mma { kind: wgmma  a: sT  b: sqp@0[0 +: 64, 0 +: 64]  acc: acc_wa  b_major: mn  accumulate: 0 }
    mma_wait {}
    elementwise { op: neg  dst: out_wa  srcs: [out_wa] }
    copy { src_tile: out_wa  dst_global: wneg[block.z, block.y, block.x * 64, 0] }
    copy { src_tile: acc_wa  dst_global: ut[block.z, block.y, block.x * 64, 0] }
    elementwise { op: exp  dst: sgl  srcs: [sG[63 +: 1, 0 +: 128]] }
    named_barrier_sync { barrier: "wg_wa" }
    copy { src_tile: sgl  dst_global: gl[block.z, block.y, block.x, 0] }
  }
  role wb {
    kind: consumer
    warpgroups: 1
    registers: 232
    block_sync {}
    mbarrier_wait { barrier: full[0]  phase: 0 }
    copy { src_global: beta[block.z, block.y, block.x * 64]  dst_tile: beta_wb }
    elementwise { op: sigmoid  dst: beta_wb  srcs: [beta_wb] }
    copy { src_tile: sk[0 +: 64, 64 +: 64]  dst_tile: K_wb }
    copy { src_tile: sq[0 +: 64, 64 +: 64]  dst_tile: Y_wb }
    elementwise { op: mul  dst: X_wb  srcs: [Y_wb, Y_wb] }
    reduce { op: sum  src: X_wb  dst: nq_wb  axis: 1  scope: lanes }
    copy { src_tile: sq[0 +: 64, 0 +: 64]  dst_tile: X_wb }
    elementwise { op: mul  dst: X_wb  srcs: [X_wb, X_wb] }
    reduce { op: sum  src: X_wb  dst: nq_wb  axis: 1  scope: lanes  accumulate: true }
    elementwise { op: add  dst: nq_wb  srcs: [nq_wb, 1e-06] }
    elementwise { op: rsqrt  dst: nq_wb  srcs: [nq_wb] }
    elementwise { op: mul  dst: X_wb  srcs: [K_wb, K_wb] }
    reduce { op: sum  src: X_wb  dst: nk_wb  axis: 1  scope: lanes }
    copy { src_tile: sk[0 +: 64, 0 +: 64]  dst_tile: X_wb }
    elementwise { op: mul  dst: X_wb  srcs: [X_wb, X_wb] }
    reduce { op: sum  src: X_wb  dst: nk_wb  axis: 1  scope: lanes  accumulate: true }
    elementwise { op: add  dst: nk_wb  srcs: [nk_wb, 1e-06] }
    elementwise { op: rsqrt  dst: nk_wb  srcs: [nk_wb] }
    named_barrier_sync { barrier: "both" }
    elementwise { op: mul  dst: Y_wb  srcs: [Y_wb, nq_wb] }
    copy { src_tile: Y_wb  dst_tile: sq[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: K_wb  srcs: [K_wb, nk_wb] }
    copy { src_tile: K_wb  dst_tile: sk[0 +: 64, 64 +: 64] }
    copy { src_tile: skm@1[0 +: 64, 64 +: 64]  dst_tile: X_wb }
    elementwise {
      op: fma
      dst: X_wb
      srcs: [X_wb, sgate[0 +: 1, 64 +: 64], sgate[1 +: 1, 64 +: 64]]
    }
    elementwise { op: sigmoid  dst: X_wb  srcs: [X_wb] }
    elementwise { op: mul  dst: X_wb  srcs: [X_wb, sgate[2 +: 1, 64 +: 64]] }
    copy { src_tile: X_wb  dst_tile: sG[0 +: 64, 64 +: 64] }
    named_barrier_sync { barrier: "wg_wb" }
    scan { src: sG[0 +: 64, 64 +: 64]  dst: sG[0 +: 64, 64 +: 64]  scope: role }
    named_barrier_sync { barrier: "wg_wb" }
    copy { src_tile: sG[0 +: 64, 64 +: 64]  dst_tile: G_wb }
    elementwise { op: sub  dst: X_wb  srcs: [G_wb, sG[0 +: 1, 64 +: 64]] }
    elementwise { op: neg  dst: Y_wb  srcs: [X_wb] }
    elementwise { op: min  dst: Y_wb  srcs: [Y_wb, 80.0] }
    elementwise { op: exp  dst: Y_wb  srcs: [Y_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, Y_wb] }
    copy { src_tile: Y_wb  dst_tile: skm@0[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: mask_wb  srcs: [coord(0), 7.5] }
    elementwise { op: abs  dst: mask_wb  srcs: [mask_wb] }
    elementwise { op: lt  dst: mask_wb  srcs: [mask_wb, 8.0] }
    elementwise { op: min  dst: X_wb  srcs: [X_wb, 0.0] }
    elementwise { op: exp  dst: X_wb  srcs: [X_wb] }
    elementwise { op: mul  dst: X_wb  srcs: [X_wb, mask_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, X_wb] }
    copy { src_tile: Y_wb  dst_tile: skp@0[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y_wb  srcs: [sq[0 +: 64, 64 +: 64], X_wb] }
    copy { src_tile: Y_wb  dst_tile: sqp@0[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: sqp@0  b: skm@0  acc: acc_wb  accumulate: 0 }
    elementwise { op: sub  dst: X_wb  srcs: [G_wb, sG[16 +: 1, 64 +: 64]] }
    elementwise { op: neg  dst: Y_wb  srcs: [X_wb] }
    elementwise { op: min  dst: Y_wb  srcs: [Y_wb, 80.0] }
    elementwise { op: exp  dst: Y_wb  srcs: [Y_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, Y_wb] }
    copy { src_tile: Y_wb  dst_tile: skm@1[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: mask_wb  srcs: [coord(0), 23.5] }
    elementwise { op: abs  dst: mask_wb  srcs: [mask_wb] }
    elementwise { op: lt  dst: mask_wb  srcs: [mask_wb, 8.0] }
    elementwise { op: min  dst: X_wb  srcs: [X_wb, 0.0] }
    elementwise { op: exp  dst: X_wb  srcs: [X_wb] }
    elementwise { op: mul  dst: X_wb  srcs: [X_wb, mask_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, X_wb] }
    copy { src_tile: Y_wb  dst_tile: skp@1[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y_wb  srcs: [sq[0 +: 64, 64 +: 64], X_wb] }
    copy { src_tile: Y_wb  dst_tile: sqp@1[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: sqp@1  b: skm@1  acc: acc_wb  accumulate: 1 }
    mma_wait { pending: 1 }
    named_barrier_sync { barrier: "both" }
    elementwise { op: sub  dst: X_wb  srcs: [G_wb, sG[32 +: 1, 64 +: 64]] }
    elementwise { op: neg  dst: Y_wb  srcs: [X_wb] }
    elementwise { op: min  dst: Y_wb  srcs: [Y_wb, 80.0] }
    elementwise { op: exp  dst: Y_wb  srcs: [Y_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, Y_wb] }
    copy { src_tile: Y_wb  dst_tile: skm@0[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: mask_wb  srcs: [coord(0), 39.5] }
    elementwise { op: abs  dst: mask_wb  srcs: [mask_wb] }
    elementwise { op: lt  dst: mask_wb  srcs: [mask_wb, 8.0] }
    elementwise { op: min  dst: X_wb  srcs: [X_wb, 0.0] }
    elementwise { op: exp  dst: X_wb  srcs: [X_wb] }
    elementwise { op: mul  dst: X_wb  srcs: [X_wb, mask_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, X_wb] }
    copy { src_tile: Y_wb  dst_tile: skp@0[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y_wb  srcs: [sq[0 +: 64, 64 +: 64], X_wb] }
    copy { src_tile: Y_wb  dst_tile: sqp@0[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: sqp@0  b: skm@0  acc: acc_wb  accumulate: 1 }
    mma_wait { pending: 1 }
    named_barrier_sync { barrier: "both" }
    elementwise { op: sub  dst: X_wb  srcs: [G_wb, sG[48 +: 1, 64 +: 64]] }
    elementwise { op: neg  dst: Y_wb  srcs: [X_wb] }
    elementwise { op: min  dst: Y_wb  srcs: [Y_wb, 80.0] }
    elementwise { op: exp  dst: Y_wb  srcs: [Y_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, Y_wb] }
    copy { src_tile: Y_wb  dst_tile: skm@1[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: mask_wb  srcs: [coord(0), 55.5] }
    elementwise { op: abs  dst: mask_wb  srcs: [mask_wb] }
    elementwise { op: lt  dst: mask_wb  srcs: [mask_wb, 8.0] }
    elementwise { op: min  dst: X_wb  srcs: [X_wb, 0.0] }
    elementwise { op: exp  dst: X_wb  srcs: [X_wb] }
    elementwise { op: mul  dst: X_wb  srcs: [X_wb, mask_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, X_wb] }
    copy { src_tile: Y_wb  dst_tile: skp@1[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y_wb  srcs: [sq[0 +: 64, 64 +: 64], X_wb] }
    copy { src_tile: Y_wb  dst_tile: sqp@1[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: sqp@1  b: skm@1  acc: acc_wb  accumulate: 1 }
    mma_wait {}
    named_barrier_sync { barrier: "both" }
    elementwise { op: le  dst: X_wb  srcs: [coord(1), coord(0)] }
    elementwise { op: mul  dst: acc_wb  srcs: [acc_wb, X_wb] }
    elementwise { op: mul  dst: acc_wb  srcs: [acc_wb, 0.08838834764831845] }
    copy { src_tile: acc_wb  dst_global: pm[block.z, block.y, block.x * 64, 0] }
    elementwise { op: exp  dst: X_wb  srcs: [G_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, X_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [Y_wb, beta_wb] }
    copy { src_tile: Y_wb  dst_tile: skp@0[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y_wb  srcs: [sq[0 +: 64, 64 +: 64], X_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [Y_wb, 0.08838834764831845] }
    copy { src_tile: Y_wb  dst_global: qg[block.z, block.y, block.x * 64, 64] }
    elementwise { op: sub  dst: X_wb  srcs: [sG[63 +: 1, 64 +: 64], G_wb] }
    elementwise { op: exp  dst: X_wb  srcs: [X_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [K_wb, X_wb] }
    copy { src_tile: Y_wb  dst_global: kd[block.z, block.y, block.x * 64, 64] }
    elementwise { op: mul  dst: Y_wb  srcs: [sv[0 +: 64, 64 +: 64], beta_wb] }
    copy { src_tile: Y_wb  dst_tile: sqp@0[0 +: 64, 64 +: 64] }
    elementwise { op: exp  dst: X_wb  srcs: [sG[0 +: 64, 0 +: 64]] }
    elementwise { op: mul  dst: Y_wb  srcs: [sk[0 +: 64, 0 +: 64], X_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [Y_wb, beta_wb] }
    copy { src_tile: Y_wb  dst_tile: skp@0[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y_wb  srcs: [sq[0 +: 64, 0 +: 64], X_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [Y_wb, 0.08838834764831845] }
    copy { src_tile: Y_wb  dst_global: qg[block.z, block.y, block.x * 64, 0] }
    elementwise { op: sub  dst: X_wb  srcs: [sG[63 +: 1, 0 +: 64], sG[0 +: 64, 0 +: 64]] }
    elementwise { op: exp  dst: X_wb  srcs: [X_wb] }
    elementwise { op: mul  dst: Y_wb  srcs: [sk[0 +: 64, 0 +: 64], X_wb] }
    copy { src_tile: Y_wb  dst_global: kd[block.z, block.y, block.x * 64, 0] }
    elementwise { op: mul  dst: Y_wb  srcs: [sv[0 +: 64, 0 +: 64], beta_wb] }
    copy { src_tile: Y_wb  dst_tile: sqp@0[0 +: 64, 0 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "both" }
    mma { kind: wgmma  a: sT  b: skp@0[0 +: 64, 64 +: 64]  acc: out_wb  b_major: mn  accumulate: 0 }
    mma { kind: wgmma  a: sT  b: sqp@0[0 +: 64, 64 +: 64]  acc: acc_wb  b_major: mn  accumulate: 0 }
    mma_wait {}
    elementwise { op: neg  dst: out_wb  srcs: [out_wb] }
    copy { src_tile: out_wb  dst_global: wneg[block.z, block.y, block.x * 64, 64] }
    copy { src_tile: acc_wb  dst_global: ut[block.z, block.y, block.x * 64, 64] }
  }
}
