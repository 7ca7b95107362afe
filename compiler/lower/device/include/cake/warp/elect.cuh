// cake/warp/elect.cuh: choose one lane of a warp.
#pragma once
#include "../common.cuh"

namespace cake {

// True in exactly one lane of the (converged) warp: elect.sync on sm_90+, lane 0 before.
CAKE_DEVICE bool elect_one() {
#if defined(CAKE_SM90_PLUS)
  uint32_t pred = 0;
  asm volatile(
      "{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(pred));
  return pred != 0;
#else
  return (threadIdx.x & 31) == 0;
#endif
}

// The warp index within the block, made warp-uniform for the compiler (shfl.sync of lane 0's value).
CAKE_DEVICE int warp_index() { return __shfl_sync(0xffffffff, static_cast<int>(threadIdx.x >> 5), 0); }

}  // namespace cake
