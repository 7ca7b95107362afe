# best kernel of CAKE agent run h200-gemm-8192 (measured time 1527.904 us)
# genome: gemm_naive(bk=64, bn=128) + split_producer(stages=3), mma_to_wgmma, tile_shape:M(size=256, symbol=M), ring_depth:ring(pipeline=ring, stages=4), instr_n(n=64), unroll:kt(factor=1, var=kt), registers:load(role=load, value=24)
# lineage (candidate, move, author, measured time):
#   #1 seed (seed) 30689.728 us
#   #14 block_cols_x2 (search) 35766.735 us
#   #47 split_producer_ring (search) 3195.936 us
#   #81 elect_release (search) 3271.136 us
#   #124 mma_to_wgmma (search) 2020.080 us
#   #204 block_cols_x2 (search) 1543.856 us
#   #320 instr_n_64 (search) 1544.928 us
#   #918 unroll_main_off (search) 1540.864 us
#   #932 stream_ring_deeper (search) 1532.576 us
#   #934 rebalance_registers (search) 1534.320 us
#   #976 drop_rewrite (search) 1541.040 us
#   #1037 consumer_registers_down (search) -
#   #1042 repair:consumer_registers_down (repair) 1533.952 us
#   #1056 rebalance_registers_40 (search) 1536.416 us
#   #1135 producer_registers_down (search) 1527.904 us
kernel gemm_bf16_naive {
  contract {
    math: "C[m, n] = sum_k A[m, k] * B[n, k]"
    reference: "kernels.gemm.reference.gemm"
    symbol M { min: 256  max: 65536  doc: "rows of A and C" }
    symbol N { min: 128  max: 65536  doc: "rows of B, columns of C" }
    symbol K { min: 64  max: 65536  doc: "reduction length" }
    constraint { expr: M % 256 == 0  doc: "M comes in whole 256-row block tiles" }
    constraint { expr: N % 128 == 0  doc: "N comes in whole 128-column block tiles" }
    constraint { expr: K % 64 == 0  doc: "K comes in whole 64-deep slices" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_90a
  launch { grid: [N / 128, M / 256] }
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
  region sA { space: shared  dtype: bf16  shape: [256, 64]  stages: 4  swizzle: 128b }
  region sB { space: shared  dtype: bf16  shape: [128, 64]  stages: 4  swizzle: 128b }
  region acc { space: register  dtype: f32  shape: [64, 128]  layout: wgmma_acc  owner: "main" }
  barrier full { kind: mbarrier  count: 4  arrivals: 1  tx_bytes: 49152 }
  barrier empty { kind: mbarrier  count: 4  arrivals: 512 }
  pipeline ring {
    stages: 4
    full: "full"
    empty: "empty"
    regions: ["sA", "sB"]
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
        mbarrier_init { barrier: "full" }
        mbarrier_init { barrier: "empty" }
        fence { kind: mbarrier_init }
      }
    }
    block_sync {}
    branch {
      cond: warp == 0 && elected
      then_body {
        loop kt in 0 .. K / 64 {
          unroll: 1
          mbarrier_wait { barrier: empty@round(kt) }
          mbarrier_expect_tx { barrier: full@round(kt)  bytes: 49152 }
          tma_load { src: A[block.y * 256, kt * 64]  dst: sA@(kt % 4)  barrier: full@round(kt) }
          tma_load { src: B[block.x * 128, kt * 64]  dst: sB@(kt % 4)  barrier: full@round(kt) }
        }
      }
    }
  }
  role main {
    kind: consumer
    warpgroups: 4
    block_sync {}
    loop kt in 0 .. K / 64 {
      unroll: 1
      mbarrier_wait { barrier: full@round(kt) }
      mma {
        kind: wgmma
        a: sA@(kt % 4)[warpgroup * 64 +: 64, 0 +: 64]
        b: sB@(kt % 4)
        acc: acc
        accumulate: kt > 0
        instr_shape: [64, 64, 16]
      }
      mma_wait {}
      mbarrier_arrive { barrier: empty@round(kt) }
    }
    copy { src_tile: acc  dst_global: C[block.y * 256 + warpgroup * 64, block.x * 128] }
  }
}
