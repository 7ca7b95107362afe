# expect: CAKE-DATA-007 at kernel.roles[0].body[5].copy
# defect: warp w stores its 16 labels at row 8 w: neighbouring warps overwrite half of each other's labels
kernel kmeans_assign_sm80 {
  contract {
    math: "labels[b, n] = argmin_k (c_sq[b, k] - 2 sum_d x[b, n, d] c[b, k, d]), ties to the smallest k; c_sq[b, k] = sum_d c[b, k, d]^2"
    reference: "kernels.kmeans.reference.assign"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol N { min: 128  max: 67108864  doc: "points per problem" }
    symbol K { min: 64  max: 1048576  doc: "centroids per problem" }
    symbol D { min: 128  max: 128  value: 128  doc: "features (the kernel is specialized to it)" }
    constraint { expr: N % 128 == 0  doc: "N comes in whole 128-point blocks" }
    constraint { expr: K % 64 == 0  doc: "K comes in whole 64-centroid tiles" }
    metric: label_agreement
    tolerance: 0.999
  }
  target: sm_80
  launch { grid: [N / 128, B] }
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
  region sX { space: shared  dtype: bf16  shape: [128, 128]  stages: 1  swizzle: 128b }
  region sC { space: shared  dtype: bf16  shape: [64, 128]  stages: 3  swizzle: 128b }
  region sCsq { space: shared  dtype: f32  shape: [64]  stages: 3 }
  region score { space: register  dtype: f32  shape: [16, 64]  layout: mma_acc  owner: "main" }
  region best_v { space: register  dtype: f32  shape: [16]  layout: mma_rows  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [16]  layout: mma_rows  owner: "main" }
  role main {
    kind: compute
    warps: 8
    fill { dst: best_v  value: inf }
    fill { dst: best_i }
    cp_async { src: x[block.y, block.x * 128, 0]  dst: sX  vector_bytes: 16 }
    loop t_fill in 0 .. 2 {
      branch {
        cond: t_fill < K / 64
        then_body {
          cp_async { src: c[block.y, t_fill * 64, 0]  dst: sC@(t_fill % 3)  vector_bytes: 16 }
          cp_async { src: c_sq[block.y, t_fill * 64]  dst: sCsq@(t_fill % 3)  vector_bytes: 16 }
        }
      }
    }
    loop t in 0 .. K / 64 {
      branch {
        cond: t + 1 < K / 64
        then_body {
          cp_async_wait { pending: 2 }
        }
        else_body {
          cp_async_wait {}
        }
      }
      block_sync {}
      branch {
        cond: t + 2 < K / 64
        then_body {
          cp_async { src: c[block.y, (t + 2) * 64, 0]  dst: sC@((t + 2) % 3)  vector_bytes: 16 }
          cp_async { src: c_sq[block.y, (t + 2) * 64]  dst: sCsq@((t + 2) % 3)  vector_bytes: 16 }
        }
      }
      mma {
        kind: mma_sync
        a: sX[warp * 16 +: 16, 0 +: 128]
        b: sC@(t % 3)
        acc: score
        accumulate: 0
      }
      elementwise { op: fma  dst: score  srcs: [score, -2.0, sCsq@(t % 3)] }
      arg_reduce {
        op: argmin
        src: score
        axis: 1
        index_base: t * 64
        values: best_v
        indices: best_i
        scope: lanes
        accumulate: true
      }
    }
    copy { src_tile: best_i  dst_global: labels[block.y, block.x * 128 + warp * 8] }
  }
}
