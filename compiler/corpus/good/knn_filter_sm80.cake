kernel knn_filter_sm80 {
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
    constraint { expr: S * T * 64 >= M  doc: "the ranges cover the database" }
    metric: recall
    tolerance: 0.99
  }
  target: sm_80
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
  region sX { space: shared  dtype: bf16  shape: [64, 128]  stages: 3  swizzle: 128b }
  region sCol { space: shared  dtype: f32  shape: [64]  stages: 3 }
  region acc { space: register  dtype: f32  shape: [16, 64]  layout: mma_acc  owner: "main" }
  region start { space: register  dtype: f32  shape: [16]  layout: mma_rows  owner: "main" }
  role main {
    kind: compute
    warps: 8
    copy { src_global: bound[block.z, block.x * 128 + warp * 16]  dst_tile: start }
    cp_async { src: q[block.z, block.x * 128, 0]  dst: sQ  vector_bytes: 16 }
    loop j_fill in 0 .. 2 {
      branch {
        cond: j_fill < T
        then_body {
          cp_async {
            src: x[block.z, (block.y * T + j_fill) * 64, 0]
            dst: sX@(j_fill % 3)
            vector_bytes: 16
          }
          cp_async {
            src: col[block.z, (block.y * T + j_fill) * 64]
            dst: sCol@(j_fill % 3)
            vector_bytes: 16
          }
        }
      }
    }
    loop j in 0 .. T {
      branch {
        cond: j + 1 < T
        then_body {
          cp_async_wait { pending: 2 }
        }
        else_body {
          cp_async_wait {}
        }
      }
      block_sync {}
      branch {
        cond: j + 2 < T
        then_body {
          cp_async {
            src: x[block.z, (block.y * T + (j + 2)) * 64, 0]
            dst: sX@((j + 2) % 3)
            vector_bytes: 16
          }
          cp_async {
            src: col[block.z, (block.y * T + (j + 2)) * 64]
            dst: sCol@((j + 2) % 3)
            vector_bytes: 16
          }
        }
      }
      mma {
        kind: mma_sync
        a: sQ[warp * 16 +: 16, 0 +: 128]
        b: sX@(j % 3)
        acc: acc
        accumulate: 0
      }
      elementwise { op: fma  dst: acc  srcs: [acc, -2.0, sCol@(j % 3)] }
      top_k_collect {
        src: acc
        axis: 1
        index_base: (block.y * T + j) * 64
        index_limit: M
        bound: start
        values: cand_v[block.z, block.x * 128 + warp * 16, 0]
        indices: cand_i[block.z, block.x * 128 + warp * 16, 0]
        count: count[block.z, block.x * 128 + warp * 16]
      }
    }
  }
}
