kernel ring_copy {
  contract {
    math: "y[i] = x[i]"
    reference: "numpy.copy"
    symbol N { min: 64  max: 16777216 }
    constraint { expr: N % 256 == 0  doc: "whole blocks of four 64-element tiles" }
    metric: exact
  }
  target: sm_90a
  launch { grid: [N / 256] }
  param x { kind: tensor  dtype: f32  shape: [N]  access: read  align_bytes: 16 }
  param y { kind: tensor  dtype: f32  shape: [N]  access: write  align_bytes: 16 }
  region tile { space: shared  dtype: f32  shape: [64]  stages: 2 }
  barrier full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 256 }
  barrier empty { kind: mbarrier  count: 2  arrivals: 1 }
  barrier drained { kind: named  count: 1  arrivals: 64 }
  pipeline ring {
    stages: 2
    full: "full"
    empty: "empty"
    regions: ["tile"]
    producer: "load"
    consumers: ["store"]
  }
  role load {
    kind: producer
    warps: 1
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
      cond: elected
      then_body {
        loop i in 0 .. 4 {
          mbarrier_wait { barrier: empty@round(i) }
          mbarrier_expect_tx { barrier: full@round(i)  bytes: 256 }
          tma_load { src: x[block.x * 256 + i * 64]  dst: tile@(i % 2)  barrier: full@round(i) }
        }
      }
    }
  }
  role store {
    kind: consumer
    warps: 2
    block_sync {}
    loop i in 0 .. 4 {
      mbarrier_wait { barrier: full@round(i) }
      copy { src_tile: tile@(i % 2)  dst_global: y[block.x * 256 + i * 64] }
      fence { kind: proxy_async }
      named_barrier_sync { barrier: "drained" }
      branch {
        cond: warp == 0 && elected
        then_body {
          mbarrier_arrive { barrier: empty@round(i) }
        }
      }
    }
  }
}
