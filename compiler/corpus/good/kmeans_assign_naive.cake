kernel kmeans_assign_naive {
  contract {
    math: "labels[b, n] = argmin_k (c_sq[b, k] - 2 sum_d x[b, n, d] c[b, k, d]), ties to the smallest k; c_sq[b, k] = sum_d c[b, k, d]^2"
    reference: "kernels.kmeans.reference.assign"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol N { min: 64  max: 67108864  doc: "points per problem" }
    symbol K { min: 128  max: 1048576  doc: "centroids per problem" }
    symbol D { min: 128  max: 128  value: 128  doc: "features (the kernel is specialized to it)" }
    constraint { expr: N % 64 == 0  doc: "N comes in whole 64-point blocks" }
    constraint { expr: K % 128 == 0  doc: "K comes in whole 128-centroid tiles" }
    metric: label_agreement
    tolerance: 0.999
  }
  target: sm_90a
  launch { grid: [N / 64, B] }
  param x {
    kind: tensor
    dtype: bf16
    shape: [B, N, D]
    access: read
    align_bytes: 16
    doc: "points, features contiguous"
  }
  param c {
    kind: tensor
    dtype: bf16
    shape: [B, K, D]
    access: read
    align_bytes: 16
    doc: "centroids, features contiguous"
  }
  param c_sq {
    kind: tensor
    dtype: f32
    shape: [B, K]
    access: read
    align_bytes: 16
    doc: "squared centroid norms, from c as stored"
  }
  param labels {
    kind: tensor
    dtype: i32
    shape: [B, N]
    access: write
    align_bytes: 16
    doc: "nearest centroid of each point"
  }
  region sX { space: shared  dtype: bf16  shape: [64, 128]  stages: 1  swizzle: 128b }
  region sC { space: shared  dtype: bf16  shape: [128, 128]  stages: 1  swizzle: 128b }
  region sCsq { space: shared  dtype: f32  shape: [128]  stages: 1 }
  region score { space: register  dtype: f32  shape: [16, 128]  layout: mma_acc  owner: "main" }
  region best_v { space: register  dtype: f32  shape: [16]  layout: mma_rows  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [16]  layout: mma_rows  owner: "main" }
  role main {
    kind: compute
    warpgroups: 1
    fill { dst: best_v  value: inf }
    fill { dst: best_i }
    copy { src_global: x[block.y, block.x * 64, 0]  dst_tile: sX }
    loop t in 0 .. K / 128 {
      copy { src_global: c[block.y, t * 128, 0]  dst_tile: sC }
      copy { src_global: c_sq[block.y, t * 128]  dst_tile: sCsq }
      block_sync {}
      mma { kind: mma_sync  a: sX[warp * 16 +: 16, 0 +: 128]  b: sC  acc: score  accumulate: 0 }
      elementwise { op: fma  dst: score  srcs: [score, -2.0, sCsq] }
      arg_reduce {
        op: argmin
        src: score
        axis: 1
        index_base: t * 128
        values: best_v
        indices: best_i
        scope: lanes
        accumulate: true
      }
      block_sync {}
    }
    copy { src_tile: best_i  dst_global: labels[block.y, block.x * 64 + warp * 16] }
  }
}
