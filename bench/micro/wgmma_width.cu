// fp4kit_micro_wgmma_width: how the time of the wgmma GEMM's stage grows with the wgmma N (tokens).
//
// One CTA per SM, two warpgroups (the GEMM's consumers), a loop of 64-K stages of a 128-row tile: per
// warpgroup the 4 RS wgmmas m64nNk16 of the stage, alone or with the decode of one prepacked chunk per
// lane (the GEMM's pattern: batch k issued, wait_group 1, stage k+1 decoded into the other fragment
// set; micro_harness.cuh). Prints ns per stage for N = 16 .. 256 and the tensor-only time per token.
//
// Question behind it (session 32, docs/PERF.md): the grouped 128x144 tile run at N = 128 for half its
// tiles and 16 for the overflow tiles (~11 % less tensor work) gained 0..3 % on MoE T = 4096. If
// wgmma time were proportional to N, it should have gained more.
//
// Finding (H200, session 32 run 4, docs/GEMM.md "Decode and wgmma do not overlap"): the wgmma time is
// linear in N from 32 on (2.22-2.37 ns per token and stage), and the decode adds 96-123 ns at N = 16..32,
// ~70 ns at 64 and 0-6 ns from 128 on: it hides under a long wgmma batch. Yet the MoE tiles' time was
// not set by their tensor work either (ncu: FC1's tensor-busy time fell 8 %, its duration 2 %).
//
// Usage: fp4kit_micro_wgmma_width [iterations]   (needs an sm_90 GPU; no arguments needed)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "micro_harness.cuh"
// N = 112, 144, 160: CuTe's extended GMMA table, after the main one (micro_harness.cuh includes it).
#include "gemm/sm90/gmma_rs_ext.cuh"

namespace {

using fp4kit::gemm_impl::sm90::decode_chunk;
using fp4kit::gemm_impl::sm90::fence_acc;
using fp4kit::gemm_impl::sm90::smem_u32;
using T = __nv_bfloat16;
constexpr int kMaxN = 256;

template <int N, bool kDecode>
__global__ void __launch_bounds__(256, 1) width_kernel(const uint4* codes, const uint2* scales, int iters, float* out) {
  __shared__ __align__(1024) uint8_t smem[kMaxN * 128];  // B tile [N][64] BF16, 128B rows
  fp4kit::micro::fill_smem_bf16(smem, N * 128);
  const uint32_t b = smem_u32(smem);
  const uint4 w = codes[threadIdx.x];
  const uint2 sc = scales[threadIdx.x];
  float acc[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
  uint32_t fa0[4][4], fa1[4][4];
  decode_chunk<T>(w, sc, fa0);
  decode_chunk<T>(w, sc, fa1);
  fp4kit::micro::stage_pairs(iters, fa0, fa1, [&](uint32_t (&cur)[4][4], uint32_t (&nxt)[4][4], int stage) {
    fp4kit::micro::wgmma_batch(acc, [&] { fp4kit::micro::issue_rs<T, N>(cur, b, acc); });
    if constexpr (kDecode) fp4kit::micro::decode_stage_chunk<T>(w, sc, stage, nxt);
  });
  cute::warpgroup_wait<0>();
  fence_acc(acc);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += acc[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

template <int N, bool kDecode>
float ns_per_stage(const fp4kit::micro::ChunkInputs& in) {
  return fp4kit::micro::ns_per_stage("fp4kit_micro_wgmma_width", in.iters, [&] {
    width_kernel<N, kDecode><<<in.sms, 256>>>(in.codes, in.scales, in.iters, in.out);
  });
}

template <int N>
void row(const fp4kit::micro::ChunkInputs& in) {
  const float alone = ns_per_stage<N, false>(in), both = ns_per_stage<N, true>(in);
  std::printf("%5d %14.2f %16.2f %18.3f\n", N, alone, both, alone / N);
}

}  // namespace

int main(int argc, char** argv) {
  fp4kit::micro::ChunkInputs in;
  if (const int rc = fp4kit::micro::setup("fp4kit_micro_wgmma_width", argc, argv, in); rc >= 0) return rc;
  std::printf("%5s %14s %16s %18s\n", "N", "wgmma ns/stage", "+decode ns/stage", "wgmma ns per token");
  row<16>(in);
  row<32>(in);
  row<64>(in);
  row<96>(in);
  row<112>(in);
  row<128>(in);
  row<144>(in);
  row<160>(in);
  row<192>(in);
  row<256>(in);
  fp4kit::micro::release(in);
  return 0;
}
