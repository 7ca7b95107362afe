// cake/warp/reduce.cuh: reductions, arg-reductions and top-k merges across lanes
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

// Insert (v, i) into a sorted running list of K (best first), dropping the worst.
template <int K, bool MIN>
CAKE_DEVICE void topk_insert(float (&vals)[K], int (&idx)[K], float v, int i) {
  if (!arg_better<MIN>(v, i, vals[K - 1], idx[K - 1])) return;
  bool placed = false;
#pragma unroll
  for (int s = K - 1; s > 0; --s) {
    if (!placed) {
      if (arg_better<MIN>(v, i, vals[s - 1], idx[s - 1])) {
        vals[s] = vals[s - 1];
        idx[s] = idx[s - 1];
      } else {
        vals[s] = v;
        idx[s] = i;
        placed = true;
      }
    }
  }
  if (!placed) {
    vals[0] = v;
    idx[0] = i;
  }
}

// Merge the sorted lists held by lanes lane ^ m (m = FIRST .. < LAST) so each lane holds the
// best K of their union.
template <int K, bool MIN, int FIRST, int LAST>
CAKE_DEVICE void topk_allmerge(float (&vals)[K], int (&idx)[K]) {
#pragma unroll
  for (int m = FIRST; m < LAST; m <<= 1) {
    float ov[K];
    int oi[K];
#pragma unroll
    for (int s = 0; s < K; ++s) {
      ov[s] = __shfl_xor_sync(0xffffffff, vals[s], m);
      oi[s] = __shfl_xor_sync(0xffffffff, idx[s], m);
    }
#pragma unroll
    for (int s = 0; s < K; ++s) topk_insert<K, MIN>(vals, idx, ov[s], oi[s]);
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
