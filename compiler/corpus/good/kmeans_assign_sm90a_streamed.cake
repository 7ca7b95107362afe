kernel kmeans_assign_sm90a_streamed {
  contract {
    math: "labels[b, n] = argmin_k (c_sq[b, k] - 2 sum_d x[b, n, d] c[b, k, d]), ties to the smallest k; c_sq[b, k] = sum_d c[b, k, d]^2"
    reference: "kernels.kmeans.reference.assign"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol N { min: 1  max: 67108864  doc: "points per problem" }
    symbol K { min: 1  max: 1048576  doc: "centroids per problem" }
    symbol KP {
      min: 128
      max: 1048576
      doc: "K rounded up to whole centroid tiles (c_sq's length)"
    }
    symbol D { min: 8  max: 512  doc: "features; tiles are d wide, TMA zero-fills the rest" }
    constraint { expr: D % 8 == 0  doc: "rows of x and c start 16-byte aligned (TMA)" }
    constraint { expr: KP % 128 == 0  doc: "c_sq is padded to whole 128-centroid tiles" }
    constraint { expr: KP >= K && KP < K + 128  doc: "KP is K rounded up to a multiple of 128" }
    metric: label_agreement
    tolerance: 0.9999
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
    shape: [B, KP]
    access: read
    align_bytes: 16
    doc: "squared centroid norms, from c as stored; +inf past K"
  }
  param labels {
    kind: tensor
    dtype: i32
    shape: [B, N]
    access: write
    align_bytes: 16
    doc: "nearest centroid of each point"
  }
  region sX { space: shared  dtype: bf16  shape: [256, 64]  stages: 4  swizzle: 128b }
  region sC { space: shared  dtype: bf16  shape: [128, 64]  stages: 4  swizzle: 128b }
  region sCsq { space: shared  dtype: f32  shape: [128]  stages: 4 }
  region acc { space: register  dtype: f32  shape: [64, 128]  layout: wgmma_acc  owner: "mma" }
  region best_v { space: register  dtype: f32  shape: [64]  layout: wgmma_rows  owner: "mma" }
  region best_i { space: register  dtype: i32  shape: [64]  layout: wgmma_rows  owner: "mma" }
  barrier full { kind: mbarrier  count: 4  arrivals: 1  tx_bytes: 49664 }
  barrier empty { kind: mbarrier  count: 4  arrivals: 4 }
  barrier wg_done { kind: named  count: 4  arrivals: 128 }
  pipeline ring {
    stages: 4
    full: "full"
    empty: "empty"
    regions: ["sX", "sC", "sCsq"]
    producer: "load"
    consumers: ["mma"]
  }
  role load {
    kind: producer
    warpgroups: 1
    registers: 40
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: warp == 0 && elected
      then_body {
        loop tile in 0 .. B * ceil_div(N, 256) {
          kind: persistent
          counter: "it"
          loop k in 0 .. KP / 128 {
            loop sl in 0 .. 8 {
              mbarrier_wait { barrier: empty@round((it * (KP / 128) + k) * 8 + sl) }
              mbarrier_expect_tx {
                barrier: full@round((it * (KP / 128) + k) * 8 + sl)
                bytes: 49664
              }
              tma_load {
                src: x[tile / ceil_div(N, 256), tile % ceil_div(N, 256) * 256, sl * 64]
                dst: sX@(((it * (KP / 128) + k) * 8 + sl) % 4)
                barrier: full@round((it * (KP / 128) + k) * 8 + sl)
              }
              tma_load {
                src: c[tile / ceil_div(N, 256), k * 128, sl * 64]
                dst: sC@(((it * (KP / 128) + k) * 8 + sl) % 4)
                barrier: full@round((it * (KP / 128) + k) * 8 + sl)
              }
              tma_load {
                src: c_sq[tile / ceil_div(N, 256), k * 128]
                dst: sCsq@(((it * (KP / 128) + k) * 8 + sl) % 4)
                barrier: full@round((it * (KP / 128) + k) * 8 + sl)
              }
            }
          }
        }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 4
    registers: 104
    block_sync {}
    loop tile in 0 .. B * ceil_div(N, 256) {
      kind: persistent
      counter: "it"
      fill { dst: best_v  value: inf }
      fill { dst: best_i }
      loop k in 0 .. KP / 128 {
        loop sl in 0 .. 8 {
          mbarrier_wait { barrier: full@round((it * (KP / 128) + k) * 8 + sl) }
          mma {
            kind: wgmma
            a: sX@(((it * (KP / 128) + k) * 8 + sl) % 4)[warpgroup * 64 +: 64, 0 +: 64]
            b: sC@(((it * (KP / 128) + k) * 8 + sl) % 4)
            acc: acc
            accumulate: sl > 0
          }
          mma_wait {}
          branch {
            cond: sl == 7
            then_body {
              elementwise {
                op: fma
                dst: acc
                srcs: [acc, -2.0, sCsq@(((it * (KP / 128) + k) * 8 + sl) % 4)]
              }
              arg_reduce {
                op: argmin
                src: acc
                axis: 1
                index_base: k * 128
                values: best_v
                indices: best_i
                scope: thread
                accumulate: true
              }
            }
          }
          fence { kind: proxy_async }
          named_barrier_sync { barrier: "wg_done"  index: warpgroup }
          branch {
            cond: warp % 4 == 0 && elected
            then_body {
              mbarrier_arrive { barrier: empty@round((it * (KP / 128) + k) * 8 + sl) }
            }
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
      copy {
        src_tile: best_i
        dst_global: labels[tile / ceil_div(N, 256), tile % ceil_div(N, 256) * 256 + warpgroup * 64]
      }
    }
  }
}
