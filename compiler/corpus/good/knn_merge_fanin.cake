kernel knn_merge_fanin {
  contract {
    math: "(out_v[b, g, i, :], out_i[b, g, i, :]) = the k best entries of the partial lists part_v/part_i[b, 32 g .. 32 g + 31, i, :] by their ranking scores, best first, ties to the smaller index"
    reference: "kernels.knn.reference.fan_in_lists"
    symbol B { min: 1  max: 65536  doc: "independent problems (batch)" }
    symbol Q { min: 1  max: 67108864  doc: "queries per problem" }
    symbol P { min: 32  max: 1048576  doc: "partial lists per query, padded to whole warps" }
    symbol G {
      min: 1
      max: 32768
      doc: "merged lists per query the workspace holds (lists past P / 32 keep the host's fill, the worst score and index -1)"
    }
    symbol k {
      min: 10
      max: 10
      value: 10
      doc: "entries per list (the kernel is specialized to it)"
    }
    constraint {
      expr: P % 32 == 0
      doc: "each warp takes 32 partial lists (padding lists hold the worst score, index -1)"
    }
    constraint { expr: G * 32 >= P  doc: "the output holds a list per group of 32 partial lists" }
    metric: recall
    tolerance: 0.99
  }
  target: sm_90a
  launch { grid: [ceil_div(Q, 4), P / 32, B] }
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
  param out_v {
    kind: tensor
    dtype: f32
    shape: [B, G, Q, k]
    access: read_write
    align_bytes: 16
    doc: "merged lists' ranking scores"
  }
  param out_i {
    kind: tensor
    dtype: i32
    shape: [B, G, Q, k]
    access: read_write
    align_bytes: 16
    doc: "merged lists' database rows"
  }
  region best_v { space: register  dtype: f32  shape: [10]  layout: per_thread  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [10]  layout: per_thread  owner: "main" }
  role main {
    kind: compute
    warps: 4
    branch {
      cond: block.x * 4 + warp < Q
      then_body {
        copy {
          src_global: part_v[block.z, block.y * 32 + lane, block.x * 4 + warp, 0]
          dst_tile: best_v
        }
        copy {
          src_global: part_i[block.z, block.y * 32 + lane, block.x * 4 + warp, 0]
          dst_tile: best_i
        }
        top_k { src: best_v  k: 10  values: best_v  indices: best_i  scope: warp }
        branch {
          cond: lane == 0
          then_body {
            copy { src_tile: best_v  dst_global: out_v[block.z, block.y, block.x * 4 + warp, 0] }
            copy { src_tile: best_i  dst_global: out_i[block.z, block.y, block.x * 4 + warp, 0] }
          }
        }
      }
    }
  }
}
