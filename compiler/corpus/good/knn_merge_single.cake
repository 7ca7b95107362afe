kernel knn_merge {
  contract {
    math: "(dist[b, i, :], idx[b, i, :]) = the KO best j of ||q[b, i] - x[b, j]||^2 (smallest) among the entries of part_i[b, :, i, :] ranked by part_v, rescored exactly in f32 and sorted, ties to the smaller j"
    reference: "kernels.knn.reference.merge_lists"
    symbol B { min: 1  max: 65536  doc: "independent problems (batch)" }
    symbol Q { min: 1  max: 67108864  doc: "queries per problem" }
    symbol M { min: 1  max: 2130706432  doc: "database rows per problem" }
    symbol D { min: 1  max: 4096  doc: "features (the rescore loops over them at run time)" }
    symbol P { min: 1  max: 1  doc: "partial lists per query: one" }
    symbol k {
      min: 10
      max: 10
      value: 10
      doc: "entries per partial list (the kernel is specialized to it)"
    }
    symbol KO {
      min: 1
      max: 10
      doc: "neighbours written per query: the first KO of the k best (a kernel serves every k up to its lists' length)"
    }
    metric: recall
    tolerance: 0.99
  }
  target: sm_90a
  launch { grid: [ceil_div(Q, 4), B] }
  param q {
    kind: tensor
    dtype: bf16
    shape: [B, Q, D]
    access: read
    align_bytes: 16
    doc: "queries"
  }
  param x {
    kind: tensor
    dtype: bf16
    shape: [B, M, D]
    access: read
    align_bytes: 16
    doc: "database rows"
  }
  param part_v {
    kind: tensor
    dtype: f32
    shape: [B, P, Q, k]
    access: read
    align_bytes: 16
    doc: "partial lists' ranking scores, best first"
  }
  param part_i {
    kind: tensor
    dtype: i32
    shape: [B, P, Q, k]
    access: read
    align_bytes: 16
    doc: "partial lists' database rows (-1: empty entry)"
  }
  param dist {
    kind: tensor
    dtype: f32
    shape: [B, Q, KO]
    access: write
    align_bytes: 16
    doc: "exact scores of the neighbours, best first"
  }
  param idx {
    kind: tensor
    dtype: i32
    shape: [B, Q, KO]
    access: write
    align_bytes: 16
    doc: "database rows of the neighbours"
  }
  region best_v { space: register  dtype: f32  shape: [10]  layout: per_thread  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [10]  layout: per_thread  owner: "main" }
  role main {
    kind: compute
    warps: 4
    branch {
      cond: block.x * 4 + warp < Q
      then_body {
        copy { src_global: part_v[block.y, 0, block.x * 4 + warp, 0]  dst_tile: best_v }
        copy { src_global: part_i[block.y, 0, block.x * 4 + warp, 0]  dst_tile: best_i }
        rescore {
          values: best_v
          indices: best_i
          query: q[block.y, block.x * 4 + warp, 0]
          database: x[block.y, 0, 0]
          metric: l2
          scope: warp
        }
        top_k { src: best_v  k: 10  values: best_v  indices: best_i  scope: thread }
        branch {
          cond: lane == 0
          then_body {
            copy { src_tile: best_v  dst_global: dist[block.y, block.x * 4 + warp, 0] }
            copy { src_tile: best_i  dst_global: idx[block.y, block.x * 4 + warp, 0] }
          }
        }
      }
    }
  }
}
