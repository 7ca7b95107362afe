// cake/shared/swizzle.cuh: where element (r, c) of a shared tile lives.
//
// A [R, C] tile with swizzle span S bytes (S = 0: none) is stored as C * esize / S column
// panels of [R, S / esize] (one row = S bytes), each panel row-major, then the 16-byte
// chunk index of every address is XORed with its row within the 8-row repeat: the
// CU_TENSOR_MAP_SWIZZLE_{32,64,128}B patterns, which TMA writes and wgmma reads.
// Without swizzle the tile is plain row-major. Tile bases are aligned to the repeat (1024 B).
#pragma once
#include "../common.cuh"

namespace cake {
namespace smem {

// Byte offset of element (r, c) in a [ROWS, COLS] tile of ESIZE-byte elements.
template <int ROWS, int COLS, int ESIZE, int SPAN>
CAKE_DEVICE uint32_t offset(int r, int c) {
  if constexpr (SPAN == 0) {
    return static_cast<uint32_t>((r * COLS + c) * ESIZE);
  } else {
    constexpr int PANEL_COLS = SPAN / ESIZE;
    const int panel = c / PANEL_COLS;
    const uint32_t linear = static_cast<uint32_t>(panel * ROWS * SPAN + r * SPAN + (c % PANEL_COLS) * ESIZE);
    // SPAN 128: bits [4,7) ^= bits [7,10); 64: bits [4,6) ^= [7,9); 32: bit 4 ^= bit 7.
    constexpr uint32_t MASK = (SPAN / 16 - 1) << 4;
    return linear ^ ((linear >> 3) & MASK);
  }
}

template <typename T, int ROWS, int COLS, int SPAN>
CAKE_DEVICE T& at(void* base, int r, int c) {
  return *reinterpret_cast<T*>(static_cast<char*>(base) + offset<ROWS, COLS, sizeof(T), SPAN>(r, c));
}

// Elements (r, c) and (r, c + 1), c even, of a tile with an even row length: neighbours in
// every layout above (a 16-byte chunk keeps its aligned element pairs, and the XOR moves whole
// chunks), so they are one aligned 2-element word: one shared access for both, as floats.
template <typename T>
struct Pair;
template <>
struct Pair<bf16> {
  using type = __nv_bfloat162;
  CAKE_DEVICE static float2 to_float2(type v) { return __bfloat1622float2(v); }
  CAKE_DEVICE static type from_floats(float a, float b) { return __floats2bfloat162_rn(a, b); }
};
template <>
struct Pair<f16> {
  using type = __half2;
  CAKE_DEVICE static float2 to_float2(type v) { return __half22float2(v); }
  CAKE_DEVICE static type from_floats(float a, float b) { return __floats2half2_rn(a, b); }
};
template <>
struct Pair<float> {
  using type = float2;
  CAKE_DEVICE static float2 to_float2(type v) { return v; }
  CAKE_DEVICE static type from_floats(float a, float b) { return make_float2(a, b); }
};

template <typename T, int ROWS, int COLS, int SPAN>
CAKE_DEVICE typename Pair<T>::type& pair_at(void* base, int r, int c) {
  static_assert(COLS % 2 == 0, "element pairs need an even row length");
  return *reinterpret_cast<typename Pair<T>::type*>(static_cast<char*>(base) + offset<ROWS, COLS, sizeof(T), SPAN>(r, c));
}

template <typename T, int ROWS, int COLS, int SPAN>
CAKE_DEVICE float2 load_pair(void* base, int r, int c) {
  return Pair<T>::to_float2(pair_at<T, ROWS, COLS, SPAN>(base, r, c));
}

template <typename T, int ROWS, int COLS, int SPAN>
CAKE_DEVICE void store_pair(void* base, int r, int c, float a, float b) {
  pair_at<T, ROWS, COLS, SPAN>(base, r, c) = Pair<T>::from_floats(a, b);
}

}  // namespace smem
}  // namespace cake
