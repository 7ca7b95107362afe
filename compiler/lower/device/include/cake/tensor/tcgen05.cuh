// cake/tensor/tcgen05.cuh: sm_100a tensor memory (TMEM) and the tcgen05 MMA.
#pragma once
#include "../common.cuh"

namespace cake {
namespace tcgen05 {

// tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], ncols: one warp allocates
// `ncols` TMEM columns (a power of two >= 32) and writes their base address to `slot`.
CAKE_DEVICE void alloc(uint32_t* slot, uint32_t ncols) {
#if defined(CAKE_SM100A)
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(smem_addr(slot)), "r"(ncols)
               : "memory");
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
#endif
}

// tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols.
CAKE_DEVICE void dealloc(uint32_t taddr, uint32_t ncols) {
#if defined(CAKE_SM100A)
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols) : "memory");
#endif
}

// sm_100 shared-memory matrix descriptor: start address, leading and stride byte offsets
// (all >> 4, bits 0-13, 16-29, 32-45), the fixed version bits 46-48 = 0b001, and the
// swizzle mode in bits 61-63 (0 none, 2 128B, 4 64B, 6 32B).
CAKE_DEVICE uint64_t make_desc(const void* smem, uint32_t lbo, uint32_t sbo, int span) {
  const uint64_t addr = smem_addr(smem);
  const uint64_t mode = span == 128 ? 2 : span == 64 ? 4 : span == 32 ? 6 : 0;
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) | (uint64_t((sbo >> 4) & 0x3FFF) << 32) |
         (uint64_t(1) << 46) | (mode << 61);
}

// Instruction descriptor for kind::f16 with fp32 accumulation: D type f32 (bits 4-5 = 1),
// A/B type bf16 (bits 7-9, 10-12 = 1) or f16 (0), K-major A/B (bits 15, 16 = 0),
// N >> 3 (bits 17-22), M >> 4 (bits 24-28).
template <bool BF16>
CAKE_DEVICE constexpr uint32_t idesc_f16(int m, int n) {
  return (1u << 4) | ((BF16 ? 1u : 0u) << 7) | ((BF16 ? 1u : 0u) << 10) | (uint32_t(n >> 3) << 17) |
         (uint32_t(m >> 4) << 24);
}

// tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d:
// issued by one thread; D in tensor memory, A and B from shared memory by descriptor.
CAKE_DEVICE void mma_f16(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc, int accumulate) {
#if defined(CAKE_SM100A)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
      : "memory");
#endif
}

// tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar]: arrive on
// `bar` once this thread's outstanding tcgen05 MMAs complete.
CAKE_DEVICE void commit(uint64_t* bar) {
#if defined(CAKE_SM100A)
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(smem_addr(bar))
               : "memory");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x8.b32: each thread of the warp reads 8 consecutive
// 32-bit columns of its TMEM lane; then tcgen05.wait::ld.
CAKE_DEVICE void load_x8(float (&r)[8], uint32_t taddr) {
#if defined(CAKE_SM100A)
  uint32_t u[8];
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
               : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]), "=r"(u[4]), "=r"(u[5]), "=r"(u[6]), "=r"(u[7])
               : "r"(taddr));
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = __uint_as_float(u[i]);
#else
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = 0.0f;
  (void)taddr;
#endif
}

// tcgen05.fence::after_thread_sync: order tcgen05 ops after a thread synchronization.
CAKE_DEVICE void fence_after_sync() {
#if defined(CAKE_SM100A)
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#endif
}

}  // namespace tcgen05
}  // namespace cake
