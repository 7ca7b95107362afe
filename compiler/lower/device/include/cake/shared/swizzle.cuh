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

}  // namespace smem
}  // namespace cake
