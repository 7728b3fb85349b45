// The two elementwise stages of the fused MoE (overview: src/moe/fused_moe.cu):
//   swiglu_kernel    F1 [rows, 2I] -> A2 [rows, I]: h = silu(gate) * up, rounded to the activation
//                    dtype; swiglu_quant_kernel (W4A4) then NVFP4-quantizes it with fc2_act_global
//                    and decodes it exactly.
//   finalize_kernel  F2 [rows, H] -> out [T, H]: acc = acc + final_scales[t, j] * F2[perm(t, j)]
//                    from +0 in FP32 in j order (product and sum each rounded, no FMA), rounded once.
// The row count of SwiGLU is read on the device (offsets[E_local]).
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_check.h"
#include "common/launch_kernel.h"
#include "gemm/tactics.h"  // RuleOverride
#include "moe/moe_device.cuh"
#include "moe/moe_kernels.h"
#include "quant/quant_common.cuh"  // pdl_wait, pdl_launch_dependents

namespace fp4kit::moe_impl {
namespace {

constexpr int kThreads = 256;

// W4A4: four threads per 16-element block (4 elements each, the block amax across them by
// shuffles), so the NVFP4 round trip's dependent chain is a quarter of one thread per block: the
// kernel sits on the critical path between FC1 and FC2 (H100 session 6).
template <bool kBF16>
__global__ void __launch_bounds__(kThreads) swiglu_quant_kernel(SwigluArgs s) {
  quant::pdl_launch_dependents();  // both no-ops unless launched with PDL
  quant::pdl_wait();
  const int64_t I = s.inter;
  const int64_t quarters = I / 4;  // 4-element pieces per row
  const int64_t rows = *s.total_rows;
  const int64_t items = rows * quarters;
  const uint16_t* f1 = static_cast<const uint16_t*>(s.f1);
  uint16_t* a2 = static_cast<uint16_t*>(s.a2);
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  // The same trip count for every thread of a block (the shuffles need the whole warp).
  for (int64_t i0 = int64_t(blockIdx.x) * kThreads; i0 < items; i0 += stride) {
    const int64_t idx = i0 + threadIdx.x;
    const bool live = idx < items;
    int64_t r = 0, c = 0;
    if (live) divmod_nonneg(idx, quarters, r, c);
    float h[4] = {};
    if (live) {
      const uint16_t* row = f1 + r * 2 * I;
      const uint2 u = *reinterpret_cast<const uint2*>(row + c * 4);
      const uint2 g = *reinterpret_cast<const uint2*>(row + I + c * 4);
      const uint32_t uw[2] = {u.x, u.y}, gw[2] = {g.x, g.y};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float up = act_to_float<kBF16>((uw[i / 2] >> (16 * (i % 2))) & 0xffffu);
        const float gate = act_to_float<kBF16>((gw[i / 2] >> (16 * (i % 2))) & 0xffffu);
        h[i] = act_to_float<kBF16>(float_to_act<kBF16>(swiglu(gate, up)));  // the reference quantizes the 16-bit h
      }
    }
    const float gs = live ? s.act_global[s.per_expert ? s.row_expert[r] : 0] : 1.0f;
    nvfp4_exact_roundtrip_lanes<4>(h, gs);
    if (live)
      *reinterpret_cast<uint2*>(a2 + r * I + c * 4) =
          make_uint2(float_to_act<kBF16>(h[0]) | (float_to_act<kBF16>(h[1]) << 16),
                     float_to_act<kBF16>(h[2]) | (float_to_act<kBF16>(h[3]) << 16));
  }
}

// One thread per 16-element block: h = silu(gate) * up (W4A16), or (kQuantize, W4A4 at large batches:
// quant_thread_per_block) h rounded to 16 bits, then NVFP4-quantized with act_global and decoded —
// the same values as swiglu_quant_kernel (the block's amax is a max, so it does not depend on how the
// block is spread over lanes). With no shuffles, the block scale computed once instead of by four
// lanes, and 16-byte loads, the W4A4 form costs ~2/3 of the instructions per element; the longer
// dependent chain per thread is hidden by the many blocks in flight. H100 session 33 (ncu, W4A4
// T = 4096): DeepSeek-V3 233 -> 148 us (its 402 MB at 2.7 TB/s), Qwen3.6 60 -> 40 us (docs/PERF.md).
template <bool kBF16, bool kQuantize>
__device__ __forceinline__ void swiglu_blocks(const SwigluArgs& s) {
  const int64_t I = s.inter;
  const int64_t ib = I / 16;
  const int64_t rows = *s.total_rows;
  const int64_t items = rows * ib;
  const uint16_t* f1 = static_cast<const uint16_t*>(s.f1);
  uint16_t* a2 = static_cast<uint16_t*>(s.a2);
  for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < items; idx += int64_t(gridDim.x) * kThreads) {
    int64_t r, c;
    divmod_nonneg(idx, ib, r, c);
    const uint16_t* row = f1 + r * 2 * I;
    float up[16], gate[16], h[16];
    load16<kBF16>(row + c * 16, up);
    load16<kBF16>(row + I + c * 16, gate);
    if constexpr (kQuantize) {
      const float gs = s.act_global[s.per_expert ? s.row_expert[r] : 0];
#pragma unroll
      for (int i = 0; i < 16; ++i) h[i] = act_to_float<kBF16>(float_to_act<kBF16>(swiglu(gate[i], up[i])));
      nvfp4_exact_roundtrip_lanes<16>(h, gs);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) h[i] = swiglu(gate[i], up[i]);
    }
    store16<kBF16>(a2 + r * I + c * 16, h);
  }
}

