// Launch features of runtime/loader.py, for runtime/loader_gpu_test.py.
#include <cstdint>

// Dynamic shared memory beyond the 48 KB default: every block fills `words` 32-bit words of it
// and sums them back, so the launch works, and the sum is right, only if the opt-in took effect.
extern "C" __global__ void cake_dynamic_smem_sum(unsigned long long* out, int words) {
  extern __shared__ unsigned int smem[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) smem[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long s = 0;
    for (int i = 0; i < words; ++i) s += smem[i];
    out[blockIdx.x] = s;
  }
}

// Thread-block clusters (sm_90+): every block records its rank within its cluster.
extern "C" __global__ void cake_cluster_rank(int* out) {
#if __CUDA_ARCH__ >= 900
  unsigned int rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) out[blockIdx.x] = int(rank);
#else
  if (threadIdx.x == 0) out[blockIdx.x] = -1;  // no clusters before sm_90
#endif
}
