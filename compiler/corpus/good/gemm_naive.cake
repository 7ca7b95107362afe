kernel gemm_bf16_naive {
  contract {
    math: "C[m, n] = sum_k A[m, k] * B[n, k]"
    reference: "kernels.gemm.reference.gemm"
    symbol M { min: 64  max: 65536  doc: "rows of A and C" }
    symbol N { min: 128  max: 65536  doc: "rows of B, columns of C" }
    symbol K { min: 64  max: 65536  doc: "reduction length" }
    constraint { expr: M % 64 == 0  doc: "M comes in whole 64-row block tiles" }
    constraint { expr: N % 128 == 0  doc: "N comes in whole 128-column block tiles" }
    constraint { expr: K % 64 == 0  doc: "K comes in whole 64-deep slices" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_90a
  launch { grid: [N / 128, M / 64] }
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
  region sA { space: shared  dtype: bf16  shape: [64, 64]  stages: 1  swizzle: 128b }
  region sB { space: shared  dtype: bf16  shape: [128, 64]  stages: 1  swizzle: 128b }
  region acc { space: register  dtype: f32  shape: [16, 128]  layout: mma_acc  owner: "main" }
  role main {
    kind: compute
    warpgroups: 1
    loop kt in 0 .. K / 64 {
      copy { src_global: A[block.y * 64, kt * 64]  dst_tile: sA }
      copy { src_global: B[block.x * 128, kt * 64]  dst_tile: sB }
      block_sync {}
      mma { kind: mma_sync  a: sA[warp * 16 +: 16, 0 +: 64]  b: sB  acc: acc  accumulate: kt > 0 }
      block_sync {}
    }
    copy { src_tile: acc  dst_global: C[block.y * 64 + warp * 16, block.x * 128] }
  }
}
