// fp4kit_micro_overlap: does the register decode of NVFP4 weights overlap with wgmma on Hopper?
//
// One CTA per SM, 256 threads (two warpgroups, like the wgmma GEMM's consumers) or 512, runs
// a loop of "stages". A stage is, per warpgroup, the 4 wgmmas m64n32k16 of one 64-K stage of the
// 128x32 GEMM tile and/or the decode of one prepacked chunk per lane (fragment_decode.cuh, exactly
// the GEMM consumer's decode), with the GEMM's structure: wgmma batch k issued, wait_group 1,
// decode of stage k+1 into the other fragment set. Prints ns per stage for each workload and
// combination; if wgmma and decode overlapped, "both" would take max(wgmma, decode), not the sum.
//
// Finding (H100, session 13, docs/GEMM.md "Decode and wgmma do not overlap"): the sum, within a few
// per cent, in every arrangement here: the same warps, different warpgroups of one CTA (roles split),
// RS or SS wgmma, 2 or 4 warpgroups (integer-only and FP32-multiply decodes, measured with a
// prototype of this file, behaved the same: docs/perf/h100_2026-11-23_s13_wgmma_decode_overlap.txt).
// That is at N = 32; from N = 128 on the decode hides under the batch (fp4kit_micro_wgmma_width).
//
// Usage: fp4kit_micro_overlap [iterations]   (needs an sm_90 GPU; no arguments needed)
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
using fp4kit::gemm_impl::sm90::sw128_desc;
using T = __nv_bfloat16;
constexpr int kN = 32;  // wgmma N (tokens): the 128x32 tile

enum Mode { kRsOnly, kDecodeOnly, kRsDecode, kSsOnly, kSsDecode, kSplitRoles, kDecodeAloneX2 };

__device__ __forceinline__ void issue_ss(uint32_t a_s, uint32_t b, float (&acc)[kN / 2]) {
  using Op = cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
#pragma unroll
  for (int s = 0; s < 4; ++s)
    Op::fma(sw128_desc(a_s + 32 * s), sw128_desc(b + 32 * s), acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6],
            acc[7], acc[8], acc[9], acc[10], acc[11], acc[12], acc[13], acc[14], acc[15]);
}

template <int MODE, int NT>
__global__ void __launch_bounds__(NT, 1) overlap_kernel(const uint4* codes, const uint2* scales, int iters, float* out) {
  __shared__ __align__(1024) uint8_t smem[4096 + 4 * 8192];  // B tile [32][64] + an A slab per warpgroup (SS)
  fp4kit::micro::fill_smem_bf16(smem, int(sizeof(smem)));
  const uint32_t b = smem_u32(smem), a_s = b + 4096 + (threadIdx.x >> 7) * 8192;
  const uint4 w = codes[threadIdx.x];
  const uint2 sc = scales[threadIdx.x];
  float acc[kN / 2];
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
  uint32_t fa0[4][4], fa1[4][4], tmp[4][4];
  decode_chunk<T>(w, sc, fa0);
  decode_chunk<T>(w, sc, fa1);
  uint32_t chk = 0;
  auto decode = [&](uint32_t (&f)[4][4], int it) { fp4kit::micro::decode_stage_chunk<T>(w, sc, it, f); };
  auto fold = [&](const uint32_t (&f)[4][4]) { fp4kit::micro::fold_chunk(chk, f); };
  auto batch = [&](const uint32_t (&f)[4][4], bool ss) {
    fp4kit::micro::wgmma_batch(acc, [&] {
      if (ss) issue_ss(a_s, b, acc);
      else fp4kit::micro::issue_rs<T, kN>(f, b, acc);
    });
  };
  fp4kit::micro::stage_pairs(iters, fa0, fa1, [&](uint32_t (&cur)[4][4], uint32_t (&nxt)[4][4], int stage) {
    if constexpr (MODE == kDecodeOnly) {
      decode(nxt, stage);
      fold(nxt);
    } else if constexpr (MODE == kSplitRoles || MODE == kDecodeAloneX2) {
      // Warpgroup 0 runs both warpgroups' wgmmas, warpgroup 1 both decodes (or nothing runs on 0).
      if (threadIdx.x < 128) {
        if constexpr (MODE == kSplitRoles) {
          batch(fa0, false);
          batch(fa0, false);
        }
      } else {
        decode(tmp, stage);
        fold(tmp);
        decode(tmp, stage + 7);
        fold(tmp);
      }
    } else {
      batch(cur, MODE == kSsOnly || MODE == kSsDecode);
      if constexpr (MODE == kRsDecode) decode(nxt, stage);
      if constexpr (MODE == kSsDecode) {
        decode(tmp, stage);
        fold(tmp);
      }
    }
  });
  cute::warpgroup_wait<0>();
  fence_acc(acc);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) s += acc[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s + float(chk & 0xffu);
}

template <int MODE, int NT>
float ns_per_stage(const fp4kit::micro::ChunkInputs& in) {
  return fp4kit::micro::ns_per_stage("fp4kit_micro_overlap", in.iters, [&] {
    overlap_kernel<MODE, NT><<<in.sms, NT>>>(in.codes, in.scales, in.iters, in.out);
  });
}

}  // namespace

int main(int argc, char** argv) {
  fp4kit::micro::ChunkInputs in;
  if (const int rc = fp4kit::micro::setup("fp4kit_micro_overlap", argc, argv, in); rc >= 0) return rc;
  struct Row {
    const char* name;
    float ns;
  } rows[] = {
      {"2 WGs: RS wgmma only (4 per WG per stage)", ns_per_stage<kRsOnly, 256>(in)},
      {"2 WGs: decode only (1 chunk per lane per stage)", ns_per_stage<kDecodeOnly, 256>(in)},
      {"2 WGs: RS wgmma + decode (GEMM pattern)", ns_per_stage<kRsDecode, 256>(in)},
      {"2 WGs: SS wgmma only", ns_per_stage<kSsOnly, 256>(in)},
      {"2 WGs: SS wgmma + decode (to a checksum)", ns_per_stage<kSsDecode, 256>(in)},
      {"roles split: WG0 RS wgmma x2, WG1 decode x2", ns_per_stage<kSplitRoles, 256>(in)},
      {"roles split: WG1 decode x2 alone", ns_per_stage<kDecodeAloneX2, 256>(in)},
      {"4 WGs: RS wgmma only", ns_per_stage<kRsOnly, 512>(in)},
      {"4 WGs: decode only", ns_per_stage<kDecodeOnly, 512>(in)},
      {"4 WGs: RS wgmma + decode", ns_per_stage<kRsDecode, 512>(in)},
  };
  std::printf("%-50s %10s\n", "workload (one CTA per SM)", "ns/stage");
  for (const Row& r : rows) std::printf("%-50s %10.2f\n", r.name, r.ns);
  std::printf("overlap test (2 WGs): max(wgmma, decode) %.2f, sum %.2f, measured %.2f\n",
              rows[0].ns > rows[1].ns ? rows[0].ns : rows[1].ns, rows[0].ns + rows[1].ns, rows[2].ns);
  fp4kit::micro::release(in);
  return 0;
}