template <bool kBF16>
__global__ void __launch_bounds__(kThreads) swiglu_quant_block_kernel(SwigluArgs s) {
  quant::pdl_launch_dependents();  // both no-ops unless launched with PDL
  quant::pdl_wait();
  swiglu_blocks<kBF16, true>(s);
}

// W4A16.
template <bool kBF16>
__global__ void __launch_bounds__(kThreads) swiglu_kernel(SwigluArgs s) {
  quant::pdl_launch_dependents();  // both no-ops unless launched with PDL
  quant::pdl_wait();
  swiglu_blocks<kBF16, false>(s);
}

template <bool kBF16>
__global__ void __launch_bounds__(kThreads) finalize_kernel(FinalizeArgs f) {
  constexpr int kBatch = 8;
  quant::pdl_launch_dependents();
  quant::pdl_wait();
  const int64_t H = f.hidden;
  const int64_t hb = H / 8;
  const int64_t items = f.tokens * hb;
  const uint16_t* f2 = static_cast<const uint16_t*>(f.f2);
  uint16_t* out = static_cast<uint16_t*>(f.out);
  for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < items; idx += int64_t(gridDim.x) * kThreads) {
    int64_t t, c;
    divmod_nonneg(idx, hb, t, c);
    *reinterpret_cast<uint4*>(out + t * H + c * 8) =
        finalize_vector<kBF16, kBatch, false>(f2, H, f.perm, f.scales, f.top_k, t, c * 8);
  }
}

}  // namespace

namespace {
gemm_impl::RuleOverride& quant_block_override() {
  static gemm_impl::RuleOverride o("FP4KIT_MOE_QUANT_BLOCK");
  return o;
}
}  // namespace

bool quant_thread_per_block(int64_t nvfp4_blocks, int sm_count) {
  return quant_thread_per_block(nvfp4_blocks, sm_count, quant_block_override().get());
}

int set_quant_thread_per_block_override(int forced) { return quant_block_override().set(forced); }

Status launch_swiglu(const SwigluArgs& s, int sm_count, cudaStream_t stream) {
  const int64_t nvfp4_blocks = s.max_rows * (s.inter / 16);
  const bool lanes4 = s.quantize && !quant_thread_per_block(nvfp4_blocks, sm_count);
  const int blocks = grid_for(nvfp4_blocks * (lanes4 ? 4 : 1), kThreads, int64_t(sm_count) * 8);
  auto* kernel = s.bf16 ? (!s.quantize ? swiglu_kernel<true> : lanes4 ? swiglu_quant_kernel<true> : swiglu_quant_block_kernel<true>)
                        : (!s.quantize ? swiglu_kernel<false> : lanes4 ? swiglu_quant_kernel<false> : swiglu_quant_block_kernel<false>);
  return detail::cuda_status(launch_kernel(kernel, dim3(blocks), dim3(kThreads), 0, stream, s.pdl, s),
                             "fused_moe: swiglu_kernel");
}

Status launch_finalize(const FinalizeArgs& f, int sm_count, cudaStream_t stream) {
  const int blocks = grid_for(f.tokens * (f.hidden / 8), kThreads, int64_t(sm_count) * 8);
  auto* kernel = f.bf16 ? finalize_kernel<true> : finalize_kernel<false>;
  return detail::cuda_status(launch_kernel(kernel, dim3(blocks), dim3(kThreads), 0, stream, f.pdl, f),
                             "fused_moe: finalize_kernel");
}

}  // namespace fp4kit::moe_impl
