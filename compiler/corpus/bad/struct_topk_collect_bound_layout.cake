# expect: CAKE-STRUCT-025 at kernel.roles[1].body[1].loop.body[2].loop.body[8].top_k_collect.bound
# defect: the filter's bound is the score tile itself, not one value per row of the lists it keeps
kernel knn_filter_sm90a {
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
    constraint {
      expr: T % 1 == 0
      doc: "each interleave class takes the same number of tiles of a range"
    }
    constraint { expr: S * T * 64 >= M  doc: "the ranges cover the database" }
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
  region sQ { space: shared  dtype: bf16  shape: [256, 128]  stages: 2  swizzle: 128b }
  region sX { space: shared  dtype: bf16  shape: [64, 128]  stages: 5  swizzle: 128b }
  region sCol { space: shared  dtype: f32  shape: [64]  stages: 5 }
  region acc { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "mma" }
  region start { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "mma" }
  barrier q_full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 65536 }
  barrier q_empty { kind: mbarrier  count: 2  arrivals: 4 }
  barrier full { kind: mbarrier  count: 5  arrivals: 1  tx_bytes: 16640 }
  barrier empty { kind: mbarrier  count: 5  arrivals: 4 }
  barrier wg_done { kind: named  count: 4  arrivals: 128 }
  pipeline q_ring {
    stages: 2
    full: "q_full"
    empty: "q_empty"
    regions: ["sQ"]
    producer: "load"
    consumers: ["mma"]
  }
  pipeline x_ring {
    stages: 5
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
        loop item in 0 .. B * ceil_div(Q, 256) * S {
          kind: persistent
          counter: "it"
          mbarrier_wait { barrier: q_empty@round(it) }
          mbarrier_expect_tx { barrier: q_full@round(it)  bytes: 65536 }
          tma_load {
            src: q[item / (ceil_div(Q, 256) * S), item / S % ceil_div(Q, 256) * 256, 0]
            dst: sQ@(it % 2)
            barrier: q_full@round(it)
          }
          loop j in 0 .. T {
            mbarrier_wait { barrier: empty@round(it * T + j) }
            mbarrier_expect_tx { barrier: full@round(it * T + j)  bytes: 16640 }
            tma_load {
              src: x[item / (ceil_div(Q, 256) * S), (item % S * T + j) * 64, 0]
              dst: sX@((it * T + j) % 5)
              barrier: full@round(it * T + j)
            }
            tma_load {
              src: col[item / (ceil_div(Q, 256) * S), (item % S * T + j) * 64]
              dst: sCol@((it * T + j) % 5)
              barrier: full@round(it * T + j)
            }
          }
        }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 4
    registers: 104
    block_sync {}
    loop item in 0 .. B * ceil_div(Q, 256) * S {
      kind: persistent
      counter: "it"
      copy {
        src_global: bound[item / (ceil_div(Q, 256) * S), item / S % ceil_div(Q, 256) * 256 + warpgroup * 64]
        dst_tile: start
      }
      mbarrier_wait { barrier: q_full@round(it) }
      loop jj in 0 .. T {
        mbarrier_wait { barrier: full@round(it * T + jj) }
        mma {
          kind: wgmma
          a: sQ@(it % 2)[warpgroup * 64 +: 64, 0 +: 128]
          b: sX@((it * T + jj) % 5)
          acc: acc
          accumulate: 0
        }
        mma_wait {}
        branch {
          cond: jj == T - 1 && (warp % 4 == 0 && elected)
          then_body {
            mbarrier_arrive { barrier: q_empty@round(it) }
          }
        }
        elementwise { op: fma  dst: acc  srcs: [acc, -2.0, sCol@((it * T + jj) % 5)] }
        fence { kind: proxy_async }
        named_barrier_sync { barrier: "wg_done"  index: warpgroup }
        branch {
          cond: warp % 4 == 0 && elected
          then_body {
            mbarrier_arrive { barrier: empty@round(it * T + jj) }
          }
        }
        top_k_collect {
          src: acc
          axis: 1
          index_base: (item % S * T + jj) * 64
          index_limit: M
          bound: acc
          values: cand_v[item / (ceil_div(Q, 256) * S), item / S % ceil_div(Q, 256) * 256 + warpgroup * 64, 0]
          indices: cand_i[item / (ceil_div(Q, 256) * S), item / S % ceil_div(Q, 256) * 256 + warpgroup * 64, 0]
          count: count[item / (ceil_div(Q, 256) * S), item / S % ceil_div(Q, 256) * 256 + warpgroup * 64]
        }
      }
    }
  }
}
