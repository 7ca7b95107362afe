# best kernel of CAKE agent run h200-knn-search (measured time 1276.192 us)
# genome: knn_rows_naive(block_n=64) + loads_to_tma(stages=2), mma_to_wgmma, swizzle:sQ(mode=64b, region=sQ), unroll:j(factor=2, var=j)
# lineage (candidate, move, author, measured time):
#   #1 seed (seed) 28440.032 us
#   #2 loads_to_tma_2 (search) 1947.872 us
#   #14 mma_to_wgmma (search) 1334.800 us
#   #58 stream_ring_shallower (search) 1446.848 us
#   #118 unroll_main_2 (search) 1442.432 us
#   #164 swizzle_resident_64b (search) 1420.320 us
#   #203 drop_rewrite (search) 1276.192 us
kernel knn_rows_naive {
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
      min: 1
      max: 1048576
      doc: "partial lists of the workspace (lists past S * 1 are not written: they keep the host's fill, the worst score and index -1, for the merge)"
    }
    constraint { expr: D % 8 == 0  doc: "rows of q and x start 16-byte aligned (TMA)" }
    constraint { expr: MP % 4 == 0  doc: "rows of col start 16-byte aligned (TMA)" }
    constraint { expr: MP >= M && MP < M + 4  doc: "MP is M rounded up to a multiple of 4" }
    constraint { expr: P >= S * 1  doc: "the workspace holds the 1 partial lists of every range" }
    constraint { expr: S * T * 64 >= M  doc: "the ranges cover the database" }
    metric: recall
    tolerance: 0.99
  }
  target: sm_90a
  launch { grid: [ceil_div(Q, 64), S, B] }
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
  region sQ { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 64b }
  region sX { space: shared  dtype: bf16  shape: [64, 128]  stages: 2  swizzle: 128b }
  region sCol { space: shared  dtype: f32  shape: [64]  stages: 2 }
  region acc { space: register  dtype: f32  shape: [64, 64]  layout: wgmma_acc  owner: "main" }
  region best_v { space: register  dtype: f32  shape: [64, 10]  layout: wgmma_rows  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [64, 10]  layout: wgmma_rows  owner: "main" }
  barrier sQ_full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 16384 }
  barrier full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 16640 }
  barrier empty { kind: mbarrier  count: 2  arrivals: 128 }
  pipeline ring {
    stages: 2
    full: "full"
    empty: "empty"
    regions: ["sX", "sCol"]
    producer: "main"
    consumers: ["main"]
  }
  role main {
    kind: compute
    warpgroups: 1
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "sQ_full" }
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    fill { dst: best_v  value: inf }
    fill { dst: best_i  value: -1.0 }
    branch {
      cond: thread == 0
      then_body {
        mbarrier_expect_tx { barrier: sQ_full[0]  bytes: 16384 }
        tma_load { src: q[block.z, block.x * 64, 0]  dst: sQ  barrier: sQ_full[0] }
      }
    }
    loop j_fill in 0 .. 1 {
      branch {
        cond: j_fill < T
        then_body {
          branch {
            cond: thread == 0
            then_body {
              mbarrier_wait { barrier: empty@round(j_fill) }
              mbarrier_expect_tx { barrier: full@round(j_fill)  bytes: 16640 }
              tma_load {
                src: x[block.z, (block.y * T + j_fill) * 64, 0]
                dst: sX@(j_fill % 2)
                barrier: full@round(j_fill)
              }
              tma_load {
                src: col[block.z, (block.y * T + j_fill) * 64]
                dst: sCol@(j_fill % 2)
                barrier: full@round(j_fill)
              }
            }
          }
        }
      }
    }
    mbarrier_wait { barrier: sQ_full[0]  phase: 0 }
    loop j in 0 .. T {
      unroll: 2
      branch {
        cond: thread == 0 && j + 1 < T
        then_body {
          mbarrier_wait { barrier: empty@round(j + 1) }
          mbarrier_expect_tx { barrier: full@round(j + 1)  bytes: 16640 }
          tma_load {
            src: x[block.z, (block.y * T + (j + 1)) * 64, 0]
            dst: sX@((j + 1) % 2)
            barrier: full@round(j + 1)
          }
          tma_load {
            src: col[block.z, (block.y * T + (j + 1)) * 64]
            dst: sCol@((j + 1) % 2)
            barrier: full@round(j + 1)
          }
        }
      }
      mbarrier_wait { barrier: full@round(j) }
      mma {
        kind: wgmma
        a: sQ[warpgroup * 64 +: 64, 0 +: 128]
        b: sX@(j % 2)
        acc: acc
        accumulate: 0
      }
      mma_wait {}
      elementwise { op: fma  dst: acc  srcs: [acc, -2.0, sCol@(j % 2)] }
      top_k {
        src: acc
        axis: 1
        k: 10
        index_base: (block.y * T + j) * 64
        values: best_v
        indices: best_i
        scope: thread
        index_limit: M
      }
      mbarrier_arrive { barrier: empty@round(j) }
    }
    top_k { src: best_v  k: 10  values: best_v  indices: best_i  scope: lanes }
    copy {
      src_tile: best_v
      dst_global: part_v[block.z, block.y, block.x * 64 + warpgroup * 64, 0]
    }
    copy {
      src_tile: best_i
      dst_global: part_i[block.z, block.y, block.x * 64 + warpgroup * 64, 0]
    }
  }
}
