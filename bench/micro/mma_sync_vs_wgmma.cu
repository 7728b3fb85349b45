// fp4kit_micro_mma: what does the tensor work of a small-M decode chunk cost on Hopper, with
// mma.sync (the dp decode kernels) or with wgmma (RS form, weights from registers)?
//
// One CTA per SM, 8 or 16 warps. A "stage" is, per warp, one prepacked 16-row x 64-K chunk: its
// register decode (the GEMM's own decode_chunk) and/or its tensor work against N tokens:
//   mma.sync: 4 k16 steps x N/8 mma.m16n8k16 (the dp kernels' compute_chunk),
//   wgmma:    4 wgmma.m64nNk16 per warpgroup (each warp supplies its 16 rows), one batch in flight.
// Prints ns per stage per SM; the sum of decode and tensor time is what the GEMM pays (session 13:
// decode and tensor work of a sub-partition serialize), so the tensor column is the lever.
//
// Usage: fp4kit_micro_mma [iterations]   (needs an sm_90 GPU)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gemm/sm90/wgmma_kernel.cuh"
#include "micro_harness.cuh"

namespace {

using fp4kit::gemm_impl::sm90::decode_chunk;
using fp4kit::gemm_impl::sm90::fence_acc;
using fp4kit::gemm_impl::sm90::smem_u32;
using T = __nv_bfloat16;

enum Mode { kDecodeOnly, kSyncOnly, kSyncDecode, kWgOnly, kWgDecode };

__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int MODE, int N, int NT>
__global__ void __launch_bounds__(NT, 1) mma_kernel(const uint4* codes, const uint2* scales, int iters, float* out) {
  __shared__ __align__(1024) uint8_t smem[8192];  // wgmma B tile [N <= 64][64] 16-bit, 128B swizzle
  fp4kit::micro::fill_smem_bf16(smem, int(sizeof(smem)));
  const uint32_t b = smem_u32(smem);
  const uint4 w = codes[threadIdx.x];
  const uint2 sc = scales[threadIdx.x];
  constexpr int kTiles = N / 8;
  float acc_s[kTiles][4];  // mma.sync accumulators
  float acc_w[N / 2];      // wgmma accumulators
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc_s[t][i] = 0.f;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) acc_w[i] = 0.f;
  uint32_t act[kTiles][4][2];
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      act[t][s][0] = 0x3c003c00u ^ ((threadIdx.x * 7 + t * 3 + s) & 0x00ff00ffu);
      act[t][s][1] = 0x3c003c00u ^ ((threadIdx.x * 5 + t + s * 11) & 0x00ff00ffu);
    }
  uint32_t fa0[4][4], fa1[4][4];
  decode_chunk<T>(w, sc, fa0);
  decode_chunk<T>(w, sc, fa1);
  uint32_t chk = 0;
  auto decode = [&](uint32_t (&f)[4][4], int it) { fp4kit::micro::decode_stage_chunk<T>(w, sc, it, f); };
  auto sync_mma = [&](const uint32_t (&f)[4][4]) {
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int t = 0; t < kTiles; ++t) mma16816(acc_s[t], f[s], act[t][s][0], act[t][s][1]);
  };
  auto wg_batch = [&](const uint32_t (&f)[4][4]) {
    fp4kit::micro::wgmma_batch(acc_w, [&] { fp4kit::micro::issue_rs<T, N>(f, b, acc_w); });
  };
  fp4kit::micro::stage_pairs(iters, fa0, fa1, [&](uint32_t (&cur)[4][4], uint32_t (&nxt)[4][4], int stage) {
    if constexpr (MODE == kDecodeOnly) {
      decode(nxt, stage);
      fp4kit::micro::fold_chunk(chk, nxt);
    } else if constexpr (MODE == kSyncOnly) {
      sync_mma(cur);
    } else if constexpr (MODE == kSyncDecode) {
      decode(nxt, stage);
      sync_mma(nxt);
    } else if constexpr (MODE == kWgOnly) {
      wg_batch(cur);
    } else {
      wg_batch(cur);
      decode(nxt, stage);
    }
  });
  cute::warpgroup_wait<0>();
  fence_acc(acc_w);
  float s = 0.f;
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) s += acc_s[t][i];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += acc_w[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s + float(chk & 0xffu);
}

template <int MODE, int N, int NT>
float ns_per_stage(const fp4kit::micro::ChunkInputs& in) {
  return fp4kit::micro::ns_per_stage("fp4kit_micro_mma", in.iters, [&] {
    mma_kernel<MODE, N, NT><<<in.sms, NT>>>(in.codes, in.scales, in.iters, in.out);
  });
}

template <int N, int NT>
void row(const fp4kit::micro::ChunkInputs& in) {
  const float d = ns_per_stage<kDecodeOnly, N, NT>(in);
  const float s = ns_per_stage<kSyncOnly, N, NT>(in);
  const float sd = ns_per_stage<kSyncDecode, N, NT>(in);
  const float g = ns_per_stage<kWgOnly, N, NT>(in);
  const float gd = ns_per_stage<kWgDecode, N, NT>(in);
  std::printf("%7d %6d %10.2f %12.2f %14.2f %10.2f %12.2f\n", N, NT / 32, d, s, sd, g, gd);
}

}  // namespace

int main(int argc, char** argv) {
  fp4kit::micro::ChunkInputs in;
  if (const int rc = fp4kit::micro::setup("fp4kit_micro_mma", argc, argv, in); rc >= 0) return rc;
  std::printf("ns per stage per SM (one CTA per SM; a stage = one 16x64 chunk per warp)\n");
  std::printf("%7s %6s %10s %12s %14s %10s %12s\n", "tokens", "warps", "decode", "mma.sync", "decode+sync",
              "wgmma", "wgmma+dec");
  row<8, 256>(in);
  row<8, 512>(in);
  row<16, 256>(in);
  row<16, 512>(in);
  row<32, 256>(in);
  row<32, 512>(in);
  fp4kit::micro::release(in);
  return 0;
}
