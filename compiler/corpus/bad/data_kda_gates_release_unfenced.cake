# expect: CAKE-DATA-011 at kernel.roles[1].body[5].loop.body[9].elementwise
# defect: the chain reads the chunk's gate tile with ld.shared and releases it to the TMA producer with no fence.proxy.async
kernel kda_chain_sm90a {
  contract {
    math: "per (b, h) and value slice, from St = h0t[b, h] (S^T) and for each chunk c: U = ut + wneg S, o[b, c 64 + i, h V + v] = (qg S + pm U)[i, v], St = St diag(gl[b, h, c]) + U^T kd; ht[b, h] = final St"
    reference: "kernels.kda.reference.forward"
    symbol B { min: 1  max: 65536  doc: "batch (sequences)" }
    symbol H { min: 1  max: 1024  doc: "heads" }
    symbol T { min: 64  max: 4194304  doc: "tokens per sequence, padded to whole chunks" }
    constraint { expr: T % 64 == 0  doc: "T comes in whole 64-token chunks (the API pads)" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_90a
  launch { grid: [H * 2, B] }
  param wneg {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "-T (beta k e^G) per chunk"
  }
  param ut {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "T (beta v) per chunk"
  }
  param pm {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 64]
    access: read
    align_bytes: 16
    doc: "causal intra-chunk scores qg (k e^-G)^T"
  }
  param qg {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "scale q e^G"
  }
  param kd {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "k e^(G_last - G)"
  }
  param gl {
    kind: tensor
    dtype: f32
    shape: [B, H, T / 64, 128]
    access: read
    align_bytes: 16
    doc: "e^G_last per chunk"
  }
  param h0t {
    kind: tensor
    dtype: f32
    shape: [B, H, 128, 128]
    access: read
    align_bytes: 16
    doc: "initial state transposed, S^T [V, K]"
  }
  param o {
    kind: tensor
    dtype: bf16
    shape: [B, T, H * 128]
    access: write
    align_bytes: 16
    doc: "outputs [B, T, H, V] as [B, T, H V]"
  }
  param ht {
    kind: tensor
    dtype: f32
    shape: [B, H, 128, 128]
    access: write
    align_bytes: 16
    doc: "final state transposed, S^T [V, K]"
  }
  region sw { space: shared  dtype: bf16  shape: [64, 128]  stages: 2  swizzle: 128b }
  region su0 { space: shared  dtype: bf16  shape: [64, 64]  stages: 2  swizzle: 128b }
  region sp { space: shared  dtype: bf16  shape: [64, 64]  stages: 2  swizzle: 128b }
  region sqg { space: shared  dtype: bf16  shape: [64, 128]  stages: 2  swizzle: 128b }
  region skd { space: shared  dtype: bf16  shape: [64, 128]  stages: 2  swizzle: 128b }
  region sgl { space: shared  dtype: f32  shape: [128]  stages: 2 }
  region sS { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sU { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region St { space: register  dtype: f32  shape: [64, 128]  layout: wgmma_acc  owner: "mma" }
  region U { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region O { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  barrier full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 66048 }
  barrier empty { kind: mbarrier  count: 2  arrivals: 128 }
  barrier wg { kind: named  count: 1  arrivals: 128 }
  pipeline ring {
    stages: 2
    full: "full"
    empty: "empty"
    regions: ["sw", "su0", "sp", "sqg", "skd", "sgl"]
    producer: "load"
    consumers: ["mma"]
  }
  role load {
    kind: producer
    warps: 1
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
      cond: elected
      then_body {
        loop c in 0 .. T / 64 {
          mbarrier_wait { barrier: empty@round(c) }
          mbarrier_expect_tx { barrier: full@round(c)  bytes: 66048 }
          tma_load {
            src: wneg[block.y, block.x / 2, c * 64, 0]
            dst: sw@(c % 2)
            barrier: full@round(c)
          }
          tma_load {
            src: ut[block.y, block.x / 2, c * 64, block.x % 2 * 64]
            dst: su0@(c % 2)
            barrier: full@round(c)
          }
          tma_load {
            src: pm[block.y, block.x / 2, c * 64, 0]
            dst: sp@(c % 2)
            barrier: full@round(c)
          }
          tma_load {
            src: qg[block.y, block.x / 2, c * 64, 0]
            dst: sqg@(c % 2)
            barrier: full@round(c)
          }
          tma_load {
            src: kd[block.y, block.x / 2, c * 64, 0]
            dst: skd@(c % 2)
            barrier: full@round(c)
          }
          tma_load { src: gl[block.y, block.x / 2, c, 0]  dst: sgl@(c % 2)  barrier: full@round(c) }
        }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 1
    block_sync {}
    copy { src_global: h0t[block.y, block.x / 2, block.x % 2 * 64, 0]  dst_tile: St }
    copy { src_tile: St  dst_tile: sS }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "wg" }
    loop c in 0 .. T / 64 {
      mbarrier_wait { barrier: full@round(c) }
      copy { src_tile: su0@(c % 2)  dst_tile: U }
      mma { kind: wgmma  a: sw@(c % 2)  b: sS  acc: U  accumulate: 1 }
      mma { kind: wgmma  a: sqg@(c % 2)  b: sS  acc: O  accumulate: 0 }
      mma_wait {}
      copy { src_tile: U  dst_tile: sU }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "wg" }
      mma { kind: wgmma  a: sp@(c % 2)  b: sU  acc: O  b_major: mn  accumulate: 1 }
      elementwise { op: mul  dst: St  srcs: [St, sgl@(c % 2)] }
      mma { kind: wgmma  a: sU  b: skd@(c % 2)  acc: St  a_major: mn  b_major: mn  accumulate: 1 }
      mma_wait {}
      mbarrier_arrive { barrier: empty@round(c) }
      copy { src_tile: O  dst_global: o[block.y, c * 64, block.x * 64] }
      copy { src_tile: St  dst_tile: sS }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "wg" }
    }
    copy { src_tile: St  dst_global: ht[block.y, block.x / 2, block.x % 2 * 64, 0] }
  }
}
