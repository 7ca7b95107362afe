kernel kda_intra_sm90a {
  contract {
    math: "per (b, h, chunk c of 64 tokens) with G = cumsum(g) in the chunk, A = strict_lower(beta (k e^G)(k e^-G)^T), T = (I + A)^-1: wneg = -T (beta k e^G), ut = T (beta v), pm = lower(scale q e^G (k e^-G)^T), qg = scale q e^G, kd = k e^(G_last - G), gl = e^G_last"
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
    dtype: f32
    shape: [B * T, H * 128]
    access: read
    align_bytes: 16
    doc: "log-space decay gates [B, T, H, K] as [B T, H K]"
  }
  param beta {
    kind: tensor
    dtype: f32
    shape: [B, H, T]
    access: read
    align_bytes: 16
    doc: "write strengths, head-first"
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
  region sg { space: shared  dtype: f32  shape: [64, 128]  stages: 1 }
  region sG { space: shared  dtype: f32  shape: [64, 128]  stages: 1 }
  region skp { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sqp { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region skm { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region skbg { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region svb { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sA { space: shared  dtype: f32  shape: [64, 64]  stages: 1 }
  region sT { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sgl { space: shared  dtype: f32  shape: [1, 128]  stages: 1 }
  region X { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region Y { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region acc_a { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region acc_p { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region beta_r { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "mma" }
  barrier full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 81920 }
  barrier wg { kind: named  count: 1  arrivals: 128 }
  role load {
    kind: producer
    warps: 1
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "full" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: elected
      then_body {
        mbarrier_expect_tx { barrier: full[0]  bytes: 81920 }
        tma_load { src: q[block.z * T + block.x * 64, block.y * 128]  dst: sq  barrier: full[0] }
        tma_load { src: k[block.z * T + block.x * 64, block.y * 128]  dst: sk  barrier: full[0] }
        tma_load { src: v[block.z * T + block.x * 64, block.y * 128]  dst: sv  barrier: full[0] }
        tma_load { src: g[block.z * T + block.x * 64, block.y * 128]  dst: sg  barrier: full[0] }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 1
    block_sync {}
    mbarrier_wait { barrier: full[0]  phase: 0 }
    copy { src_global: beta[block.z, block.y, block.x * 64]  dst_tile: beta_r }
    scan { src: sg  dst: sG  scope: role }
    named_barrier_sync { barrier: "wg" }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 0 +: 64], sG[0 +: 1, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: lt  dst: Y  srcs: [coord(0), int(16)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 0 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 1, 0 +: 64], sG[0 +: 64, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 64 +: 64], sG[0 +: 1, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: lt  dst: Y  srcs: [coord(0), int(16)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 64 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 1, 64 +: 64], sG[0 +: 64, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "wg" }
    mma { kind: wgmma  a: skp  b: skm  acc: acc_a  accumulate: 0 }
    mma { kind: wgmma  a: sqp  b: skm  acc: acc_p  accumulate: 0 }
    mma_wait {}
    named_barrier_sync { barrier: "wg" }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 0 +: 64], sG[16 +: 1, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: lt  dst: Y  srcs: [coord(0), int(32)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: le  dst: Y  srcs: [int(16), coord(0)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 0 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[16 +: 1, 0 +: 64], sG[0 +: 64, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 64 +: 64], sG[16 +: 1, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: lt  dst: Y  srcs: [coord(0), int(32)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: le  dst: Y  srcs: [int(16), coord(0)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 64 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[16 +: 1, 64 +: 64], sG[0 +: 64, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "wg" }
    mma { kind: wgmma  a: skp  b: skm  acc: acc_a  accumulate: 1 }
    mma { kind: wgmma  a: sqp  b: skm  acc: acc_p  accumulate: 1 }
    mma_wait {}
    named_barrier_sync { barrier: "wg" }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 0 +: 64], sG[32 +: 1, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: lt  dst: Y  srcs: [coord(0), int(48)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: le  dst: Y  srcs: [int(32), coord(0)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 0 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[32 +: 1, 0 +: 64], sG[0 +: 64, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 64 +: 64], sG[32 +: 1, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: lt  dst: Y  srcs: [coord(0), int(48)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: le  dst: Y  srcs: [int(32), coord(0)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 64 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[32 +: 1, 64 +: 64], sG[0 +: 64, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "wg" }
    mma { kind: wgmma  a: skp  b: skm  acc: acc_a  accumulate: 1 }
    mma { kind: wgmma  a: sqp  b: skm  acc: acc_p  accumulate: 1 }
    mma_wait {}
    named_barrier_sync { barrier: "wg" }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 0 +: 64], sG[48 +: 1, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: le  dst: Y  srcs: [int(48), coord(0)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 0 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 0 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[48 +: 1, 0 +: 64], sG[0 +: 64, 0 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 0 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[0 +: 64, 64 +: 64], sG[48 +: 1, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 0.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: le  dst: Y  srcs: [int(48), coord(0)] }
    elementwise { op: mul  dst: X  srcs: [X, Y] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skp[0 +: 64, 64 +: 64] }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 64 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_tile: sqp[0 +: 64, 64 +: 64] }
    elementwise { op: sub  dst: X  srcs: [sG[48 +: 1, 64 +: 64], sG[0 +: 64, 64 +: 64]] }
    elementwise { op: min  dst: X  srcs: [X, 80.0] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_tile: skm[0 +: 64, 64 +: 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "wg" }
    mma { kind: wgmma  a: skp  b: skm  acc: acc_a  accumulate: 1 }
    mma { kind: wgmma  a: sqp  b: skm  acc: acc_p  accumulate: 1 }
    mma_wait {}
    named_barrier_sync { barrier: "wg" }
    elementwise { op: mul  dst: acc_a  srcs: [acc_a, beta_r] }
    copy { src_tile: acc_a  dst_tile: sA }
    elementwise { op: le  dst: acc_a  srcs: [coord(1), coord(0)] }
    elementwise { op: mul  dst: acc_p  srcs: [acc_p, acc_a] }
    copy { src_tile: acc_p  dst_global: pm[block.z, block.y, block.x * 64, 0] }
    named_barrier_sync { barrier: "wg" }
    tri_solve { a: sA  x: acc_a  lower: true  unit_diagonal: true }
    copy { src_tile: acc_a  dst_tile: sT }
    elementwise { op: exp  dst: X  srcs: [sG[0 +: 64, 0 +: 64]] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, beta_r] }
    copy { src_tile: Y  dst_tile: skbg }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 0 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_global: qg[block.z, block.y, block.x * 64, 0] }
    elementwise { op: mul  dst: Y  srcs: [sv[0 +: 64, 0 +: 64], beta_r] }
    copy { src_tile: Y  dst_tile: svb }
    elementwise { op: sub  dst: X  srcs: [sG[63 +: 1, 0 +: 64], sG[0 +: 64, 0 +: 64]] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 0 +: 64], X] }
    copy { src_tile: Y  dst_global: kd[block.z, block.y, block.x * 64, 0] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "wg" }
    mma { kind: wgmma  a: sT  b: skbg  acc: acc_p  b_major: mn  accumulate: 0 }
    mma { kind: wgmma  a: sT  b: svb  acc: acc_a  b_major: mn  accumulate: 0 }
    mma_wait {}
    elementwise { op: neg  dst: acc_p  srcs: [acc_p] }
    copy { src_tile: acc_p  dst_global: wneg[block.z, block.y, block.x * 64, 0] }
    copy { src_tile: acc_a  dst_global: ut[block.z, block.y, block.x * 64, 0] }
    named_barrier_sync { barrier: "wg" }
    elementwise { op: exp  dst: X  srcs: [sG[0 +: 64, 64 +: 64]] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, beta_r] }
    copy { src_tile: Y  dst_tile: skbg }
    elementwise { op: mul  dst: Y  srcs: [sq[0 +: 64, 64 +: 64], X] }
    elementwise { op: mul  dst: Y  srcs: [Y, 0.08838834764831845] }
    copy { src_tile: Y  dst_global: qg[block.z, block.y, block.x * 64, 64] }
    elementwise { op: mul  dst: Y  srcs: [sv[0 +: 64, 64 +: 64], beta_r] }
    copy { src_tile: Y  dst_tile: svb }
    elementwise { op: sub  dst: X  srcs: [sG[63 +: 1, 64 +: 64], sG[0 +: 64, 64 +: 64]] }
    elementwise { op: exp  dst: X  srcs: [X] }
    elementwise { op: mul  dst: Y  srcs: [sk[0 +: 64, 64 +: 64], X] }
    copy { src_tile: Y  dst_global: kd[block.z, block.y, block.x * 64, 64] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "wg" }
    mma { kind: wgmma  a: sT  b: skbg  acc: acc_p  b_major: mn  accumulate: 0 }
    mma { kind: wgmma  a: sT  b: svb  acc: acc_a  b_major: mn  accumulate: 0 }
    mma_wait {}
    elementwise { op: neg  dst: acc_p  srcs: [acc_p] }
    copy { src_tile: acc_p  dst_global: wneg[block.z, block.y, block.x * 64, 64] }
    copy { src_tile: acc_a  dst_global: ut[block.z, block.y, block.x * 64, 64] }
    named_barrier_sync { barrier: "wg" }
    elementwise { op: exp  dst: sgl  srcs: [sG[63 +: 1, 0 +: 128]] }
    named_barrier_sync { barrier: "wg" }
    copy { src_tile: sgl  dst_global: gl[block.z, block.y, block.x, 0] }
  }
}
