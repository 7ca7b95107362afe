// cake/warp/topk.cuh: running top-k lists in registers, and their exact rescoring.
//
// A list is K consecutive entries [OFF, OFF + K) of a thread's value array and index
// array (a fragment holds one list per row or column slot). Lists are sorted best
// first in "before" order: (v, i) before (w, j) when v is the better score, or v == w
// and i < j, so ties go to the smaller index. Every loop here is unrolled and every
// array index a compile-time constant, so the lists stay in registers.
#pragma once
#include "../common.cuh"

namespace cake {
namespace topk {

// The score a list starts with and an invalid entry gets.
template <bool LARGEST>
CAKE_DEVICE constexpr float worst() {
  return LARGEST ? -INFINITY : INFINITY;
}

// v is strictly better than w.
template <bool LARGEST>
CAKE_DEVICE bool beats(float v, float w) {
  return LARGEST ? v > w : v < w;
}

// v is at least as good as w.
template <bool LARGEST>
CAKE_DEVICE bool reaches(float v, float w) {
  return LARGEST ? v >= w : v <= w;
}

template <bool LARGEST>
CAKE_DEVICE bool before(float v, int i, float w, int j) {
  return beats<LARGEST>(v, w) || (v == w && i < j);
}

template <bool LARGEST>
CAKE_DEVICE float better(float v, float w) {
  return LARGEST ? fmaxf(v, w) : fminf(v, w);
}

// Sorted insertion of candidate (c, ci) into list [OFF, OFF + K). The candidate's index
// is larger than every entry's (candidates arrive in index order), so it goes after
// the entries whose score it only ties; a candidate that does not beat the last entry
// leaves the list unchanged.
template <int K, bool LARGEST, int OFF, int N>
CAKE_DEVICE void insert(float (&v)[N], int (&ix)[N], float c, int ci) {
  bool above[K];  // the candidate goes before entry s
#pragma unroll
  for (int s = 0; s < K; ++s) above[s] = beats<LARGEST>(c, v[OFF + s]);
#pragma unroll
  for (int s = K - 1; s > 0; --s) {
    v[OFF + s] = above[s - 1] ? v[OFF + s - 1] : (above[s] ? c : v[OFF + s]);
    ix[OFF + s] = above[s - 1] ? ix[OFF + s - 1] : (above[s] ? ci : ix[OFF + s]);
  }
  v[OFF] = above[0] ? c : v[OFF];
  ix[OFF] = above[0] ? ci : ix[OFF];
}

// Compare-exchange: afterwards (a, ai) comes before (b, bi).
template <bool LARGEST>
CAKE_DEVICE void order(float& a, int& ai, float& b, int& bi) {
  const bool swap = before<LARGEST>(b, bi, a, ai);
  const float ta = swap ? b : a;
  const int tai = swap ? bi : ai;
  b = swap ? a : b;
  bi = swap ? ai : bi;
  a = ta;
  ai = tai;
}

template <int K>
struct Pow2 {
  static constexpr int value = K <= 1 ? 1 : 2 * Pow2<(K + 1) / 2>::value;
};
template <>
struct Pow2<1> {
  static constexpr int value = 1;
};

// Sorts a bitonic sequence of P (a power of two) entries into before order.
template <int P, bool LARGEST>
CAKE_DEVICE void bitonic_merge(float (&c)[P], int (&ci)[P]) {
#pragma unroll
  for (int h = P / 2; h > 0; h >>= 1) {
#pragma unroll
    for (int s = 0; s < P; ++s) {
      if ((s & h) == 0) order<LARGEST>(c[s], ci[s], c[s | h], ci[s | h]);
    }
  }
}

// Merge list [OFF, OFF + K) with the lists of lanes lane ^ m, m = FIRST, 2 FIRST, ... < LAST:
// each step takes the partner's list, keeps the better of entry s and the partner's entry
// P - 1 - s (the best K of both are among them, as a bitonic sequence) and sorts it. Both
// partners compute the same merged list; the lists merged must be disjoint.
template <int K, bool LARGEST, int FIRST, int LAST, int OFF, int N>
CAKE_DEVICE void merge_lanes(float (&v)[N], int (&ix)[N]) {
  constexpr int P = Pow2<K>::value;
#pragma unroll
  for (int m = FIRST; m < LAST; m <<= 1) {
    float other[K];
    int other_i[K];
#pragma unroll
    for (int s = 0; s < K; ++s) {
      other[s] = __shfl_xor_sync(0xffffffffu, v[OFF + s], m);
      other_i[s] = __shfl_xor_sync(0xffffffffu, ix[OFF + s], m);
    }
    float c[P];
    int ci[P];
#pragma unroll
    for (int s = 0; s < P; ++s) {
      const int r = P - 1 - s;
      const float a = s < K ? v[OFF + (s < K ? s : 0)] : worst<LARGEST>();
      const int ai = s < K ? ix[OFF + (s < K ? s : 0)] : 0x7fffffff;
      const float b = r < K ? other[r < K ? r : 0] : worst<LARGEST>();
      const int bi = r < K ? other_i[r < K ? r : 0] : 0x7fffffff;
      const bool take_b = before<LARGEST>(b, bi, a, ai);
      c[s] = take_b ? b : a;
      ci[s] = take_b ? bi : ai;
    }
    bitonic_merge<P, LARGEST>(c, ci);
#pragma unroll
    for (int s = 0; s < K; ++s) {
      v[OFF + s] = c[s];
      ix[OFF + s] = ci[s];
    }
  }
}

// Re-sort list [OFF, OFF + K) (its scores changed): a bitonic sort over P entries.
template <int K, bool LARGEST, int OFF, int N>
CAKE_DEVICE void sort(float (&v)[N], int (&ix)[N]) {
  constexpr int P = Pow2<K>::value;
  float c[P];
  int ci[P];
#pragma unroll
  for (int s = 0; s < P; ++s) {
    c[s] = s < K ? v[OFF + (s < K ? s : 0)] : worst<LARGEST>();
    ci[s] = s < K ? ix[OFF + (s < K ? s : 0)] : 0x7fffffff;
  }
#pragma unroll
  for (int size = 2; size <= P; size <<= 1) {
#pragma unroll
    for (int h = size / 2; h > 0; h >>= 1) {
#pragma unroll
      for (int s = 0; s < P; ++s) {
        const int t = s ^ h;
        if (t > s) {
          if ((s & size) == 0) {
            order<LARGEST>(c[s], ci[s], c[t], ci[t]);
          } else {
            order<LARGEST>(c[t], ci[t], c[s], ci[s]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int s = 0; s < K; ++s) {
    v[OFF + s] = c[s];
    ix[OFF + s] = ci[s];
  }
}

template <bool LARGEST>
CAKE_DEVICE float worse(float v, float w) {
  return LARGEST ? fminf(v, w) : fmaxf(v, w);
}

// A list's pruning threshold from the lists of the G lanes lane ^ m (m = FIRST, 2 FIRST, ... <
// LAST) that share its row: nothing worse can enter the merged top k, because
// - the best of their k-th entries (KTH) is reached by the k entries of that lane's list, and
// - the worst of their entry ceil(k / G) - 1 (PART) is reached by ceil(k / G) entries of each
//   of the G lists, at least k in all.
// Entries still at their start value (the worst score, or a seeded bound) keep both valid.
template <bool LARGEST, int FIRST, int LAST>
CAKE_DEVICE float threshold(float kth, float part) {
#pragma unroll
  for (int m = FIRST; m < LAST; m <<= 1) {
    kth = better<LARGEST>(kth, __shfl_xor_sync(0xffffffffu, kth, m));
    part = worse<LARGEST>(part, __shfl_xor_sync(0xffffffffu, part, m));
  }
  return better<LARGEST>(kth, part);
}

// Scores of a query row q and database rows, f32 from the elements as stored.
enum Metric { kL2 = 1, kInnerProduct = 2, kCosine = 3 };

CAKE_DEVICE float warp_sum(float x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
  return x;
}

// Rescore list [OFF, OFF + K), the same in every lane of the warp: lane l takes features
// l, l + 32, ... < d of the query row q and of database row ix[s] (x + ix[s] * d); an index
// outside [0, rows) gets the worst score. Entries go in chunks of C: per chunk the feature loop
// (run time, to d) is the outer one and the chunk's entries the inner, unrolled one, so each step
// issues C independent row loads (one memory latency per step, not one per entry) while the
// chunk's row pointers and sums stay few registers. An invalid entry reads row 0 (rows >= 1).
template <int K, int METRIC, int OFF, int N, typename TQ, typename TX>
CAKE_DEVICE void rescore(float (&v)[N], const int (&ix)[N], const TQ* __restrict__ q, const TX* __restrict__ x,
                         long long rows, long long d) {
  constexpr bool LARGEST = METRIC != kL2;
  constexpr int C = 8;
  const int lane = threadIdx.x & 31;
  float qq = 0.0f;
  if (METRIC == kCosine) {
    for (long long f = lane; f < d; f += 32) {
      const float a = to_float(q[f]);
      qq = fmaf(a, a, qq);
    }
    qq = warp_sum(qq);
  }
#pragma unroll
  for (int s0 = 0; s0 < K; s0 += C) {
    const TX* row[C];
    float acc[C], xx[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = s0 + c < K ? ix[OFF + (s0 + c < K ? s0 + c : 0)] : 0;
      row[c] = x + (j >= 0 && j < rows ? (long long)j : 0ll) * d;
      acc[c] = 0.0f;
      xx[c] = 0.0f;
    }
#pragma unroll 2
    for (long long f = lane; f < d; f += 32) {
      const float qf = to_float(q[f]);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if (s0 + c < K) {
          const float xf = to_float(row[c][f]);
          if (METRIC == kL2) {
            const float diff = qf - xf;
            acc[c] = fmaf(diff, diff, acc[c]);
          } else {
            acc[c] = fmaf(qf, xf, acc[c]);
            if (METRIC == kCosine) xx[c] = fmaf(xf, xf, xx[c]);
          }
        }
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (s0 + c < K) {
        const int s = s0 + c < K ? s0 + c : 0;
        const int j = ix[OFF + s];
        const float dot = warp_sum(acc[c]);
        float score = dot;
        if (METRIC == kL2) score = fmaxf(dot, 0.0f);
        if (METRIC == kCosine) {
          const float norms = sqrtf(qq) * sqrtf(warp_sum(xx[c]));
          score = norms > 0.0f ? dot / norms : 0.0f;
        }
        v[OFF + s] = j >= 0 && j < rows ? score : worst<LARGEST>();
      }
    }
  }
}

}  // namespace topk
}  // namespace cake
