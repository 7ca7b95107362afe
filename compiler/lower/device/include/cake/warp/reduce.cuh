// cake/warp/reduce.cuh: reductions and arg-reductions across lanes
// (shfl.sync.bfly.b32 butterflies over the lanes whose xor-distance is in MASKS).
#pragma once
#include "../common.cuh"

namespace cake {
namespace warp {

struct Sum {
  CAKE_DEVICE static float apply(float a, float b) { return a + b; }
};
struct Max {
  CAKE_DEVICE static float apply(float a, float b) { return fmaxf(a, b); }
};
struct Min {
  CAKE_DEVICE static float apply(float a, float b) { return fminf(a, b); }
};

// Combine v over lanes lane ^ m for m = FIRST, 2 FIRST, ..., < LAST (e.g. 1..4: a quad).
template <typename Op, int FIRST, int LAST>
CAKE_DEVICE float allreduce(float v) {
#pragma unroll
  for (int m = FIRST; m < LAST; m <<= 1) v = Op::apply(v, __shfl_xor_sync(0xffffffff, v, m));
  return v;
}

// (v, i) beats (w, j) for arg-min when v < w, or v == w and i < j (smaller index wins ties).
template <bool MIN>
CAKE_DEVICE bool arg_better(float v, int i, float w, int j) {
  return MIN ? (v < w || (v == w && i < j)) : (v > w || (v == w && i < j));
}

// Arg-reduce (v, i) over lanes lane ^ m, m = FIRST .. < LAST; every lane ends with the winner.
template <bool MIN, int FIRST, int LAST>
CAKE_DEVICE void arg_allreduce(float& v, int& i) {
#pragma unroll
  for (int m = FIRST; m < LAST; m <<= 1) {
    const float w = __shfl_xor_sync(0xffffffff, v, m);
    const int j = __shfl_xor_sync(0xffffffff, i, m);
    if (arg_better<MIN>(w, j, v, i)) {
      v = w;
      i = j;
    }
  }
}

// Inclusive prefix sum over the 32 lanes (shfl.sync.up.b32).
CAKE_DEVICE float inclusive_scan(float v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const float u = __shfl_up_sync(0xffffffff, v, d);
    if (lane >= d) v += u;
  }
  return v;
}

}  // namespace warp
}  // namespace cake
