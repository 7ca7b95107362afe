// TMA round trip for runtime/tensor_map_gpu_test.py (sm_90+): each block loads one 16 x 32 fp32
// box of a 2-D tensor through a CUtensorMap built by runtime/tensor_map.py, then writes the whole
// box, out-of-bounds fill included, to a padded row-major output of `out_cols` columns.
#include <cuda.h>

#include <cstdint>

constexpr int kBoxRows = 16;
constexpr int kBoxCols = 32;

extern "C" __global__ void cake_tma_tile_copy(const __grid_constant__ CUtensorMap map, float* out, int out_cols) {
  __shared__ alignas(128) float tile[kBoxRows * kBoxCols];
  __shared__ alignas(8) uint64_t bar;
  const uint32_t bar_addr = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  const uint32_t tile_addr = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
  const int col0 = blockIdx.x * kBoxCols;
  const int row0 = blockIdx.y * kBoxRows;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_addr) : "memory");
    // Make the initialised barrier visible to the async proxy that TMA completes through.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr),
                 "r"(kBoxRows * kBoxCols * 4)
                 : "memory");
    // Coordinates are innermost first: {column, row}.
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            tile_addr),
        "l"(reinterpret_cast<uint64_t>(&map)), "r"(col0), "r"(row0), "r"(bar_addr)
        : "memory");
  }
  uint32_t done = 0;
  while (!done) {  // phase 0 completes when the box's bytes have landed
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar_addr)
        : "memory");
  }
  for (int i = threadIdx.x; i < kBoxRows * kBoxCols; i += blockDim.x) {
    out[int64_t(row0 + i / kBoxCols) * out_cols + col0 + i % kBoxCols] = tile[i];
  }
}
