// cake/warpgroup/setmaxnreg.cuh: move registers between warpgroups (sm_90a, sm_100a).
#pragma once
#include "../common.cuh"

namespace cake {

// setmaxnreg.inc.sync.aligned.u32 N: raise this warpgroup's per-thread register limit to N.
template <int N>
CAKE_DEVICE void setmaxnreg_inc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if defined(CAKE_SM90A) || defined(CAKE_SM100A)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

// setmaxnreg.dec.sync.aligned.u32 N: lower it to N, returning registers to the pool.
template <int N>
CAKE_DEVICE void setmaxnreg_dec() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if defined(CAKE_SM90A) || defined(CAKE_SM100A)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

}  // namespace cake
