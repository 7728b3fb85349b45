// Small-M ("decode") NVFP4 GEMM: D[M,N] = alpha * A[M,K] · Bᵀ, M up to a few dozen tokens.
//
// The job at small M is to stream the weights at HBM speed. Each warp owns one 16-row chunk
// column of B and a range of 64-K chunks; per chunk a lane issues one 128-bit load of codes, one
// 64-bit load of scales and a few 32-bit activation loads (L1 hits: every warp of the GPU reads
// the same activations), decodes the weights in registers (fragment_decode.cuh) and runs
// mma.m16n8k16 with the weights as the 16-row A operand and the tokens as the 8-column B operand.
// U chunks are loaded before any is used so every warp keeps U*576 bytes in flight; two CTAs of
// eight warps per SM keep ~36 KB in flight, which is what HBM3 needs.
//
// K is split twice, deterministically: across the WARPS warps of a CTA (reduced through shared
// memory in warp order) and across `splits` CTAs (partials through the workspace; the last CTA to
// arrive sums them in split order and resets the tile's counter).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gemm/prepacked_layout.h"
#include "gemm/sm90/fragment_decode.cuh"

namespace fp4kit::gemm_impl::sm90 {

struct DecodeGemmArgs {
  int m, n, k;
  const void* a;             // W4A16: 16-bit [m, lda]; W4A4: codes [m, lda/2]
  int64_t lda;               // elements
  const uint8_t* a_scales;   // W4A4: 128x4 layout
  int64_t a_sf_padded_cols;  // roundup(k/16, 4)
  const uint4* b_codes;      // prepacked codes
  const uint2* b_scales;     // prepacked scales (8 bytes per (chunk, g))
  int64_t k_chunks;          // chunks per row tile
  const float* alpha;
  const void* bias;
  void* d;
  int64_t ldd;
  int chunks_per_warp;
  float* partials;           // splits > 1: [splits][gridDim.y][row_tiles][NT*8*16]
  int* counters;             // splits > 1: [gridDim.y][row_tiles], zero before the launch
};

__device__ __forceinline__ uint4 load_stream_u4(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 load_stream_u2(const uint2* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (sizeof(T) == 2 && std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <typename OutT>
__device__ __forceinline__ OutT to_out(float v) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}
template <typename OutT>
__device__ __forceinline__ float from_out(OutT v) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) return __bfloat162float(v);
  else return __half2float(v);
}

// T: MMA operand type (bf16 or half). OutT: output type. NT: 8-token MMA tiles per CTA.
// W4A4: A is NVFP4 (decoded to bf16), else A is T.
template <typename T, typename OutT, int NT, int WARPS, int U, bool W4A4>
__global__ void __launch_bounds__(WARPS * 32) decode_gemm_kernel(const DecodeGemmArgs args) {
  static_assert(!W4A4 || std::is_same_v<T, __nv_bfloat16>, "W4A4 decodes A to BF16");
  constexpr int kTokens = NT * 8;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, c = lane & 3;
  const int64_t tile = blockIdx.x;
  const int tok0 = blockIdx.y * kTokens;
  const int64_t split_chunks = int64_t(args.chunks_per_warp) * WARPS;
  const int64_t j_begin = blockIdx.z * split_chunks + int64_t(warp) * args.chunks_per_warp;
  const int64_t j_end = min(j_begin + args.chunks_per_warp, args.k_chunks);

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;

  const uint4* codes = args.b_codes + tile * args.k_chunks * 32 + lane;
  const uint2* scales = args.b_scales + tile * args.k_chunks * 8 + g;

  for (int64_t j0 = j_begin; j0 < j_end; j0 += U) {
    uint4 wq[U];
    uint2 ws[U];
    uint32_t xb[U][NT][4][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t j = j0 + u;
      const bool valid = j < j_end;
      wq[u] = valid ? load_stream_u4(codes + j * 32) : make_uint4(0, 0, 0, 0);
      ws[u] = valid ? load_stream_u2(scales + j * 8) : make_uint2(0, 0);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int tok = tok0 + nt * 8 + g;
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const int64_t kb = j * 64 + 16 * s;  // first k of this step's block
          const bool ok = valid && tok < args.m && kb < args.k;
          uint32_t b0 = 0, b1 = 0;
          if (ok) {
            const int64_t kk = kb + 2 * c;
            if constexpr (!W4A4) {
              const T* row = static_cast<const T*>(args.a) + int64_t(tok) * args.lda;
              b0 = *reinterpret_cast<const uint32_t*>(row + kk);
              b1 = *reinterpret_cast<const uint32_t*>(row + kk + 8);
            } else {
              const uint8_t* row = static_cast<const uint8_t*>(args.a) + int64_t(tok) * (args.lda / 2);
              const uint8_t sf = args.a_scales[format::sf_offset_128x4(tok, kb / 16, args.a_sf_padded_cols)];
              const uint32_t sx = e4m3_scale_bf16x2_shifted(sf);
              b0 = FragmentDecode<__nv_bfloat16>::mul(e2m1x2_to_bf16x2_shifted(row[kk / 2]), sx);
              b1 = FragmentDecode<__nv_bfloat16>::mul(e2m1x2_to_bf16x2_shifted(row[kk / 2 + 4]), sx);
            }
          }
          xb[u][nt][s][0] = b0;
          xb[u][nt][s][1] = b1;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint32_t words[4] = {wq[u].x, wq[u].y, wq[u].z, wq[u].w};
      uint32_t a[4][4];
      decode_step<T, 0>(words[0], ws[u].x, ws[u].y, a[0]);
      decode_step<T, 1>(words[1], ws[u].x, ws[u].y, a[1]);
      decode_step<T, 2>(words[2], ws[u].x, ws[u].y, a[2]);
      decode_step<T, 3>(words[3], ws[u].x, ws[u].y, a[3]);
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) mma_m16n8k16<T>(acc[nt], a[s], xb[u][nt][s][0], xb[u][nt][s][1]);
    }
  }

