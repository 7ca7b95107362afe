// cake/global/atomics.cuh: atomic updates of global memory.
#pragma once
#include "../common.cuh"

namespace cake {
namespace global {

// red.global.add.f32 (atomicAdd with the result unused).
CAKE_DEVICE void atomic_add(float* p, float v) { atomicAdd(p, v); }
CAKE_DEVICE void atomic_add(int32_t* p, int32_t v) { atomicAdd(p, v); }
CAKE_DEVICE void atomic_min(float* p, float v) {
  // Floats order like sign-magnitude ints: use the int min for v >= 0 and unsigned max otherwise.
  if (v >= 0.0f) atomicMin(reinterpret_cast<int*>(p), __float_as_int(v));
  else atomicMax(reinterpret_cast<unsigned*>(p), __float_as_uint(v));
}
CAKE_DEVICE void atomic_max(float* p, float v) {
  if (v >= 0.0f) atomicMax(reinterpret_cast<int*>(p), __float_as_int(v));
  else atomicMin(reinterpret_cast<unsigned*>(p), __float_as_uint(v));
}
CAKE_DEVICE void atomic_min(int32_t* p, int32_t v) { atomicMin(p, v); }
CAKE_DEVICE void atomic_max(int32_t* p, int32_t v) { atomicMax(p, v); }

// Warp-aggregated atomic add: lanes whose destination key matches (match.any.sync.b64)
// are summed with full-warp shuffles and the lowest such lane issues one atomic. All 32
// lanes must call it; inactive lanes contribute nothing and issue nothing.
template <typename T>
CAKE_DEVICE void atomic_add_aggregated(T* p, T v, unsigned long long key, bool active) {
  const int lane = threadIdx.x & 31;
  const unsigned long long inactive = ~0ull;  // a key no active lane uses
  const uint32_t peers = __match_any_sync(0xffffffff, active ? key : inactive);
  const T mine = active ? v : T(0);
  T sum = T(0);
#pragma unroll
  for (int l = 0; l < 32; ++l) {
    const T w = __shfl_sync(0xffffffff, mine, l);
    if ((peers >> l) & 1u) sum += w;
  }
  if (active && lane == __ffs(peers) - 1) atomicAdd(p, sum);
}

}  // namespace global
}  // namespace cake
