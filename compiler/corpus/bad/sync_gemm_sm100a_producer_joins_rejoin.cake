# expect: CAKE-SYNC-005 at kernel.roles[1].body[2].branch.then_body[0].loop.body[1].named_barrier_sync
# defect: the producer thread also syncs on `rejoin`, the MMA warpgroup's 128-thread barrier
kernel gemm_bf16_sm100a {
  contract {
    math: "C[m, n] = sum_k A[m, k] * B[n, k]"
    reference: "kernels.gemm.reference.gemm"
    symbol M { min: 128  max: 65536  doc: "rows of A and C" }
    symbol N { min: 256  max: 65536  doc: "rows of B, columns of C" }
    symbol K { min: 64  max: 65536  doc: "reduction length" }
    constraint { expr: M % 128 == 0  doc: "M comes in whole 128-row block tiles" }
    constraint { expr: N % 256 == 0  doc: "N comes in whole 256-column block tiles" }
    constraint { expr: K % 64 == 0  doc: "K comes in whole 64-deep slices" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_100a
  launch { grid: [N / 256, M / 128] }
  param A {
    kind: tensor
    dtype: bf16
    shape: [M, K]
    access: read
    align_bytes: 16
    doc: "left operand, K contiguous"
  }
  param B {
    kind: tensor
    dtype: bf16
    shape: [N, K]
    access: read
    align_bytes: 16
    doc: "right operand, K contiguous (C = A B^T)"
  }
  param C {
    kind: tensor
    dtype: bf16
    shape: [M, N]
    access: write
    align_bytes: 16
    doc: "result"
  }
  region sA { space: shared  dtype: bf16  shape: [128, 64]  stages: 4  swizzle: 128b }
  region sB { space: shared  dtype: bf16  shape: [256, 64]  stages: 4  swizzle: 128b }
  region tacc { space: tensor  dtype: f32  shape: [128, 256]  owner: "mma" }
  region out { space: register  dtype: f32  shape: [128, 32]  layout: row_per_thread  owner: "mma" }
  barrier full { kind: mbarrier  count: 4  arrivals: 1  tx_bytes: 49152 }
  barrier empty { kind: mbarrier  count: 4  arrivals: 1 }
  barrier done { kind: mbarrier  count: 1  arrivals: 1 }
  barrier rejoin { kind: named  count: 1  arrivals: 128 }
  pipeline ring {
    stages: 4
    full: "full"
    empty: "empty"
    regions: ["sA", "sB"]
    producer: "load"
    consumers: ["mma"]
  }
  role mma {
    kind: consumer
    warpgroups: 1
    block_sync {}
    branch {
      cond: warp == 0 && elected
      then_body {
        loop kt in 0 .. K / 64 {
          mbarrier_wait { barrier: full@round(kt) }
          mma { kind: tcgen05  a: sA@(kt % 4)  b: sB@(kt % 4)  acc: tacc  accumulate: kt > 0 }
          mma_commit { barrier: empty@round(kt) }
        }
        mma_commit { barrier: done[0] }
      }
    }
    named_barrier_sync { barrier: "rejoin" }
    mbarrier_wait { barrier: done[0]  phase: 0 }
    loop j in 0 .. 8 {
      tmem_load { src: tacc[0 +: 128, j * 32 +: 32]  dst: out }
      copy { src_tile: out  dst_global: C[block.y * 128, block.x * 256 + j * 32] }
    }
  }
  role load {
    kind: producer
    warps: 1
    branch {
      cond: thread == 0
      then_body {
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        mbarrier_init { barrier: "done" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: elected
      then_body {
        loop kt in 0 .. K / 64 {
          mbarrier_wait { barrier: empty@round(kt) }
          named_barrier_sync { barrier: "rejoin" }
          mbarrier_expect_tx { barrier: full@round(kt)  bytes: 49152 }
          tma_load { src: A[block.y * 128, kt * 64]  dst: sA@(kt % 4)  barrier: full@round(kt) }
          tma_load { src: B[block.x * 256, kt * 64]  dst: sB@(kt % 4)  barrier: full@round(kt) }
        }
      }
    }
  }
}
