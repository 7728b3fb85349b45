// The TMA quantization kernel (large problems; see quant_dispatch.h for when it runs).
//
// Structure: a persistent grid of CTAs with 1 producer warp + 8 consumer warps (288 threads).
// The input is cut into tiles of kTileRows x kTileCols elements (16 x 256: 8 KB of BF16/FP16,
// 16 KB of FP32) in row-major tile order (K fastest). CTA b takes tiles b, b + gridDim.x, ...
// The producer (one elected lane) streams them with bulk tensor copies (cp.async.bulk.tensor.2d,
// tensor map from cuTensorMapEncodeTiled) into a ring of kStages shared-memory buffers, each guarded
// by a "full" mbarrier (TMA transaction bytes) and an "empty" mbarrier (one arrival per consumer
// warp). Out-of-bounds parts of edge tiles are zero-filled by the TMA unit; consumers skip them.
//
// Consumer thread c (0..255) owns item (row c/16, item c%16) of every tile: it copies its 32/64
// bytes out of shared memory into registers, releases the buffer (warp-level arrive) and then runs
// the same per-item code as the vectorized kernel (item_quantize.cuh), storing codes and scale
// bytes straight to global memory. MX partners (items 2i, 2i+1 of a row) are adjacent lanes.
//
// Why: the copy engine keeps kStages * 8-16 KB per CTA in flight with no registers spent on it,
// which matters for long streams where the vectorized kernel's latency hiding depends on occupancy.
#pragma once

#include <cuda.h>  // CUtensorMap (type only; the encoder is fetched through the runtime)

#include "quant/item_quantize.cuh"
#include "quant/quant_common.cuh"

namespace fp4kit::quant {

inline constexpr int kTmaTileRows = 16;
inline constexpr int kTmaTileCols = 256;  // elements; also the TMA box width (max 256)
inline constexpr int kTmaConsumerWarps = 8;
inline constexpr int kTmaThreads = 32 * (kTmaConsumerWarps + 1);
inline constexpr int kTmaStages = 4;

template <DType kIn>
constexpr int tma_stage_bytes() {
  return kTmaTileRows * kTmaTileCols * InputType<kIn>::kBytes;
}
template <DType kIn>
constexpr int tma_smem_bytes() {
  return kTmaStages * tma_stage_bytes<kIn>() + 2 * kTmaStages * 8;
}

struct TmaKernelParams {
  int64_t rows;
  int64_t items_per_row;  // cols / 16
  int64_t tile_cols;      // tiles per row of tiles = ceil(cols / 256)
  int64_t num_tiles;
  ItemOutputs out;
};

// ---- mbarrier / TMA primitives ----------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra WAIT_%=;\n\t}" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int32_t c0, int32_t c1,
                                            uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
      : "memory");
}
__device__ __forceinline__ void ld_shared_v4(const void* p, uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
               : "r"(smem_addr(p)));
}

template <DType kIn, BlockFormat kFormat, QuantNumerics kMode>
__global__ void __launch_bounds__(kTmaThreads) quantize_tma_kernel(const __grid_constant__ CUtensorMap map,
                                                                   const TmaKernelParams p) {
  using T = InputType<kIn>;
  constexpr int kStageBytes = tma_stage_bytes<kIn>();
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kTmaStages * kStageBytes);
  uint64_t* empty = full + kTmaStages;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kTmaStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kTmaConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  pdl_begin_persistent();

  if (warp == kTmaConsumerWarps) {
    // Producer: one lane issues every copy.
    if (lane == 0) {
      asm volatile("prefetch.tensormap [%0];" ::"l"(&map) : "memory");
      int64_t i = 0;
      for (int64_t t = blockIdx.x; t < p.num_tiles; t += gridDim.x, ++i) {
        const int s = int(i % kTmaStages);
        const uint32_t phase = uint32_t(i / kTmaStages) & 1u;
        mbar_wait(&empty[s], phase ^ 1u);
        mbar_arrive_expect_tx(&full[s], kStageBytes);
        const int64_t tr = t / p.tile_cols, tc = t - tr * p.tile_cols;
        tma_load_2d(smem + s * kStageBytes, &map, int32_t(tc * kTmaTileCols), int32_t(tr * kTmaTileRows), &full[s]);
      }
    }
  } else {
    const int c = threadIdx.x;  // consumer thread 0..255
    const int tile_row = c / 16, tile_item = c % 16;
    // Per-tensor part of the NVFP4 recipe, once (per-row scales: per item, in quantize_item).
    const Nvfp4ScaleConst<kMode> c0 = nvfp4_scale_const<kMode>(
        (kFormat == BlockFormat::kNVFP4 && !p.out.per_row_global_scale) ? __ldg(p.out.global_scale) : 1.0f);
    int64_t i = 0;
    for (int64_t t = blockIdx.x; t < p.num_tiles; t += gridDim.x, ++i) {
      const int s = int(i % kTmaStages);
      const uint32_t phase = uint32_t(i / kTmaStages) & 1u;
      mbar_wait(&full[s], phase);
      uint32_t w[T::kWords];
      const uint8_t* src = smem + s * kStageBytes + tile_row * (kTmaTileCols * T::kBytes) + tile_item * T::kItemBytes;
#pragma unroll
      for (int v = 0; v < T::kVec4; ++v) ld_shared_v4(src + 16 * v, w[4 * v], w[4 * v + 1], w[4 * v + 2], w[4 * v + 3]);
      float x[16];
      item_to_float<kIn>(w, x);
      // Release the stage only after every loaded register has been consumed: the amax reads all
      // of them and the warp vote reads the amax (it is never -1, but the compiler cannot know), so
      // the hardware has the shared-memory data of all 32 lanes before lane 0 arrives. (An arrive
      // issued right after the loads raced with the next TMA write into the stage on FP32 tiles.)
      const float amax_nan = item_amax_nan_raw<kIn>(w, x);
      const bool consumed = __any_sync(kFullMask, amax_nan != -1.0f);
      if (lane == 0 && consumed) mbar_arrive(&empty[s]);

      const int64_t tr = t / p.tile_cols, tc = t - tr * p.tile_cols;
      const int64_t row = tr * kTmaTileRows + tile_row;
      const int64_t g = tc * (kTmaTileCols / 16) + tile_item;
      quantize_item<kFormat, kMode, true>(x, amax_nan, row < p.rows && g < p.items_per_row, row, g, c0, p.out);
    }
    zero_scale_padding(p.out.sg, p.out.scales, int64_t(blockIdx.x) * (32 * kTmaConsumerWarps) + c,
                       int64_t(gridDim.x) * (32 * kTmaConsumerWarps));
  }
}

}  // namespace fp4kit::quant
