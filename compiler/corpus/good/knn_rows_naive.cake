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
  region sQ { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sX { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sCol { space: shared  dtype: f32  shape: [64]  stages: 1 }
  region acc { space: register  dtype: f32  shape: [16, 64]  layout: mma_acc  owner: "main" }
  region best_v { space: register  dtype: f32  shape: [16, 10]  layout: mma_rows  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [16, 10]  layout: mma_rows  owner: "main" }
  role main {
    kind: compute
    warpgroups: 1
    fill { dst: best_v  value: inf }
    fill { dst: best_i  value: -1.0 }
    copy { src_global: q[block.z, block.x * 64, 0]  dst_tile: sQ }
    loop j in 0 .. T {
      copy { src_global: x[block.z, (block.y * T + j) * 64, 0]  dst_tile: sX }
      copy { src_global: col[block.z, (block.y * T + j) * 64]  dst_tile: sCol }
      block_sync {}
      mma { kind: mma_sync  a: sQ[warp * 16 +: 16, 0 +: 128]  b: sX  acc: acc  accumulate: 0 }
      elementwise { op: fma  dst: acc  srcs: [acc, -2.0, sCol] }
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
      block_sync {}
    }
    top_k { src: best_v  k: 10  values: best_v  indices: best_i  scope: lanes }
    copy { src_tile: best_v  dst_global: part_v[block.z, block.y, block.x * 64 + warp * 16, 0] }
    copy { src_tile: best_i  dst_global: part_i[block.z, block.y, block.x * 64 + warp * 16, 0] }
  }
}
