// cake/shared/tma.cuh: Tensor Memory Accelerator copies (sm_90+), tensor maps made on the host.
#pragma once
#include "../common.cuh"

namespace cake {
namespace tma {

// cp.async.bulk.tensor.<N>d.shared::cluster.global.mbarrier::complete_tx::bytes
// [dst], [map, {c0..}], [bar]: load one box; its bytes complete `bar`'s transaction count.
// Coordinates are innermost-first, in elements.
template <int N>
CAKE_DEVICE void load(void* dst, const CUtensorMap* map, uint64_t* bar, const int (&c)[N]) {
#if defined(CAKE_SM90_PLUS)
  const uint32_t d = smem_addr(dst), b = smem_addr(bar);
  const uint64_t m = reinterpret_cast<uint64_t>(map);
  if constexpr (N == 1) {
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];" ::"r"(d),
        "l"(m), "r"(b), "r"(c[0])
        : "memory");
  } else if constexpr (N == 2) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(d),
        "l"(m), "r"(b), "r"(c[0]), "r"(c[1])
        : "memory");
  } else if constexpr (N == 3) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(d),
        "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2])
        : "memory");
  } else if constexpr (N == 4) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(d),
        "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
        : "memory");
  } else {
    static_assert(N >= 1 && N <= 4, "TMA loads of rank 1..4");
  }
#endif
}

// cp.async.bulk.tensor.<N>d.global.shared::cta.bulk_group [map, {c0..}], [src]: store one box.
template <int N>
CAKE_DEVICE void store(const CUtensorMap* map, const void* src, const int (&c)[N]) {
#if defined(CAKE_SM90_PLUS)
  const uint32_t s = smem_addr(src);
  const uint64_t m = reinterpret_cast<uint64_t>(map);
  if constexpr (N == 1) {
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(m), "r"(s), "r"(c[0])
                 : "memory");
  } else if constexpr (N == 2) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(m), "r"(s),
                 "r"(c[0]), "r"(c[1])
                 : "memory");
  } else if constexpr (N == 3) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(m), "r"(s),
                 "r"(c[0]), "r"(c[1]), "r"(c[2])
                 : "memory");
  } else if constexpr (N == 4) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(m),
                 "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                 : "memory");
  } else {
    static_assert(N >= 1 && N <= 4, "TMA stores of rank 1..4");
  }
#endif
}

// cp.async.bulk.commit_group: close this thread's group of TMA stores.
CAKE_DEVICE void store_commit() {
#if defined(CAKE_SM90_PLUS)
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

// cp.async.bulk.wait_group.read N: wait until at most N store groups still read shared memory.
template <int N>
CAKE_DEVICE void store_wait() {
#if defined(CAKE_SM90_PLUS)
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
#endif
}

// prefetch.tensormap [map]: warm the descriptor cache before the first copy.
CAKE_DEVICE void prefetch(const CUtensorMap* map) {
#if defined(CAKE_SM90_PLUS)
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

}  // namespace tma
}  // namespace cake
