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

namespace {

using fp4kit::gemm_impl::sm90::decode_chunk;
using fp4kit::gemm_impl::sm90::fence_acc;
using fp4kit::gemm_impl::sm90::gmma_rs;
using fp4kit::gemm_impl::sm90::smem_u32;
using fp4kit::gemm_impl::sm90::sw128_desc;
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
  for (int i = threadIdx.x; i < int(sizeof(smem) / 4); i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3c003c00u ^ (i * 2654435761u & 0x00ff00ffu);  // small random BF16
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
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
  auto decode = [&](uint32_t (&f)[4][4], int it) {  // a chunk that differs per stage (nothing hoisted)
    uint4 x = w;
    x.x ^= it; x.y ^= it << 1; x.z ^= it << 2; x.w ^= it << 3;
    uint2 y = sc;
    y.x ^= it << 5; y.y ^= it << 7;
    decode_chunk<T>(x, y, f);
  };
  auto sync_mma = [&](const uint32_t (&f)[4][4]) {
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int t = 0; t < kTiles; ++t) mma16816(acc_s[t], f[s], act[t][s][0], act[t][s][1]);
  };
  auto wg_batch = [&](const uint32_t (&f)[4][4]) {
    fence_acc(acc_w);
    cute::warpgroup_arrive();
#pragma unroll
    for (int s = 0; s < 4; ++s) gmma_rs<T, N>(f[s], sw128_desc(b + 32 * s), acc_w);
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<1>();
  };
  for (int it = 0; it < iters; it += 2) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      auto& cur = h ? fa1 : fa0;
      auto& nxt = h ? fa0 : fa1;
      if constexpr (MODE == kDecodeOnly) {
        decode(nxt, it + h);
#pragma unroll
        for (int s = 0; s < 4; ++s)
#pragma unroll
          for (int j = 0; j < 4; ++j) chk ^= nxt[s][j];
      } else if constexpr (MODE == kSyncOnly) {
        sync_mma(cur);
      } else if constexpr (MODE == kSyncDecode) {
        decode(nxt, it + h);
        sync_mma(nxt);
      } else if constexpr (MODE == kWgOnly) {
        wg_batch(cur);
      } else {
        wg_batch(cur);
        decode(nxt, it + h);
      }
    }
  }
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
float ns_per_stage(const uint4* codes, const uint2* scales, float* out, int iters, int sms) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  mma_kernel<MODE, N, NT><<<sms, NT>>>(codes, scales, iters, out);  // warm-up
  cudaEventRecord(e0);
  constexpr int kReps = 5;
  for (int r = 0; r < kReps; ++r) mma_kernel<MODE, N, NT><<<sms, NT>>>(codes, scales, iters, out);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "fp4kit_micro_mma: %s\n", cudaGetErrorString(err));
    std::exit(1);
  }
  return ms / kReps * 1e6f / float(iters);
}

template <int N, int NT>
void row(const uint4* codes, const uint2* scales, float* out, int iters, int sms) {
  const float d = ns_per_stage<kDecodeOnly, N, NT>(codes, scales, out, iters, sms);
  const float s = ns_per_stage<kSyncOnly, N, NT>(codes, scales, out, iters, sms);
  const float sd = ns_per_stage<kSyncDecode, N, NT>(codes, scales, out, iters, sms);
  const float g = ns_per_stage<kWgOnly, N, NT>(codes, scales, out, iters, sms);
  const float gd = ns_per_stage<kWgDecode, N, NT>(codes, scales, out, iters, sms);
  std::printf("%7d %6d %10.2f %12.2f %14.2f %10.2f %12.2f\n", N, NT / 32, d, s, sd, g, gd);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : (1 << 16);
  if (iters <= 0) {
    std::fprintf(stderr, "fp4kit_micro_mma: iterations must be positive\n");
    return 2;
  }
  iters = (iters + 1) & ~1;  // the loop runs stages in pairs
  int dev = 0, major = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
      major != 9) {
    std::printf("fp4kit_micro_mma: skipped (needs an sm_90 GPU)\n");
    return 0;
  }
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  uint4* codes = nullptr;
  uint2* scales = nullptr;
  float* out = nullptr;
  cudaMalloc(&codes, 512 * sizeof(uint4));
  cudaMalloc(&scales, 512 * sizeof(uint2));
  cudaMalloc(&out, size_t(sms) * 512 * sizeof(float));
  uint32_t h[512 * 4];
  for (int i = 0; i < 512 * 4; ++i) h[i] = 0x9e3779b9u * uint32_t(i + 1);
  cudaMemcpy(codes, h, 512 * sizeof(uint4), cudaMemcpyHostToDevice);
  for (int i = 0; i < 512 * 2; ++i) h[i] = 0x30303030u + (uint32_t(i) & 0x0f0f0f0fu);  // E4M3 scales near 1
  cudaMemcpy(scales, h, 512 * sizeof(uint2), cudaMemcpyHostToDevice);
  std::printf("ns per stage per SM (one CTA per SM; a stage = one 16x64 chunk per warp)\n");
  std::printf("%7s %6s %10s %12s %14s %10s %12s\n", "tokens", "warps", "decode", "mma.sync", "decode+sync",
              "wgmma", "wgmma+dec");
  row<8, 256>(codes, scales, out, iters, sms);
  row<8, 512>(codes, scales, out, iters, sms);
  row<16, 256>(codes, scales, out, iters, sms);
  row<16, 512>(codes, scales, out, iters, sms);
  row<32, 256>(codes, scales, out, iters, sms);
  row<32, 512>(codes, scales, out, iters, sms);
  cudaFree(codes);
  cudaFree(scales);
  cudaFree(out);
  return 0;
}
