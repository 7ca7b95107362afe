// cake/shared/cp_async.cuh: asynchronous global -> shared copies by threads (sm_80+).
#pragma once
#include "../common.cuh"

namespace cake {
namespace cp_async {

// cp.async.{cg,ca}.shared.global [dst], [src], BYTES, src_bytes: copy BYTES (4, 8 or 16),
// zero-filling what lies past src_bytes (0 for out-of-bounds elements).
template <int BYTES>
CAKE_DEVICE void copy(void* dst, const void* src, bool in_bounds) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const uint32_t d = smem_addr(dst);
  const int src_bytes = in_bounds ? BYTES : 0;
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(d), "l"(src), "n"(BYTES), "r"(src_bytes)
                 : "memory");
  }
}

// cp.async.commit_group.
CAKE_DEVICE void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// cp.async.wait_group N.
template <int N>
CAKE_DEVICE void wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace cp_async
}  // namespace cake