  // ---- reduce the warps' partial sums in warp order ----
  __shared__ float red[WARPS][kTokens][16];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    red[warp][nt * 8 + 2 * c][g] = acc[nt][0];
    red[warp][nt * 8 + 2 * c + 1][g] = acc[nt][1];
    red[warp][nt * 8 + 2 * c][g + 8] = acc[nt][2];
    red[warp][nt * 8 + 2 * c + 1][g + 8] = acc[nt][3];
  }
  __syncthreads();

  const int splits = gridDim.z;
  constexpr int kOut = kTokens * 16;
  float sum[(kOut + WARPS * 32 - 1) / (WARPS * 32)];
#pragma unroll
  for (int it = 0; it * WARPS * 32 < kOut; ++it) {
    const int idx = it * WARPS * 32 + threadIdx.x;
    float s = 0.0f;
    if (idx < kOut) {
#pragma unroll
      for (int w = 0; w < WARPS; ++w) s += red[w][idx / 16][idx % 16];
    }
    sum[it] = s;
  }

  if (splits > 1) {
    const int64_t tile_id = int64_t(blockIdx.y) * gridDim.x + tile;
    const int64_t tiles = int64_t(gridDim.y) * gridDim.x;
#pragma unroll
    for (int it = 0; it * WARPS * 32 < kOut; ++it) {
      const int idx = it * WARPS * 32 + threadIdx.x;
      if (idx < kOut) args.partials[(int64_t(blockIdx.z) * tiles + tile_id) * kOut + idx] = sum[it];
    }
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (threadIdx.x == 0) last = atomicAdd(&args.counters[tile_id], 1) == splits - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
#pragma unroll
    for (int it = 0; it * WARPS * 32 < kOut; ++it) {
      const int idx = it * WARPS * 32 + threadIdx.x;
      float s = 0.0f;
      if (idx < kOut)
        for (int z = 0; z < splits; ++z) s += __ldcg(&args.partials[(int64_t(z) * tiles + tile_id) * kOut + idx]);
      sum[it] = s;
    }
    if (threadIdx.x == 0) args.counters[tile_id] = 0;  // ready for the next launch
  }

  // ---- epilogue: alpha (FP32), bias, narrow ----
  const float alpha = *args.alpha;
  constexpr float kMul = W4A4 ? kWeightDecodeScale * kWeightDecodeScale : kWeightDecodeScale;
#pragma unroll
  for (int it = 0; it * WARPS * 32 < kOut; ++it) {
    const int idx = it * WARPS * 32 + threadIdx.x;
    const int tok = tok0 + idx / 16;
    const int64_t row = tile * 16 + idx % 16;
    if (idx < kOut && tok < args.m && row < args.n) {
      float v = (sum[it] * kMul) * alpha;
      if (args.bias) v += from_out<OutT>(static_cast<const OutT*>(args.bias)[row]);
      static_cast<OutT*>(args.d)[int64_t(tok) * args.ldd + row] = to_out<OutT>(v);
    }
  }
}

}  // namespace fp4kit::gemm_impl::sm90
