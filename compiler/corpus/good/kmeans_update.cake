kernel kmeans_update {
  contract {
    math: "sums[b, k, :] += sum over n with labels[b, n] = k of x[b, n, :]; counts[b, k, 0] += |{n : labels[b, n] = k}|"
    reference: "kernels.kmeans.reference.accumulate"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol K { min: 1  max: 1048576  doc: "centroids per problem" }
    symbol D { min: 128  max: 128  value: 128  doc: "features (the kernel is specialized to it)" }
    symbol N { min: 128  max: 67108864  doc: "points per problem" }
    constraint { expr: N % 128 == 0  doc: "N comes in whole 128-point blocks" }
    metric: rel_l2
    tolerance: 1e-05
  }
  target: sm_90a
  launch { grid: [N / 128, B] }
  param x {
    kind: tensor
    dtype: bf16
    shape: [B, N, D]
    access: read
    align_bytes: 16
    doc: "points"
  }
  param labels {
    kind: tensor
    dtype: i32
    shape: [B, N]
    access: read
    align_bytes: 16
    doc: "cluster of each point, in [0, K)"
  }
  param sums {
    kind: tensor
    dtype: f32
    shape: [B, K, D]
    access: read_write
    align_bytes: 16
    doc: "per-cluster feature sums, added to"
  }
  param counts {
    kind: tensor
    dtype: i32
    shape: [B, K, 1]
    access: read_write
    align_bytes: 16
    doc: "per-cluster sizes, added to"
  }
  region lab { space: register  dtype: i32  shape: [128]  layout: row_per_thread  owner: "main" }
  region one { space: register  dtype: i32  shape: [128, 1]  layout: row_per_thread  owner: "main" }
  region xs { space: register  dtype: f32  shape: [128, 32]  layout: row_per_thread  owner: "main" }
  role main {
    kind: compute
    warps: 4
    copy { src_global: labels[block.y, block.x * 128]  dst_tile: lab }
    fill { dst: one  value: 1.0 }
    atomic {
      op: add
      src: one
      dst: counts[block.y, 0, 0]
      index: lab
      index_axis: 1
      aggregation: warp
    }
    loop j in 0 .. 4 {
      copy { src_global: x[block.y, block.x * 128, j * 32]  dst_tile: xs }
      atomic {
        op: add
        src: xs
        dst: sums[block.y, 0, j * 32]
        index: lab
        index_axis: 1
        aggregation: warp
      }
    }
  }
}
