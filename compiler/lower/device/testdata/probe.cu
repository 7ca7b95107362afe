// Exercises every family of the device library so each target's compile catches a broken header.
#include <cake/cake.cuh>
extern "C" __global__ void probe(float* out, const __grid_constant__ CUtensorMap m) {
  __shared__ __align__(1024) uint8_t smem[4096];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) { cake::mbarrier::init(&bar, 1); cake::mbarrier::fence_init(); }
  cake::block::sync();
  if (threadIdx.x == 0) { cake::mbarrier::arrive_expect_tx(&bar, 4096); cake::tma::load<2>(smem, &m, &bar, {0, 0}); }
  cake::mbarrier::wait(&bar, 0);
  cake::WgmmaAcc<256> acc;
  uint64_t d = cake::wgmma::make_desc(smem, 16, 1024, cake::wgmma::Swizzle::B128);
  cake::wgmma::fence();
  cake::wgmma::mma_bf16_m64n256k16<0,0>(acc.d, d, d, 0);
  cake::wgmma::commit(); cake::wgmma::wait<0>();
  float v = acc.d[0]; int i = 0;
  cake::warp::arg_allreduce<true, 1, 4>(v, i);
  float tv[8] = {1e30f,1e30f,1e30f,1e30f,1e30f,1e30f,1e30f,1e30f}; int ti[8] = {0,0,0,0,0,0,0,0};
  cake::topk::insert<4, false, 4>(tv, ti, v, i);
  cake::topk::merge_lanes<4, false, 1, 4, 4>(tv, ti);
  cake::topk::sort<3, true, 0>(tv, ti);
  const float thr = cake::topk::threshold<false, 4, 32>(tv[7], tv[4]);
  cake::topk::rescore<4, cake::topk::kCosine, 4>(tv, ti, reinterpret_cast<const float*>(smem), reinterpret_cast<const cake::bf16*>(out), 100, 48);
  cake::global::atomic_add_aggregated(out, tv[0] + thr, ti[0], true);
  cake::setmaxnreg_inc<232>();
  if (cake::elect_one()) out[threadIdx.x] = v + cake::math::exp(acc.d[1]) + cake::smem::at<float,64,64,128>(smem, 3, 5);
}
