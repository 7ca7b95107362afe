# best kernel of CAKE agent run h200-kmeans-assign-paper (measured time 874.112 us)
# genome: kmeans_assign_naive(block_k=128) + split_producer(stages=3), mma_to_wgmma, tile_shape:N(size=256, symbol=N), defer_lane_reduction, persistent, ring_depth:ring(pipeline=ring, stages=2), ring_depth:sX_ring(pipeline=sX_ring, stages=2), unroll:t(factor=2, var=t), rebalance_registers(producer=24)
# lineage (candidate, move, author, measured time):
#   #1 seed (seed) 8382.912 us
#   #10 split_producer_ring (search) 2966.480 us
#   #23 block_rows_x2 (search) 2213.968 us
#   #77 mma_to_wgmma (search) 1168.160 us
#   #186 block_rows_x2 (search) -
#   #200 repair:rebalance_registers (repair) 956.544 us
#   #263 defer_lane_reduction (search) 931.104 us
#   #357 unroll_main_2 (search) 928.576 us
#   #441 stream_ring_shallower (search) 917.104 us
#   #558 persistent (search) 909.904 us
#   #683 resident_ring_double (search) 874.112 us
kernel kmeans_assign_naive {
  contract {
    math: "labels[b, n] = argmin_k (c_sq[b, k] - 2 sum_d x[b, n, d] c[b, k, d]), ties to the smallest k; c_sq[b, k] = sum_d c[b, k, d]^2"
    reference: "kernels.kmeans.reference.assign"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol N { min: 256  max: 67108864  doc: "points per problem" }
    symbol K { min: 128  max: 1048576  doc: "centroids per problem" }
    symbol D { min: 128  max: 128  value: 128  doc: "features (the kernel is specialized to it)" }
    constraint { expr: N % 256 == 0  doc: "N comes in whole 256-point blocks" }
    constraint { expr: K % 128 == 0  doc: "K comes in whole 128-centroid tiles" }
    metric: label_agreement
    tolerance: 0.999
  }
  target: sm_90a
  launch { min_blocks_per_sm: 1  persistent: true }
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
  region sX { space: shared  dtype: bf16  shape: [256, 128]  stages: 2  swizzle: 128b }
  region sC { space: shared  dtype: bf16  shape: [128, 128]  stages: 2  swizzle: 128b }
  region sCsq { space: shared  dtype: f32  shape: [128]  stages: 2 }
  region score { space: register  dtype: f32  shape: [64, 128]  layout: wgmma_acc  owner: "main" }
  region best_v { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "main" }
  region best_i { space: register  dtype: i32  shape: [64]  layout: wgmma_rows  owner: "main" }
  barrier sX_full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 65536 }
  barrier full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 33280 }
  barrier empty { kind: mbarrier  count: 2  arrivals: 512 }
  barrier sX_empty { kind: mbarrier  count: 2  arrivals: 512 }
  pipeline ring {
    stages: 2
    full: "full"
    empty: "empty"
    regions: ["sC", "sCsq"]
    producer: "load"
    consumers: ["main"]
  }
  pipeline sX_ring {
    stages: 2
    full: "sX_full"
    empty: "sX_empty"
    regions: ["sX"]
    producer: "load"
    consumers: ["main"]
  }
  role load {
    kind: producer
    warpgroups: 1
    registers: 24
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "sX_full" }
        mbarrier_init { barrier: "sX_empty" }
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    loop tile in 0 .. N / 256 * B {
      kind: persistent
      counter: "it"
      branch {
        cond: warp == 0 && elected
        then_body {
          mbarrier_wait { barrier: sX_empty@round(it) }
          mbarrier_expect_tx { barrier: sX_full@round(it)  bytes: 65536 }
          tma_load {
            src: x[tile / (N / 256), tile % (N / 256) * 256, 0]
            dst: sX@(it % 2)
            barrier: sX_full@round(it)
          }
          loop t in 0 .. K / 128 {
            unroll: 2
            mbarrier_wait { barrier: empty@round(it * (K / 128) + t) }
            mbarrier_expect_tx { barrier: full@round(it * (K / 128) + t)  bytes: 33280 }
            tma_load {
              src: c[tile / (N / 256), t * 128, 0]
              dst: sC@((it * (K / 128) + t) % 2)
              barrier: full@round(it * (K / 128) + t)
            }
            tma_load {
              src: c_sq[tile / (N / 256), t * 128]
              dst: sCsq@((it * (K / 128) + t) % 2)
              barrier: full@round(it * (K / 128) + t)
            }
          }
        }
      }
    }
  }
  role main {
    kind: consumer
    warpgroups: 4
    registers: 112
    block_sync {}
    loop tile in 0 .. N / 256 * B {
      kind: persistent
      counter: "it"
      fill { dst: best_v  value: inf }
      fill { dst: best_i }
      mbarrier_wait { barrier: sX_full@round(it) }
      loop t in 0 .. K / 128 {
        unroll: 2
        mbarrier_wait { barrier: full@round(it * (K / 128) + t) }
        mma {
          kind: wgmma
          a: sX@(it % 2)[warpgroup * 64 +: 64, 0 +: 128]
          b: sC@((it * (K / 128) + t) % 2)
          acc: score
          accumulate: 0
        }
        mma_wait {}
        elementwise { op: fma  dst: score  srcs: [score, -2.0, sCsq@((it * (K / 128) + t) % 2)] }
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
        mbarrier_arrive { barrier: empty@round(it * (K / 128) + t) }
      }
      mbarrier_arrive { barrier: sX_empty@round(it) }
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
      copy {
        src_tile: best_i
        dst_global: labels[tile / (N / 256), tile % (N / 256) * 256 + warpgroup * 64]
      }
    }
  }
}
