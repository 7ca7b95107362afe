# expect: CAKE-DATA-007 at kernel.roles[1].body[3].loop.body[60].copy
# defect: every chunk stores its outputs at token 0: chunks overwrite each other
kernel kda_chunk_fwd_sm90a {
  contract {
    math: "per (b, h), S_0 = 0 (K x V) and for each t: S_t = (I - beta[b, h, t] k_t k_t^T) diag(exp(g[b, h, t, :])) S_{t-1} + beta[b, h, t] k_t v_t^T; o[b, h, t, :] = S_t^T (K^-0.5 q_t); q, k unit-norm rows, g in [-2, 0], beta in (0, 1)"
    reference: "kernels.kda.reference.forward"
    symbol B { min: 1  max: 65536  doc: "batch" }
    symbol H { min: 1  max: 1024  doc: "heads" }
    symbol T { min: 64  max: 4194304  doc: "tokens" }
    symbol K { min: 64  max: 64  value: 64  doc: "key dim (the kernel is specialized to it)" }
    symbol V { min: 64  max: 64  value: 64  doc: "value dim (the kernel is specialized to it)" }
    constraint { expr: T % 64 == 0  doc: "T comes in whole 64-token chunks" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_90a
  launch { grid: [H, B] }
  param q {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, K]
    access: read
    align_bytes: 16
    doc: "queries, L2-normalised per token"
  }
  param k {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, K]
    access: read
    align_bytes: 16
    doc: "keys, L2-normalised per token"
  }
  param v {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, V]
    access: read
    align_bytes: 16
    doc: "values"
  }
  param g {
    kind: tensor
    dtype: f32
    shape: [B, H, T, K]
    access: read
    align_bytes: 16
    doc: "log-space per-channel decay gates"
  }
  param beta {
    kind: tensor
    dtype: f32
    shape: [B, H, T]
    access: read
    align_bytes: 16
    doc: "delta-rule write strengths"
  }
  param o {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, V]
    access: write
    align_bytes: 16
    doc: "outputs"
  }
  region sq { space: shared  dtype: bf16  shape: [64, 64]  stages: 2  swizzle: 128b }
  region sk { space: shared  dtype: bf16  shape: [64, 64]  stages: 2  swizzle: 128b }
  region sv { space: shared  dtype: bf16  shape: [64, 64]  stages: 2  swizzle: 128b }
  region sg { space: shared  dtype: f32  shape: [64, 64]  stages: 2 }
  region sG { space: shared  dtype: f32  shape: [64, 64]  stages: 1 }
  region skp { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sqp { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region skm { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region skbg { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sqg { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region skd { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region svb { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sA { space: shared  dtype: f32  shape: [64, 64]  stages: 1 }
  region sT { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sP { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sW { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sU { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sS { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region X { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region Y { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region St { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region acc1 { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region acc2 { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region beta_r { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "mma" }
  barrier full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 40960 }
  barrier empty { kind: mbarrier  count: 2  arrivals: 128 }
  barrier wg { kind: named  count: 1  arrivals: 128 }
  pipeline ring {
    stages: 2
    full: "full"
    empty: "empty"
    regions: ["sq", "sk", "sv", "sg"]
    producer: "load"
    consumers: ["mma"]
  }
  role load {
    kind: producer
    warpgroups: 1
    registers: 40
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: warp == 0 && elected
      then_body {
        loop c in 0 .. T / 64 {
          mbarrier_wait { barrier: empty@round(c) }
          mbarrier_expect_tx { barrier: full@round(c)  bytes: 40960 }
          tma_load { src: q[block.y, block.x, c * 64, 0]  dst: sq@(c % 2)  barrier: full@round(c) }
          tma_load { src: k[block.y, block.x, c * 64, 0]  dst: sk@(c % 2)  barrier: full@round(c) }
          tma_load { src: v[block.y, block.x, c * 64, 0]  dst: sv@(c % 2)  barrier: full@round(c) }
          tma_load { src: g[block.y, block.x, c * 64, 0]  dst: sg@(c % 2)  barrier: full@round(c) }
        }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 1
    registers: 232
    block_sync {}
    fill { dst: St }
    copy { src_tile: St  dst_tile: sS }
    loop c in 0 .. T / 64 {
      mbarrier_wait { barrier: full@round(c) }
      copy { src_global: beta[block.y, block.x, c * 64]  dst_tile: beta_r }
      scan { src: sg@(c % 2)  dst: sG  scope: warpgroup }
      named_barrier_sync { barrier: "wg" }
      elementwise { op: sub  dst: X  srcs: [sG, sG[32 +: 1, 0 +: 64]] }
      elementwise { op: exp  dst: X  srcs: [X] }
      elementwise { op: mul  dst: Y  srcs: [sk@(c % 2), X] }
      copy { src_tile: Y  dst_tile: skp }
      elementwise { op: mul  dst: Y  srcs: [sq@(c % 2), X] }
      elementwise { op: mul  dst: Y  srcs: [Y, 0.125] }
      copy { src_tile: Y  dst_tile: sqp }
      elementwise { op: sub  dst: X  srcs: [sG[32 +: 1, 0 +: 64], sG] }
      elementwise { op: exp  dst: X  srcs: [X] }
      elementwise { op: mul  dst: Y  srcs: [sk@(c % 2), X] }
      copy { src_tile: Y  dst_tile: skm }
      elementwise { op: exp  dst: X  srcs: [sG] }
      elementwise { op: mul  dst: Y  srcs: [sk@(c % 2), X] }
      elementwise { op: mul  dst: Y  srcs: [Y, beta_r] }
      copy { src_tile: Y  dst_tile: skbg }
      elementwise { op: mul  dst: Y  srcs: [sq@(c % 2), X] }
      elementwise { op: mul  dst: Y  srcs: [Y, 0.125] }
      copy { src_tile: Y  dst_tile: sqg }
      elementwise { op: sub  dst: X  srcs: [sG[63 +: 1, 0 +: 64], sG] }
      elementwise { op: exp  dst: X  srcs: [X] }
      elementwise { op: mul  dst: Y  srcs: [sk@(c % 2), X] }
      copy { src_tile: Y  dst_tile: skd }
      elementwise { op: mul  dst: acc1  srcs: [sv@(c % 2), beta_r] }
      copy { src_tile: acc1  dst_tile: svb }
      fence { kind: proxy_async }
      mbarrier_arrive { barrier: empty@round(c) }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "wg" }
      mma { kind: wgmma  a: skp  b: skm  acc: acc1  accumulate: 0 }
      mma { kind: wgmma  a: sqp  b: skm  acc: acc2  accumulate: 0 }
      mma_wait {}
      elementwise { op: mul  dst: acc1  srcs: [acc1, beta_r] }
      copy { src_tile: acc1  dst_tile: sA }
      elementwise { op: le  dst: acc1  srcs: [coord(1), coord(0)] }
      elementwise { op: mul  dst: acc2  srcs: [acc2, acc1] }
      copy { src_tile: acc2  dst_tile: sP }
      named_barrier_sync { barrier: "wg" }
      tri_solve { a: sA  x: acc1  lower: true  unit_diagonal: true }
      copy { src_tile: acc1  dst_tile: sT }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "wg" }
      mma { kind: wgmma  a: sT  b: skbg  acc: Y  b_major: mn  accumulate: 0 }
      mma { kind: wgmma  a: sT  b: svb  acc: acc2  b_major: mn  accumulate: 0 }
      mma_wait {}
      elementwise { op: neg  dst: Y  srcs: [Y] }
      copy { src_tile: Y  dst_tile: sW }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "wg" }
      mma { kind: wgmma  a: sW  b: sS  acc: acc2  accumulate: 1 }
      mma_wait {}
      copy { src_tile: acc2  dst_tile: sU }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "wg" }
      mma { kind: wgmma  a: sqg  b: sS  acc: acc1  accumulate: 0 }
      mma { kind: wgmma  a: sP  b: sU  acc: acc1  b_major: mn  accumulate: 1 }
      mma_wait {}
      copy { src_tile: acc1  dst_global: o[block.y, block.x, 0, 0] }
      elementwise { op: exp  dst: X  srcs: [sG[63 +: 1, 0 +: 64]] }
      elementwise { op: mul  dst: St  srcs: [St, X] }
      mma { kind: wgmma  a: sU  b: skd  acc: St  a_major: mn  b_major: mn  accumulate: 1 }
      mma_wait {}
      copy { src_tile: St  dst_tile: sS }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "wg" }
    }
  }
}
