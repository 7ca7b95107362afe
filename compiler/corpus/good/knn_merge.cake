kernel knn_merge {
  contract {
    math: "(dist[b, i, :], idx[b, i, :]) = the KO best j of ||q[b, i] - x[b, j]||^2 (smallest) among the entries of part_i[b, :, i, :] ranked by part_v, rescored exactly in f32 and sorted, ties to the smaller j"
    reference: "kernels.knn.reference.merge_lists"
    symbol B { min: 1  max: 65536  doc: "independent problems (batch)" }
    symbol Q { min: 1  max: 67108864  doc: "queries per problem" }
    symbol M { min: 1  max: 2130706432  doc: "database rows per problem" }
    symbol D { min: 1  max: 4096  doc: "features (the rescore loops over them at run time)" }
    symbol P { min: 32  max: 1048576  doc: "partial lists per query, padded to whole warps" }
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
    constraint {
      expr: P % 32 == 0
      doc: "lanes take whole rounds of partial lists (padding lists hold the worst score, index -1)"
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
  region cand_v { space: register  dtype: f32  shape: [10]  layout: per_thread  owner: "main" }
  region cand_i { space: register  dtype: i32  shape: [10]  layout: per_thread  owner: "main" }
  role main {
    kind: compute
    warps: 4
    branch {
      cond: block.x * 4 + warp < Q
      then_body {
        copy { src_global: part_v[block.y, lane, block.x * 4 + warp, 0]  dst_tile: best_v }
        copy { src_global: part_i[block.y, lane, block.x * 4 + warp, 0]  dst_tile: best_i }
        loop c in 1 .. P / 32 {
          unroll: 4
          copy {
            src_global: part_v[block.y, c * 32 + lane, block.x * 4 + warp, 0]
            dst_tile: cand_v
          }
          copy {
            src_global: part_i[block.y, c * 32 + lane, block.x * 4 + warp, 0]
            dst_tile: cand_i
          }
          top_k {
            src: cand_v
            k: 10
            index_base: 0
            values: best_v
            indices: best_i
            scope: thread
            src_indices: cand_i
            vote: true
          }
        }
        top_k { src: best_v  k: 10  values: best_v  indices: best_i  scope: warp }
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
