kernel knn_filter_sm100a {
  contract {
    math: "count[b, i] += the number of database rows j whose score x_sq[b, j] - 2 q.x is smaller than bound[b, i]; each such (score, j) is in cand_v/cand_i[b, i, :] when count[b, i] <= C (in no order)"
    reference: "kernels.knn.reference.collected"
    symbol B { min: 1  max: 65536  doc: "independent problems (batch)" }
    symbol Q { min: 1  max: 67108864  doc: "queries per problem" }
    symbol M { min: 1  max: 2130706432  doc: "database rows per problem" }
    symbol D { min: 8  max: 128  doc: "features; tiles are 128 wide and TMA zero-fills the rest" }
    symbol S { min: 1  max: 65536  doc: "database ranges (splits)" }
    symbol T { min: 1  max: 16777216  doc: "tiles per range" }
    symbol MP {
      min: 4
      max: 2130706432
      doc: "length of col's rows: M rounded up to a multiple of 4"
    }
    symbol C { min: 1  max: 1048576  doc: "candidate slots per query" }
    constraint { expr: D % 8 == 0  doc: "rows of q and x start 16-byte aligned (TMA)" }
    constraint { expr: MP % 4 == 0  doc: "rows of col start 16-byte aligned (TMA)" }
    constraint { expr: MP >= M && MP < M + 4  doc: "MP is M rounded up to a multiple of 4" }
    constraint { expr: S * T * 128 >= M  doc: "the ranges cover the database" }
    metric: recall
    tolerance: 0.99
  }
  target: sm_100a
  launch { grid: [ceil_div(Q, 128), S, B] }
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
  param cand_v {
    kind: tensor
    dtype: f32
    shape: [B, Q, C]
    access: write
    align_bytes: 16
    doc: "appended candidates' ranking scores"
  }
  param cand_i {
    kind: tensor
    dtype: i32
    shape: [B, Q, C]
    access: write
    align_bytes: 16
    doc: "appended candidates' database rows"
  }
  param count {
    kind: tensor
    dtype: i32
    shape: [B, Q]
    access: read_write
    align_bytes: 16
    doc: "candidates appended per query (the host zeroes it; past C only the count grows)"
  }
  param bound {
    kind: tensor
    dtype: f32
    shape: [B, Q]
    access: read
    align_bytes: 16
    doc: "per query: the score a candidate must beat (a bound on the k-th)"
  }
  region sQ { space: shared  dtype: bf16  shape: [128, 128]  stages: 1  swizzle: 128b }
  region sX { space: shared  dtype: bf16  shape: [128, 128]  stages: 3  swizzle: 128b }
  region tacc { space: tensor  dtype: f32  shape: [128, 128]  owner: "mma" }
  region score {
    space: register
    dtype: f32
    shape: [128, 32]
    layout: row_per_thread
    owner: "mma"
  }
  region cvec { space: register  dtype: f32  shape: [32]  layout: per_thread  owner: "mma" }
  region start { space: register  dtype: f32  shape: [128]  layout: row_per_thread  owner: "mma" }
  barrier q_full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 32768 }
  barrier full { kind: mbarrier  count: 3  arrivals: 1  tx_bytes: 32768 }
  barrier empty { kind: mbarrier  count: 3  arrivals: 1 }
  barrier acc_full { kind: mbarrier  count: 1  arrivals: 1 }
  barrier wg { kind: named  count: 1  arrivals: 128 }
  pipeline ring {
    stages: 3
    full: "full"
    empty: "empty"
    regions: ["sX"]
    producer: "load"
    consumers: ["mma"]
  }
  role mma {
    kind: consumer
    warpgroups: 1
    block_sync {}
    copy { src_global: bound[block.z, block.x * 128]  dst_tile: start }
    branch {
      cond: warp == 0 && elected
      then_body {
        mbarrier_wait { barrier: q_full[0]  phase: 0 }
      }
    }
    loop j in 0 .. T {
      branch {
        cond: warp == 0 && elected
        then_body {
          mbarrier_wait { barrier: full@round(j) }
          mma { kind: tcgen05  a: sQ  b: sX@(j % 3)  acc: tacc  accumulate: 0 }
          mma_commit { barrier: empty@round(j) }
          mma_commit { barrier: acc_full[0] }
        }
      }
      named_barrier_sync { barrier: "wg" }
      mbarrier_wait { barrier: acc_full[0]  phase: j % 2 }
      loop e in 0 .. 4 {
        tmem_load { src: tacc[0 +: 128, e * 32 +: 32]  dst: score }
        copy { src_global: col[block.z, (block.y * T + j) * 128 + e * 32]  dst_tile: cvec }
        elementwise { op: fma  dst: score  srcs: [score, -2.0, cvec] }
        top_k_collect {
          src: score
          axis: 1
          index_base: (block.y * T + j) * 128 + e * 32
          index_limit: M
          bound: start
          values: cand_v[block.z, block.x * 128, 0]
          indices: cand_i[block.z, block.x * 128, 0]
          count: count[block.z, block.x * 128]
        }
      }
      named_barrier_sync { barrier: "wg" }
    }
  }
  role load {
    kind: producer
    warps: 1
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "q_full" }
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        mbarrier_init { barrier: "acc_full" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: elected
      then_body {
        mbarrier_expect_tx { barrier: q_full[0]  bytes: 32768 }
        tma_load { src: q[block.z, block.x * 128, 0]  dst: sQ  barrier: q_full[0] }
        loop j in 0 .. T {
          mbarrier_wait { barrier: empty@round(j) }
          mbarrier_expect_tx { barrier: full@round(j)  bytes: 32768 }
          tma_load {
            src: x[block.z, (block.y * T + j) * 128, 0]
            dst: sX@(j % 3)
            barrier: full@round(j)
          }
        }
      }
    }
  }
}
