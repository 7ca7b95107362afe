// cake/warpgroup/fragments.cuh: register fragments and which element each thread holds.
//
// WgmmaAcc<N>: the [64, N] fp32 accumulator of one warpgroup's wgmma. Thread t of the
// warpgroup (warp w = t / 32, lane l) holds N / 2 values; value i sits at
//   row = 16 w + l / 4 + 8 ((i % 4) / 2),   col = 8 (i / 4) + 2 (l % 4) + (i % 2).
// WgmmaRows<T>: one value per accumulator row; a thread holds its two rows (i = 0, 1).
#pragma once
#include "../common.cuh"

namespace cake {

template <int N>
struct WgmmaAcc {
  static constexpr int kSize = N / 2;
  float d[N / 2];
  CAKE_DEVICE static int row(int i) { return 16 * ((threadIdx.x >> 5) & 3) + ((threadIdx.x & 31) >> 2) + 8 * ((i & 3) >> 1); }
  CAKE_DEVICE static int col(int i) { return 8 * (i >> 2) + 2 * (threadIdx.x & 3) + (i & 1); }
  // Which of the thread's two rows (WgmmaRows slot) value i belongs to.
  CAKE_DEVICE static int row_slot(int i) { return (i & 3) >> 1; }
};

template <typename T>
struct WgmmaRows {
  static constexpr int kSize = 2;
  T v[2];
  CAKE_DEVICE static int row(int i) { return 16 * ((threadIdx.x >> 5) & 3) + ((threadIdx.x & 31) >> 2) + 8 * i; }
  // Only lane l % 4 == 0 of each quad writes a row out (the other three hold copies).
  CAKE_DEVICE static bool writer() { return (threadIdx.x & 3) == 0; }
};

// WgmmaCols<T, N>: one value per column of a WgmmaAcc<N>: a thread holds the N / 4 columns
// 8 (s / 2) + 2 (l % 4) + s % 2 as slots s; the eight lanes l with the same l % 4 in each
// of the four warps hold the same columns.
template <typename T, int N>
struct WgmmaCols {
  static constexpr int kSize = N / 4;
  CAKE_DEVICE static int col(int s) { return 8 * (s >> 1) + 2 * (threadIdx.x & 3) + (s & 1); }
  // Which slot accumulator value i's column is.
  CAKE_DEVICE static constexpr int col_slot(int i) { return 2 * (i >> 2) + (i & 1); }
  // Lanes 0..3 of each warp write its columns out (the warp's other lanes hold copies).
  CAKE_DEVICE static bool writer() { return (threadIdx.x & 31) < 4; }
};

// mma.sync m16n8 accumulators of one warp tiled to [16 MI, 8 NI]: value i of tile (mi, ni)
// is at row 16 mi + l / 4 + 8 ((i % 4) / 2), col 8 ni + 2 (l % 4) + (i % 2).
template <int MI, int NI>
struct MmaAcc {
  static constexpr int kSize = MI * NI * 4;
  float d[MI * NI * 4];
  CAKE_DEVICE static int row(int i) { return 16 * ((i >> 2) / NI) + ((threadIdx.x & 31) >> 2) + 8 * ((i & 3) >> 1); }
  CAKE_DEVICE static int col(int i) { return 8 * ((i >> 2) % NI) + 2 * (threadIdx.x & 3) + (i & 1); }
  CAKE_DEVICE static int row_slot(int i) { return 2 * ((i >> 2) / NI) + ((i & 3) >> 1); }
};

// One value per row of an MmaAcc<MI, NI>: 2 MI rows per thread.
template <typename T, int MI>
struct MmaRows {
  static constexpr int kSize = 2 * MI;
  T v[2 * MI];
  CAKE_DEVICE static int row(int i) { return 16 * (i >> 1) + ((threadIdx.x & 31) >> 2) + 8 * (i & 1); }
  CAKE_DEVICE static bool writer() { return (threadIdx.x & 3) == 0; }
};

// mma.sync operand fragments as ldmatrix.x4 produces them: A [16 MI, 16 KI] and B [8 NI, 16 KI].
template <int MI, int KI>
struct MmaA {
  uint32_t r[MI * KI * 4];
};
template <int NI, int KI>
struct MmaB {
  uint32_t r[NI * KI * 2];
};

}  // namespace cake
