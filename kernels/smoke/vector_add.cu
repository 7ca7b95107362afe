// Smoke kernel for the build and the GPU test path: out[i] = a[i] + alpha * b[i].
// It is real CUDA (vectorised loads where aligned, a grid-stride loop) so that the
// per-SM compile, the ptxas check and the GPU launch each exercise a true kernel.
#include <cstdint>

extern "C" __global__ void cake_smoke_axpy(float* __restrict__ out, const float* __restrict__ a,
                                           const float* __restrict__ b, float alpha, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* o4 = reinterpret_cast<float4*>(out);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 x = a4[i], y = b4[i];
    o4[i] = make_float4(x.x + alpha * y.x, x.y + alpha * y.y, x.z + alpha * y.z, x.w + alpha * y.w);
  }
  for (int64_t i = n4 * 4 + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] + alpha * b[i];
  }
}
