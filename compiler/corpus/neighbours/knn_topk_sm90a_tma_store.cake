# neighbour: the epilogue stages the top-k lists through shared memory and one thread stores them by TMA
kernel knn_topk_sm90a_tma_store {
  contract {
    math: "(dist[i, :], idx[i, :]) = the k smallest of q_sq[i] + x_sq[j] - 2 sum_d q[i, d] x[j, d] over j, ascending, ties to the smaller j; q_sq, x_sq are the rows' squared norms"
    reference: "kernels.knn.reference.knn"
    symbol Q { min: 128  max: 16777216  doc: "queries" }
    symbol M { min: 128  max: 268435456  doc: "database rows" }
    symbol D { min: 128  max: 128  value: 128  doc: "features (the kernel is specialized to it)" }
    symbol k {
      min: 16
      max: 16
      value: 16
      doc: "neighbours per query (the kernel is specialized to it)"
    }
    constraint { expr: Q % 128 == 0  doc: "Q comes in whole 128-query blocks" }
    constraint { expr: M % 128 == 0  doc: "M comes in whole 128-row tiles" }
    metric: recall
    tolerance: 0.99
  }
  target: sm_90a
  launch { grid: [Q / 128] }
  param q {
    kind: tensor
    dtype: bf16
    shape: [Q, D]
    access: read
    align_bytes: 16
    doc: "queries, features contiguous"
  }
  param x {
    kind: tensor
    dtype: bf16
    shape: [M, D]
    access: read
    align_bytes: 16
    doc: "database, features contiguous"
  }
  param q_sq {
    kind: tensor
    dtype: f32
    shape: [Q]
    access: read
    align_bytes: 16
    doc: "squared query norms, from q as stored"
  }
  param x_sq {
    kind: tensor
    dtype: f32
    shape: [M]
    access: read
    align_bytes: 16
    doc: "squared database norms, from x as stored"
  }
  param dist {
    kind: tensor
    dtype: f32
    shape: [Q, k]
    access: write
    align_bytes: 16
    doc: "squared distances, ascending"
  }
  param idx {
    kind: tensor
    dtype: i32
    shape: [Q, k]
    access: write
    align_bytes: 16
    doc: "database rows of the neighbours"
  }
  region best_v { space: register  dtype: f32  shape: [64, 16]  layout: wgmma_rows  owner: "mma" }
  region best_i { space: register  dtype: i32  shape: [64, 16]  layout: wgmma_rows  owner: "mma" }
  region qs { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "mma" }
  region sRows { space: shared  dtype: bf16  shape: [128, 128]  stages: 1  swizzle: 128b }
  region sCols { space: shared  dtype: bf16  shape: [128, 128]  stages: 3  swizzle: 128b }
  region sColSq { space: shared  dtype: f32  shape: [128]  stages: 3 }
  region score { space: register  dtype: f32  shape: [64, 128]  layout: wgmma_acc  owner: "mma" }
  region sD { space: shared  dtype: f32  shape: [128, 16] }
  region sI { space: shared  dtype: i32  shape: [128, 16] }
  barrier rows_full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 32768 }
  barrier full { kind: mbarrier  count: 3  arrivals: 1  tx_bytes: 33280 }
  barrier empty { kind: mbarrier  count: 3  arrivals: 256 }
  barrier epilogue { kind: named  arrivals: 256 }
  pipeline ring {
    stages: 3
    full: "full"
    empty: "empty"
    regions: ["sCols", "sColSq"]
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
        mbarrier_init { barrier: "rows_full" }
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: warp == 0 && elected
      then_body {
        mbarrier_expect_tx { barrier: rows_full[0]  bytes: 32768 }
        tma_load { src: q[block.x * 128, 0]  dst: sRows  barrier: rows_full[0] }
        loop t in 0 .. M / 128 {
          mbarrier_wait { barrier: empty@round(t) }
          mbarrier_expect_tx { barrier: full@round(t)  bytes: 33280 }
          tma_load { src: x[t * 128, 0]  dst: sCols@(t % 3)  barrier: full@round(t) }
          tma_load { src: x_sq[t * 128]  dst: sColSq@(t % 3)  barrier: full@round(t) }
        }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 2
    registers: 232
    block_sync {}
    fill { dst: best_v  value: inf }
    fill { dst: best_i }
    mbarrier_wait { barrier: rows_full[0]  phase: 0 }
    loop t in 0 .. M / 128 {
      mbarrier_wait { barrier: full@round(t) }
      mma {
        kind: wgmma
        a: sRows[warpgroup * 64 +: 64, 0 +: 128]
        b: sCols@(t % 3)
        acc: score
        accumulate: 0
      }
      mma_wait {}
      elementwise { op: fma  dst: score  srcs: [score, -2.0, sColSq@(t % 3)] }
      fence { kind: proxy_async }
      mbarrier_arrive { barrier: empty@round(t) }
      top_k {
        src: score
        axis: 1
        k: 16
        index_base: t * 128
        values: best_v
        indices: best_i
        scope: thread
      }
    }
    top_k { src: best_v  k: 16  values: best_v  indices: best_i  scope: lanes }
    copy { src_global: q_sq[block.x * 128 + warpgroup * 64]  dst_tile: qs }
    elementwise { op: add  dst: best_v  srcs: [best_v, qs] }
    copy { src_tile: best_v  dst_tile: sD[warpgroup * 64 +: 64, 0 +: 16] }
    copy { src_tile: best_i  dst_tile: sI[warpgroup * 64 +: 64, 0 +: 16] }
    fence { kind: proxy_async }
    named_barrier_sync { barrier: "epilogue" }
    branch {
      cond: thread == 0
      then_body {
        tma_store { src: sD  dst: dist[block.x * 128, 0] }
        tma_store { src: sI  dst: idx[block.x * 128, 0] }
        bulk_wait {}
      }
    }
  }
}
