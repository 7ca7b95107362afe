# expect: CAKE-STRUCT-016 at kernel.regions[6]
# defect: a ROW_PER_THREAD fragment of 100 rows for a 128-thread role
kernel kmeans_assign_sm100a {
  contract {
    math: "labels[b, n] = argmin_k (c_sq[b, k] - 2 sum_d x[b, n, d] c[b, k, d]), ties to the smallest k; c_sq[b, k] = sum_d c[b, k, d]^2"
    reference: "kernels.kmeans.reference.assign"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol N { min: 128  max: 67108864  doc: "points per problem" }
    symbol K { min: 128  max: 1048576  doc: "centroids per problem" }
    symbol D { min: 128  max: 128  value: 128  doc: "features (the kernel is specialized to it)" }
    constraint { expr: N % 128 == 0  doc: "N comes in whole 128-point blocks" }
    constraint { expr: K % 128 == 0  doc: "K comes in whole 128-centroid tiles" }
    metric: label_agreement
    tolerance: 0.999
  }
  target: sm_100a
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
  region sC { space: shared  dtype: bf16  shape: [128, 128]  stages: 3  swizzle: 128b }
  region tacc0 { space: tensor  dtype: f32  shape: [128, 128]  owner: "mma" }
  region tacc1 { space: tensor  dtype: f32  shape: [128, 128]  owner: "mma" }
  region score {
    space: register
    dtype: f32
    shape: [128, 32]
    layout: row_per_thread
    owner: "mma"
  }
  region csq { space: register  dtype: f32  shape: [32]  layout: per_thread  owner: "mma" }
  region best_v { space: register  dtype: f32  shape: [100]  layout: row_per_thread  owner: "mma" }
  region best_i { space: register  dtype: i32  shape: [128]  layout: row_per_thread  owner: "mma" }
  barrier x_full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 32768 }
  barrier full { kind: mbarrier  count: 3  arrivals: 1  tx_bytes: 32768 }
  barrier empty { kind: mbarrier  count: 3  arrivals: 1 }
  barrier acc_full { kind: mbarrier  count: 2  arrivals: 1 }
  barrier wg { kind: named  count: 1  arrivals: 128 }
  pipeline ring {
    stages: 3
    full: "full"
    empty: "empty"
    regions: ["sC"]
    producer: "load"
    consumers: ["mma"]
  }
  role mma {
    kind: consumer
    warpgroups: 1
    block_sync {}
    fill { dst: best_v  value: inf }
    fill { dst: best_i }
    branch {
      cond: warp == 0 && elected
      then_body {
        mbarrier_wait { barrier: x_full[0]  phase: 0 }
        mbarrier_wait { barrier: full@round(0) }
        mma { kind: tcgen05  a: sX  b: sC@0  acc: tacc0  accumulate: 0 }
        mma_commit { barrier: empty@round(0) }
        mma_commit { barrier: acc_full[0] }
      }
    }
    loop p in 0 .. ceil_div(K / 128, 2) {
      branch {
        cond: warp == 0 && elected && 2 * p + 1 < K / 128
        then_body {
          mbarrier_wait { barrier: full@round(2 * p + 1) }
          mma { kind: tcgen05  a: sX  b: sC@((2 * p + 1) % 3)  acc: tacc1  accumulate: 0 }
          mma_commit { barrier: empty@round(2 * p + 1) }
          mma_commit { barrier: acc_full[1] }
        }
      }
      named_barrier_sync { barrier: "wg" }
      mbarrier_wait { barrier: acc_full[0]  phase: p % 2 }
      loop j0 in 0 .. 4 {
        tmem_load { src: tacc0[0 +: 128, j0 * 32 +: 32]  dst: score }
        copy { src_global: c_sq[block.y, 2 * p * 128 + j0 * 32]  dst_tile: csq }
        elementwise { op: fma  dst: score  srcs: [score, -2.0, csq] }
        arg_reduce {
          op: argmin
          src: score
          axis: 1
          index_base: 2 * p * 128 + j0 * 32
          values: best_v
          indices: best_i
          scope: thread
          accumulate: true
        }
      }
      named_barrier_sync { barrier: "wg" }
      branch {
        cond: 2 * p + 1 < K / 128
        then_body {
          branch {
            cond: warp == 0 && elected && 2 * p + 2 < K / 128
            then_body {
              mbarrier_wait { barrier: full@round(2 * p + 2) }
              mma { kind: tcgen05  a: sX  b: sC@((2 * p + 2) % 3)  acc: tacc0  accumulate: 0 }
              mma_commit { barrier: empty@round(2 * p + 2) }
              mma_commit { barrier: acc_full[0] }
            }
          }
          named_barrier_sync { barrier: "wg" }
          mbarrier_wait { barrier: acc_full[1]  phase: p % 2 }
          loop j1 in 0 .. 4 {
            tmem_load { src: tacc1[0 +: 128, j1 * 32 +: 32]  dst: score }
            copy { src_global: c_sq[block.y, (2 * p + 1) * 128 + j1 * 32]  dst_tile: csq }
            elementwise { op: fma  dst: score  srcs: [score, -2.0, csq] }
            arg_reduce {
              op: argmin
              src: score
              axis: 1
              index_base: (2 * p + 1) * 128 + j1 * 32
              values: best_v
              indices: best_i
              scope: thread
              accumulate: true
            }
          }
          named_barrier_sync { barrier: "wg" }
        }
      }
    }
    copy { src_tile: best_i  dst_global: labels[block.y, block.x * 128] }
  }
  role load {
    kind: producer
    warps: 1
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "x_full" }
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        mbarrier_init { barrier: "acc_full" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: elected
      then_body {
        mbarrier_expect_tx { barrier: x_full[0]  bytes: 32768 }
        tma_load { src: x[block.y, block.x * 128, 0]  dst: sX  barrier: x_full[0] }
        loop t in 0 .. K / 128 {
          mbarrier_wait { barrier: empty@round(t) }
          mbarrier_expect_tx { barrier: full@round(t)  bytes: 32768 }
          tma_load { src: c[block.y, t * 128, 0]  dst: sC@(t % 3)  barrier: full@round(t) }
        }
      }
    }
  }
}
