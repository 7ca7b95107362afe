// cake/block/select.cuh: wide top-k by filtering: candidates appended to global buffers
// (TopKCollect) and the k best of a buffer row selected, rescored and sorted (TopKSelect).
//
// Entries order as in cake/warp/topk.cuh ("before": the better score, ties to the smaller
// index). The select sorts in shared memory with a bitonic network over the smallest power of
// two that holds the row's candidates, so its cost follows the count, not the buffer's length.
#pragma once
#include <climits>
#include "../common.cuh"
#include "../warp/topk.cuh"

namespace cake {
namespace select {

// Append (v, j) to a candidate row: one slot by atomicAdd on the row's count; past the row's
// capacity only the count grows (the reader sees the overflow).
CAKE_DEVICE void append(float* __restrict__ values, int* __restrict__ indices, int* count, long long capacity,
                        float v, int j) {
  const int slot = atomicAdd(count, 1);
  if (slot < capacity) {
    values[slot] = v;
    indices[slot] = j;
  }
}

CAKE_DEVICE int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Sort n (a power of two) shared entries best first; every thread of the block takes part.
template <bool LARGEST>
CAKE_DEVICE void bitonic(float* v, int* ix, int n) {
  for (int size = 2; size <= n; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < n / 2; t += blockDim.x) {
        const int lo = 2 * t - (t & (stride - 1));
        const int hi = lo + stride;
        const float a = v[lo], b = v[hi];
        const int ai = ix[lo], bi = ix[hi];
        const bool up = (lo & size) == 0;
        const bool swap = up ? topk::before<LARGEST>(b, bi, a, ai) : topk::before<LARGEST>(a, ai, b, bi);
        if (swap) {
          v[lo] = b;
          v[hi] = a;
          ix[lo] = bi;
          ix[hi] = ai;
        }
      }
      __syncthreads();
    }
  }
}

// The exact score of query q against database row j (as topk::rescore: f32 sums split over the
// warp's lanes; every lane gets the total).
template <int METRIC, typename TQ, typename TX>
CAKE_DEVICE float exact(const TQ* __restrict__ q, const TX* __restrict__ row, long long d, float qq) {
  const int lane = threadIdx.x & 31;
  float acc = 0.0f, xx = 0.0f;
  for (long long f = lane; f < d; f += 32) {
    const float qf = to_float(q[f]);
    const float xf = to_float(row[f]);
    if (METRIC == topk::kL2) {
      const float diff = qf - xf;
      acc = fmaf(diff, diff, acc);
    } else {
      acc = fmaf(qf, xf, acc);
      if (METRIC == topk::kCosine) xx = fmaf(xf, xf, xx);
    }
  }
  const float dot = topk::warp_sum(acc);
  if (METRIC == topk::kL2) return fmaxf(dot, 0.0f);
  if (METRIC == topk::kCosine) {
    const float norms = sqrtf(qq) * sqrtf(topk::warp_sum(xx));
    return norms > 0.0f ? dot / norms : 0.0f;
  }
  return dot;
}

// The k best of a candidate row (the first min(*count, capacity) entries of values/indices), rescored
// exactly from the rows and sorted, into dist[0, k) and idx[0, k) (the worst score, index -1 past the
// candidates). `scratch` (a power of two) >= capacity and >= k shared entries; the whole block calls it.
template <bool LARGEST, int METRIC, typename TQ, typename TX, typename TI>
CAKE_DEVICE void select_rescore(const float* __restrict__ values, const int* __restrict__ indices, const int* count,
                                long long capacity, int k, const TQ* __restrict__ q, const TX* __restrict__ x,
                                long long rows, long long d, float* sv, int* si, float* __restrict__ dist,
                                TI* __restrict__ idx) {
  const long long counted = *count;
  const int n = (int)(counted < capacity ? counted : capacity);
  const int n2 = pow2_at_least(n > k ? n : (k > 1 ? k : 2));
  for (int t = threadIdx.x; t < n2; t += blockDim.x) {
    sv[t] = t < n ? values[t] : topk::worst<LARGEST>();
    si[t] = t < n ? indices[t] : INT_MAX;
  }
  __syncthreads();
  bitonic<LARGEST>(sv, si, n2);
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float qq = 0.0f;
  if (METRIC == topk::kCosine) {
    for (long long f = threadIdx.x & 31; f < d; f += 32) {
      const float a = to_float(q[f]);
      qq = fmaf(a, a, qq);
    }
    qq = topk::warp_sum(qq);
  }
  for (int s = warp; s < k; s += warps) {
    const int j = si[s];
    const bool valid = j >= 0 && j < rows;
    const float score = exact<METRIC>(q, x + (valid ? (long long)j : 0ll) * d, d, qq);
    if ((threadIdx.x & 31) == 0) {
      sv[s] = valid ? score : topk::worst<LARGEST>();
      si[s] = valid ? j : INT_MAX;
    }
  }
  const int k2 = pow2_at_least(k > 1 ? k : 2);
  for (int t = k + threadIdx.x; t < k2; t += blockDim.x) {
    sv[t] = topk::worst<LARGEST>();
    si[t] = INT_MAX;
  }
  __syncthreads();
  bitonic<LARGEST>(sv, si, k2);
  for (int t = threadIdx.x; t < k; t += blockDim.x) {
    dist[t] = sv[t];
    idx[t] = (TI)(si[t] == INT_MAX ? -1 : si[t]);
  }
  __syncthreads();  // the scratch is free again when the call returns
}

}  // namespace select
}  // namespace cake
