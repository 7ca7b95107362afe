# best kernel of CAKE agent run h200-kmeans-assign-paper (measured time 950.080 us)
# genome: kmeans_assign_naive(block_k=128) + loads_to_tma(stages=2), mma_to_wgmma, tile_shape:N(size=128, symbol=N), defer_lane_reduction, elect_release
# lineage (candidate, move, author, measured time):
#   #1 seed (seed) 8441.328 us
#   #12 loads_to_tma_2 (search) 2249.440 us
#   #30 block_rows_x2 (search) 1934.832 us
#   #77 mma_to_wgmma (search) 984.768 us
#   #144 defer_lane_reduction (search) 953.056 us
#   #173 elect_release (search) 950.080 us
kernel kmeans_assign_naive {
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
  target: sm_90a
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
  region sC { space: shared  dtype: bf16  shape: [128, 128]  stages: 2  swizzle: 128b }
  region sCsq { space: shared  dtype: f32  shape: [128]  stages: 2 }
  region score { space: register  dtype: f32  shape: [64, 128]  layout: wgmma_acc  owner: "main" }
  region best_v { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [64]  layout: wgmma_rows  owner: "main" }
  barrier sX_full { kind: mbarrier  count: 1  arrivals: 1  tx_bytes: 32768 }
  barrier full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 33280 }
  barrier empty { kind: mbarrier  count: 2  arrivals: 2 }
  barrier release_sync { kind: named  count: 2  arrivals: 128 }
  pipeline ring {
    stages: 2
    full: "full"
    empty: "empty"
    regions: ["sC", "sCsq"]
    producer: "main"
    consumers: ["main"]
  }
  role main {
    kind: compute
    warpgroups: 2
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "sX_full" }
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    fill { dst: best_v  value: inf }
    fill { dst: best_i }
    branch {
      cond: thread == 0
      then_body {
        mbarrier_expect_tx { barrier: sX_full[0]  bytes: 32768 }
        tma_load { src: x[block.y, block.x * 128, 0]  dst: sX  barrier: sX_full[0] }
      }
    }
    loop t_fill in 0 .. 1 {
      branch {
        cond: t_fill < K / 128
        then_body {
          branch {
            cond: thread == 0
            then_body {
              mbarrier_wait { barrier: empty@round(t_fill) }
              mbarrier_expect_tx { barrier: full@round(t_fill)  bytes: 33280 }
              tma_load {
                src: c[block.y, t_fill * 128, 0]
                dst: sC@(t_fill % 2)
                barrier: full@round(t_fill)
              }
              tma_load {
                src: c_sq[block.y, t_fill * 128]
                dst: sCsq@(t_fill % 2)
                barrier: full@round(t_fill)
              }
            }
          }
        }
      }
    }
    mbarrier_wait { barrier: sX_full[0]  phase: 0 }
    loop t in 0 .. K / 128 {
      branch {
        cond: thread == 0 && t + 1 < K / 128
        then_body {
          mbarrier_wait { barrier: empty@round(t + 1) }
          mbarrier_expect_tx { barrier: full@round(t + 1)  bytes: 33280 }
          tma_load {
            src: c[block.y, (t + 1) * 128, 0]
            dst: sC@((t + 1) % 2)
            barrier: full@round(t + 1)
          }
          tma_load {
            src: c_sq[block.y, (t + 1) * 128]
            dst: sCsq@((t + 1) % 2)
            barrier: full@round(t + 1)
          }
        }
      }
      mbarrier_wait { barrier: full@round(t) }
      mma {
        kind: wgmma
        a: sX[warpgroup * 64 +: 64, 0 +: 128]
        b: sC@(t % 2)
        acc: score
        accumulate: 0
      }
      mma_wait {}
      elementwise { op: fma  dst: score  srcs: [score, -2.0, sCsq@(t % 2)] }
      arg_reduce {
        op: argmin
        src: score
        axis: 1
        index_base: t * 128
        values: best_v
        indices: best_i
        scope: thread
        accumulate: true
      }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "release_sync"  index: warpgroup }
      branch {
        cond: warp % 4 == 0 && elected
        then_body {
          mbarrier_arrive { barrier: empty@round(t) }
        }
      }
    }
    arg_reduce {
      op: argmin
      src: best_v
      axis: 1
      index_base: 0
      values: best_v
      indices: best_i
      scope: lanes
      accumulate: true
    }
    copy { src_tile: best_i  dst_global: labels[block.y, block.x * 128 + warpgroup * 64] }
  }
}
