// cake/thread/math.cuh: per-thread elementwise math (the ElementwiseOp table's device side).
#pragma once
#include "../common.cuh"

namespace cake {
namespace math {

// e^x as ex2.approx.ftz.f32 of x * log2(e): the SFU path.
CAKE_DEVICE float exp(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
}

// ln(x) as lg2.approx.f32 times ln(2).
CAKE_DEVICE float log(float x) {
  float y;
  asm("lg2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y * 0.6931471805599453f;
}

// 1/sqrt(x): rsqrt.approx.f32.
CAKE_DEVICE float rsqrt(float x) {
  float y;
  asm("rsqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// sqrt(x): sqrt.rn.f32.
CAKE_DEVICE float sqrt(float x) { return __fsqrt_rn(x); }

// 1 / (1 + e^-x).
CAKE_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

// log(1 + e^x), linear above 20 where e^x dominates.
CAKE_DEVICE float softplus(float x) { return x > 20.0f ? x : log(1.0f + exp(x)); }

// a * b + c: fma.rn.f32.
CAKE_DEVICE float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }

// a != 0 ? b : c: selp.
CAKE_DEVICE float select(float a, float b, float c) { return a != 0.0f ? b : c; }

}  // namespace math
}  // namespace cake
