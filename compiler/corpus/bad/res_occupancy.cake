# expect: CAKE-RES-009 at kernel.launch
# defect: 2 blocks of 96 KB shared memory do not fit one SM
kernel gemm_bf16_sm80 {
  contract {
    math: "C[m, n] = sum_k A[m, k] * B[n, k]"
    reference: "kernels.gemm.reference.gemm"
    symbol M { min: 128  max: 65536  doc: "rows of A and C" }
    symbol N { min: 128  max: 65536  doc: "rows of B, columns of C" }
    symbol K { min: 32  max: 65536  doc: "reduction length" }
    constraint { expr: M % 128 == 0  doc: "M comes in whole 128-row block tiles" }
    constraint { expr: N % 128 == 0  doc: "N comes in whole 128-column block tiles" }
    constraint { expr: K % 32 == 0  doc: "K comes in whole 32-deep slices" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_80
  launch { grid: [N / 128, M / 128]  min_blocks_per_sm: 2 }
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
  region sA { space: shared  dtype: bf16  shape: [128, 32]  stages: 6  swizzle: 64b }
  region sB { space: shared  dtype: bf16  shape: [128, 32]  stages: 6  swizzle: 64b }
  region fA { space: register  dtype: bf16  shape: [64, 16]  layout: mma_a  owner: "main" }
  region fB { space: register  dtype: bf16  shape: [32, 16]  layout: mma_b  owner: "main" }
  region acc { space: register  dtype: f32  shape: [64, 32]  layout: mma_acc  owner: "main" }
  role main {
    kind: compute
    warps: 8
    fill { dst: acc }
    loop kt_fill in 0 .. 2 {
      branch {
        cond: kt_fill < K / 32
        then_body {
          cp_async { src: A[block.y * 128, kt_fill * 32]  dst: sA@(kt_fill % 3)  vector_bytes: 16 }
          cp_async { src: B[block.x * 128, kt_fill * 32]  dst: sB@(kt_fill % 3)  vector_bytes: 16 }
        }
      }
    }
    loop kt in 0 .. K / 32 {
      branch {
        cond: kt + 1 < K / 32
        then_body {
          cp_async_wait { pending: 2 }
        }
        else_body {
          cp_async_wait {}
        }
      }
      block_sync {}
      branch {
        cond: kt + 2 < K / 32
        then_body {
          cp_async {
            src: A[block.y * 128, (kt + 2) * 32]
            dst: sA@((kt + 2) % 3)
            vector_bytes: 16
          }
          cp_async {
            src: B[block.x * 128, (kt + 2) * 32]
            dst: sB@((kt + 2) % 3)
            vector_bytes: 16
          }
        }
      }
      loop ks in 0 .. 2 {
        unroll: 2
        ldmatrix { src: sA@(kt % 3)[warp / 4 * 64 +: 64, ks * 16 +: 16]  dst: fA }
        ldmatrix { src: sB@(kt % 3)[warp % 4 * 32 +: 32, ks * 16 +: 16]  dst: fB }
        mma { kind: mma_sync  a: fA  b: fB  acc: acc  accumulate: 1 }
      }
    }
    copy {
      src_tile: acc
      dst_global: C[block.y * 128 + warp / 4 * 64, block.x * 128 + warp % 4 * 32]
    }
  }
}
