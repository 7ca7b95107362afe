// cake/warp/matrix.cuh: warp-level matrix movement and MMA (ldmatrix, stmatrix, mma.sync).
#pragma once
#include "../common.cuh"

namespace cake {
namespace warp {

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: four 8x8 b16 matrices; lane l supplies the
// address of row l % 8 of matrix l / 8.
CAKE_DEVICE void ldmatrix_x4(uint32_t (&r)[4], const void* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_addr)));
}

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: the same, each matrix transposed.
CAKE_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_addr)));
}

// stmatrix.sync.aligned.m8n8.x4.shared.b16 (sm_90+): four 8x8 b16 matrices to shared memory.
CAKE_DEVICE void stmatrix_x4(void* row_addr, const uint32_t (&r)[4]) {
#if defined(CAKE_SM90_PLUS)
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr(row_addr)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#endif
}

// stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 (sm_90+).
CAKE_DEVICE void stmatrix_x4_trans(void* row_addr, const uint32_t (&r)[4]) {
#if defined(CAKE_SM90_PLUS)
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr(row_addr)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#endif
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: d = a * b + d for one m16n8k16 tile.
CAKE_DEVICE void mma_bf16_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.
CAKE_DEVICE void mma_f16_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <typename T>
CAKE_DEVICE void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
template <>
CAKE_DEVICE void mma_m16n8k16<bf16>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  mma_bf16_m16n8k16(d, a, b);
}
template <>
CAKE_DEVICE void mma_m16n8k16<f16>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  mma_f16_m16n8k16(d, a, b);
}

}  // namespace warp
}  // namespace cake
