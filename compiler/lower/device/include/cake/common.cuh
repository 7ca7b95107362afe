// cake/common.cuh: types, qualifiers and address helpers shared by the whole device library.
//
// Layout of the library mirrors the hardware hierarchy:
//   thread/    per-thread math            warp/      lane shuffles, ldmatrix, mma.sync, atomics
//   warpgroup/ wgmma, fragments, setmaxnreg   block/ bar.sync, named barriers
//   shared/    mbarrier, TMA, cp.async, swizzled addressing
//   global/    stores          tensor/    sm_100a tensor memory and tcgen05
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#define CAKE_DEVICE __device__ __forceinline__

// Arch-specific feature gates (nvcc defines these for sm_90a / sm_100a targets).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CAKE_SM90A 1
#endif
#if defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM101_ALL)
#define CAKE_SM100A 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CAKE_SM90_PLUS 1
#endif

namespace cake {

using bf16 = __nv_bfloat16;
using f16 = __half;

// 32-bit shared-window address of a generic pointer into shared memory: cvta.to.shared.
CAKE_DEVICE uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Floor division and modulo (the IR's semantics) for operands of any sign.
template <typename T>
CAKE_DEVICE T floordiv(T a, T b) {
  T q = a / b;
  return q - (((a % b) != 0) && ((a < 0) != (b < 0)));
}
template <typename T>
CAKE_DEVICE T floormod(T a, T b) {
  T r = a % b;
  return r + (((r != 0) && ((r < 0) != (b < 0))) ? b : T(0));
}
template <typename T>
CAKE_DEVICE T ceildiv(T a, T b) {
  return -floordiv<T>(-a, b);
}

CAKE_DEVICE long long imin(long long a, long long b) { return a < b ? a : b; }
CAKE_DEVICE long long imax(long long a, long long b) { return a > b ? a : b; }

// Element conversions used by stores and elementwise copies.
template <typename To>
CAKE_DEVICE To convert(float x);
template <>
CAKE_DEVICE float convert<float>(float x) { return x; }
template <>
CAKE_DEVICE bf16 convert<bf16>(float x) { return __float2bfloat16_rn(x); }
template <>
CAKE_DEVICE f16 convert<f16>(float x) { return __float2half_rn(x); }
template <>
CAKE_DEVICE int32_t convert<int32_t>(float x) { return static_cast<int32_t>(x); }
template <>
CAKE_DEVICE double convert<double>(float x) { return x; }

CAKE_DEVICE float to_float(float x) { return x; }
CAKE_DEVICE float to_float(double x) { return static_cast<float>(x); }
CAKE_DEVICE float to_float(bf16 x) { return __bfloat162float(x); }
CAKE_DEVICE float to_float(f16 x) { return __half2float(x); }
CAKE_DEVICE float to_float(int32_t x) { return static_cast<float>(x); }
CAKE_DEVICE float to_float(long long x) { return static_cast<float>(x); }
CAKE_DEVICE float to_float(long x) { return static_cast<float>(x); }
CAKE_DEVICE float to_float(uint32_t x) { return static_cast<float>(x); }
CAKE_DEVICE float to_float(int8_t x) { return static_cast<float>(x); }
CAKE_DEVICE float to_float(uint8_t x) { return static_cast<float>(x); }

// Value conversion for copies: integers stay exact (an int64 row index is no float),
// everything else goes through fp32.
template <typename To, typename From>
CAKE_DEVICE To cast(From x) {
  if constexpr (std::is_integral<To>::value && std::is_integral<From>::value) {
    return static_cast<To>(x);
  } else if constexpr (std::is_integral<To>::value) {
    return static_cast<To>(to_float(x));
  } else {
    return convert<To>(to_float(x));
  }
}

}  // namespace cake
