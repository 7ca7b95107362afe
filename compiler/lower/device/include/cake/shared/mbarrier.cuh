// cake/shared/mbarrier.cuh: mbarrier objects in shared memory (sm_80+; transaction counts sm_90+).
#pragma once
#include "../common.cuh"

namespace cake {
namespace mbarrier {

// mbarrier.init.shared::cta.b64 [bar], count.
CAKE_DEVICE void init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// fence.mbarrier_init.release.cluster: make inits visible to the async proxy and the cluster.
CAKE_DEVICE void fence_init() {
#if defined(CAKE_SM90_PLUS)
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  __threadfence_block();
#endif
}

// mbarrier.arrive.shared::cta.b64 _, [bar]: one arrival of this thread.
CAKE_DEVICE void arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes: arrive and expect `bytes` more (sm_90+).
CAKE_DEVICE void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(CAKE_SM90_PLUS)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#endif
}

// Loop on mbarrier.try_wait.parity.shared::cta.b64 until the phase with `parity` completes.
CAKE_DEVICE void wait(uint64_t* bar, uint32_t parity) {
#if defined(CAKE_SM90_PLUS)
  asm volatile(
      "{\n"
      " .reg .pred done;\n"
      "WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#else
  asm volatile(
      "{\n"
      " .reg .pred done;\n"
      "WAIT_%=:\n"
      " mbarrier.test_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#endif
}

}  // namespace mbarrier

// fence.proxy.async.shared::cta: order this thread's generic-proxy shared writes before
// async-proxy (TMA, wgmma, tcgen05) reads.
CAKE_DEVICE void fence_proxy_async() {
#if defined(CAKE_SM90_PLUS)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// fence.acq_rel.gpu.
CAKE_DEVICE void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

}  // namespace cake
