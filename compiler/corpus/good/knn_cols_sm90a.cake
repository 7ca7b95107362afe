kernel knn_cols_sm90a {
  contract {
    math: "(part_v[b, p, i, :], part_i[b, p, i, :]) = the k smallest of x_sq[b, j] - 2 q.x over the database rows j of partial list p of query i, best first, ties to the smaller j; x_sq = ||x[b, j]||^2, x_inv = 1 / ||x[b, j]||"
    reference: "kernels.knn.reference.partial_lists"
    symbol B { min: 1  max: 65536  doc: "independent problems (batch)" }
    symbol Q { min: 1  max: 67108864  doc: "queries per problem" }
    symbol M { min: 1  max: 2130706432  doc: "database rows per problem" }
    symbol D { min: 8  max: 128  doc: "features; tiles are 128 wide and TMA zero-fills the rest" }
    symbol S { min: 1  max: 65536  doc: "database ranges (splits)" }
    symbol T { min: 1  max: 16777216  doc: "tiles per range" }
    symbol k {
      min: 10
      max: 10
      value: 10
      doc: "entries per list (the kernel is specialized to it)"
    }
    symbol MP {
      min: 4
      max: 2130706432
      doc: "length of col's rows: M rounded up to a multiple of 4"
    }
    symbol P {
      min: 8
      max: 1048576
      doc: "partial lists of the workspace (lists past S * 8 are not written: they keep the host's fill, the worst score and index -1, for the merge)"
    }
    constraint { expr: D % 8 == 0  doc: "rows of q and x start 16-byte aligned (TMA)" }
    constraint { expr: MP % 4 == 0  doc: "rows of col start 16-byte aligned (TMA)" }
    constraint { expr: MP >= M && MP < M + 4  doc: "MP is M rounded up to a multiple of 4" }
    constraint { expr: P >= S * 8  doc: "the workspace holds the 8 partial lists of every range" }
    constraint { expr: S * T * 128 >= M  doc: "the ranges cover the database" }
    metric: recall
    tolerance: 0.99
  }
  target: sm_90a
  launch { min_blocks_per_sm: 1  persistent: true }
  param q {
    kind: tensor
    dtype: bf16
    shape: [B, Q, D]
    access: read
    align_bytes: 16
    doc: "queries, features contiguous"
  }
  param x {
    kind: tensor
    dtype: bf16
    shape: [B, M, D]
    access: read
    align_bytes: 16
    doc: "database rows, features contiguous"
  }
  param col {
    kind: tensor
    dtype: f32
    shape: [B, MP]
    access: read
    align_bytes: 16
    doc: "per database row: ||x||^2 (l2) or 1 / ||x|| (cos); 0 past M"
  }
  param part_v {
    kind: tensor
    dtype: f32
    shape: [B, P, Q, k]
    access: read_write
    align_bytes: 16
    doc: "partial lists' scores, best first"
  }
  param part_i {
    kind: tensor
    dtype: i32
    shape: [B, P, Q, k]
    access: read_write
    align_bytes: 16
    doc: "partial lists' database rows"
  }
  region sQ { space: shared  dtype: bf16  shape: [16, 128]  stages: 1  swizzle: 128b }
  region sX { space: shared  dtype: bf16  shape: [128, 128]  stages: 4  swizzle: 128b }
  region sCol { space: shared  dtype: f32  shape: [128]  stages: 4 }
  region acc { space: register  dtype: f32  shape: [64, 16]  layout: wgmma_acc  owner: "mma" }
  region rows { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "mma" }
  region best_v { space: register  dtype: f32  shape: [16, 10]  layout: wgmma_cols  owner: "mma" }
  region best_i { space: register  dtype: i32  shape: [16, 10]  layout: wgmma_cols  owner: "mma" }
  barrier q_full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 4096 }
  barrier q_empty { kind: mbarrier  count: 1  arrivals: 2 }
  barrier full { kind: mbarrier  count: 4  arrivals: 1  tx_bytes: 33280 }
  barrier empty { kind: mbarrier  count: 4  arrivals: 2 }
  barrier wg_done { kind: named  count: 2  arrivals: 128 }
  pipeline q_ring {
    stages: 1
    full: "q_full"
    empty: "q_empty"
    regions: ["sQ"]
    producer: "load"
    consumers: ["mma"]
  }
  pipeline x_ring {
    stages: 4
    full: "full"
    empty: "empty"
    regions: ["sX", "sCol"]
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
        mbarrier_init { barrier: "q_full" }
        mbarrier_init { barrier: "q_empty" }
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: warp == 0 && elected
      then_body {
        loop item in 0 .. B * ceil_div(Q, 16) * S {
          kind: persistent
          counter: "it"
          mbarrier_wait { barrier: q_empty@round(it) }
          mbarrier_expect_tx { barrier: q_full@round(it)  bytes: 4096 }
          tma_load {
            src: q[item / (ceil_div(Q, 16) * S), item / S % ceil_div(Q, 16) * 16, 0]
            dst: sQ
            barrier: q_full@round(it)
          }
          loop j in 0 .. T {
            mbarrier_wait { barrier: empty@round(it * T + j) }
            mbarrier_expect_tx { barrier: full@round(it * T + j)  bytes: 33280 }
            tma_load {
              src: x[item / (ceil_div(Q, 16) * S), (item % S * T + j) * 128, 0]
              dst: sX@((it * T + j) % 4)
              barrier: full@round(it * T + j)
            }
            tma_load {
              src: col[item / (ceil_div(Q, 16) * S), (item % S * T + j) * 128]
              dst: sCol@((it * T + j) % 4)
              barrier: full@round(it * T + j)
            }
          }
        }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 2
    registers: 232
    block_sync {}
    loop item in 0 .. B * ceil_div(Q, 16) * S {
      kind: persistent
      counter: "it"
      fill { dst: best_v  value: inf }
      fill { dst: best_i  value: -1.0 }
      mbarrier_wait { barrier: q_full@round(it) }
      loop j in 0 .. T {
        mbarrier_wait { barrier: full@round(it * T + j) }
        mma {
          kind: wgmma
          a: sX@((it * T + j) % 4)[warpgroup * 64 +: 64, 0 +: 128]
          b: sQ
          acc: acc
          accumulate: 0
        }
        mma_wait {}
        branch {
          cond: j == T - 1 && (warp % 4 == 0 && elected)
          then_body {
            mbarrier_arrive { barrier: q_empty@round(it) }
          }
        }
        copy { src_tile: sCol@((it * T + j) % 4)[warpgroup * 64 +: 64]  dst_tile: rows }
        fence { kind: proxy_async }
        named_barrier_sync { barrier: "wg_done"  index: warpgroup }
        branch {
          cond: warp % 4 == 0 && elected
          then_body {
            mbarrier_arrive { barrier: empty@round(it * T + j) }
          }
        }
        elementwise { op: fma  dst: acc  srcs: [acc, -2.0, rows] }
        top_k {
          src: acc
          k: 10
          index_base: (item % S * T + j) * 128 + warpgroup * 64
          values: best_v
          indices: best_i
          scope: thread
          index_limit: M
          vote: true
        }
      }
      top_k { src: best_v  k: 10  values: best_v  indices: best_i  scope: lanes }
      copy {
        src_tile: best_v
        dst_global: part_v[item / (ceil_div(Q, 16) * S), (item % S * 2 + warpgroup) * 4 + warp % 4, item / S % ceil_div(Q, 16) * 16, 0]
      }
      copy {
        src_tile: best_i
        dst_global: part_i[item / (ceil_div(Q, 16) * S), (item % S * 2 + warpgroup) * 4 + warp % 4, item / S % ceil_div(Q, 16) * 16, 0]
      }
    }
  }
}
