// cake/block/barrier.cuh: block-wide and named hardware barriers.
#pragma once
#include "../common.cuh"

namespace cake {
namespace block {

// bar.sync 0: every thread of the block (it counts arrivals, not code locations, so roles
// may reach it from different places).
CAKE_DEVICE void sync() { asm volatile("bar.sync 0;" ::: "memory"); }

// bar.sync id, threads: wait until `threads` threads (a multiple of 32) arrived at barrier `id`.
CAKE_DEVICE void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// bar.arrive id, threads: arrive without waiting (producer side of a named barrier).
CAKE_DEVICE void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace block
}  // namespace cake
