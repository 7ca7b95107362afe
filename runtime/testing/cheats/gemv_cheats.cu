// The cheat suite: an honest y = A @ x kernel (fp32, A row-major m x n) and one kernel per
// known way an agent-written kernel fools a harness. runtime/cheats_gpu_test.py proves the
// harness rejects each with the right reason; runtime/testing/cheat_bindings.py launches them
// (256 threads per block, one warp per row, grid-stride over rows). The side-stream cheat is
// the honest kernel launched on another stream, so it has no kernel of its own here.
#include <cstdint>

namespace {

constexpr int kWarp = 32;

__device__ int lane() { return threadIdx.x % kWarp; }

// One warp's dot product of row `row` of a with x, over columns [0, cols).
__device__ float row_dot(const float* a, const float* x, int64_t row, int n, int cols) {
  float s = 0.f;
  for (int j = lane(); j < cols; j += kWarp) s += a[row * n + j] * x[j];
  for (int offset = kWarp / 2; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  return s;
}

// Calls body(row) for every row this warp owns: one warp per row, grid-stride.
template <typename Body>
__device__ void for_each_row(int m, Body body) {
  const int warps_per_block = blockDim.x / kWarp;
  const int64_t stride = int64_t(gridDim.x) * warps_per_block;
  for (int64_t row = int64_t(blockIdx.x) * warps_per_block + threadIdx.x / kWarp; row < m; row += stride) body(row);
}

}  // namespace

// Honest.
extern "C" __global__ void cake_gemv(float* y, const float* a, const float* x, int m, int n) {
  for_each_row(m, [&](int64_t row) {
    const float s = row_dot(a, x, row, n, n);
    if (lane() == 0) y[row] = s;
  });
}

// Cheat: returns cached results. The first launch computes y and keeps it in a device buffer;
// once cake_gemv_cached_commit has run (the binding launches it after every call), later
// launches copy the buffer instead of computing.
constexpr int kCacheRows = 1 << 16;
__device__ float g_cache[kCacheRows];
__device__ int g_cache_valid;

extern "C" __global__ void cake_gemv_cached(float* y, const float* a, const float* x, int m, int n) {
  const bool valid = g_cache_valid != 0;  // constant during a launch: only the commit kernel sets it
  for_each_row(m, [&](int64_t row) {
    if (valid && row < kCacheRows) {
      if (lane() == 0) y[row] = g_cache[row];
      return;
    }
    const float s = row_dot(a, x, row, n, n);
    if (lane() == 0) {
      y[row] = s;
      if (row < kCacheRows) g_cache[row] = s;
    }
  });
}

extern "C" __global__ void cake_gemv_cached_commit() { g_cache_valid = 1; }

// Cheat: writes nothing.
extern "C" __global__ void cake_gemv_writes_nothing(float* y, const float* a, const float* x, int m, int n) {}

// Cheat: returns zeros.
extern "C" __global__ void cake_gemv_zeros(float* y, const float* a, const float* x, int m, int n) {
  for_each_row(m, [&](int64_t row) {
    if (lane() == 0) y[row] = 0.f;
  });
}

// Cheat: correct only at the tuned shape. Processes columns in chunks of 128 with no tail loop:
// exact when n % 128 == 0 (the tuned n = 1024), silently drops the last n % 128 columns otherwise.
extern "C" __global__ void cake_gemv_tuned_shape_only(float* y, const float* a, const float* x, int m, int n) {
  for_each_row(m, [&](int64_t row) {
    const float s = row_dot(a, x, row, n, n / 128 * 128);
    if (lane() == 0) y[row] = s;
  });
}

// Cheat: mutates its input. Reuses each consumed row of A as scratch (zeroes it); y is right.
extern "C" __global__ void cake_gemv_mutates_input(float* y, float* a, const float* x, int m, int n) {
  for_each_row(m, [&](int64_t row) {
    const float s = row_dot(a, x, row, n, n);  // the shuffle reduction orders every lane's reads first
    for (int j = lane(); j < n; j += kWarp) a[row * n + j] = 0.f;
    if (lane() == 0) y[row] = s;
  });
}

// Cheat: NaN on some inputs. A "fast path" flags rows with any |a| > 1e3 as overflow-prone and
// writes NaN for them instead of handling them: right on unit-scale data, NaN on large data.
extern "C" __global__ void cake_gemv_nan_on_large(float* y, const float* a, const float* x, int m, int n) {
  for_each_row(m, [&](int64_t row) {
    const float s = row_dot(a, x, row, n, n);
    bool large = false;
    for (int j = lane(); j < n; j += kWarp) large |= fabsf(a[row * n + j]) > 1e3f;
    large = __any_sync(0xffffffffu, large);
    if (lane() == 0) y[row] = large ? __int_as_float(0x7fffffff) : s;
  });
}

// Fault: writes through a bad pointer, y's address with its high bits lost (the never-mapped
// first pages). An explicit st.global, so the address cannot land in a shared-memory window.
extern "C" __global__ void cake_gemv_illegal_address(float* y, const float* a, const float* x, int m, int n) {
  float* bad = reinterpret_cast<float*>(reinterpret_cast<uintptr_t>(y) & 0xfffu);
  for_each_row(m, [&](int64_t row) {
    const float s = row_dot(a, x, row, n, n);
    if (lane() == 0) asm volatile("st.global.f32 [%0], %1;" ::"l"(bad + row), "f"(s) : "memory");
  });
}

// Fault: never finishes. Waits for a flag no producer ever sets (the missing-arrive deadlock).
__device__ int g_never_set;

extern "C" __global__ void cake_gemv_hang(float* y, const float* a, const float* x, int m, int n) {
  while (*static_cast<volatile int*>(&g_never_set) == 0) __nanosleep(1000);
  for_each_row(m, [&](int64_t row) {
    const float s = row_dot(a, x, row, n, n);
    if (lane() == 0) y[row] = s;
  });
}
