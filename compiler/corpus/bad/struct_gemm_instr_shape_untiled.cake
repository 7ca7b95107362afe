# expect: CAKE-STRUCT-027 at kernel.roles[1].body[1].loop.body[1].mma.instr_shape
# defect: wgmma instructions of N = 96 do not tile the 256-column accumulator
kernel gemm_bf16_sm90a {
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
  target: sm_90a
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
  region acc { space: register  dtype: f32  shape: [64, 256]  layout: wgmma_acc  owner: "mma" }
  barrier full { kind: mbarrier  count: 4  arrivals: 1  tx_bytes: 49152 }
  barrier empty { kind: mbarrier  count: 4  arrivals: 2 }
  pipeline ring {
    stages: 4
    full: "full"
    empty: "empty"
    regions: ["sA", "sB"]
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
        loop kt in 0 .. K / 64 {
          mbarrier_wait { barrier: empty@round(kt) }
          mbarrier_expect_tx { barrier: full@round(kt)  bytes: 49152 }
          tma_load { src: A[block.y * 128, kt * 64]  dst: sA@(kt % 4)  barrier: full@round(kt) }
          tma_load { src: B[block.x * 256, kt * 64]  dst: sB@(kt % 4)  barrier: full@round(kt) }
        }
      }
    }
  }
  role mma {
    kind: consumer
    warpgroups: 2
    registers: 232
    block_sync {}
    loop kt in 0 .. K / 64 {
      mbarrier_wait { barrier: full@round(kt) }
      mma {
        kind: wgmma
        a: sA@(kt % 4)[warpgroup * 64 +: 64, 0 +: 64]
        b: sB@(kt % 4)
        acc: acc
        accumulate: kt > 0
        instr_shape: [64, 96, 16]
      }
      mma_wait {}
      branch {
        cond: warp % 4 == 0 && elected
        then_body {
          mbarrier_arrive { barrier: empty@round(kt) }
        }
      }
    }
    copy { src_tile: acc  dst_global: C[block.y * 128 + warpgroup * 64, block.x * 256] }
  }
}
