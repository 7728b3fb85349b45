// arrange_activations: A[M, K] -> B-fragment order (gemm/fragment_activations.h). One thread per
// (token tile, k chunk, lane): eight 32-bit words gathered from the token's row (W4A16), or decoded
// from its NVFP4 codes and scales (W4A4), and two 16-byte stores, so a warp writes 1 KB
// contiguously. The data is small (M <= 16 tokens); the point is that the GEMM after it reads each
// chunk's B fragments with two 128-bit loads per lane.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "common/cuda_check.h"
#include "common/launch_kernel.h"
#include "format/e4m3.h"
#include "format/scale_layout.h"
#include "gemm/arrange_activations.h"
#include "gemm/fragment_activations.h"
#include "gemm/sm90/pack_pair.cuh"
#include "gemm/stage_activations.h"

namespace fp4kit::gemm_impl {
namespace {

constexpr int kArrangeThreads = 256;

struct ArrangeArgs {
  const uint8_t* a;       // W4A16: 16-bit elements; W4A4: E2M1 codes, two per byte
  const uint8_t* scales;  // W4A4: E4M3, 128x4 layout
  int64_t row_bytes;      // bytes between rows of a
  int64_t m, k, sf_padded_cols;
  FragmentActivationShape s;
  uint4* out;
};

// OutT = void: W4A16 (copy 32-bit words); else W4A4 decoded to OutT.
template <typename OutT>
__global__ void __launch_bounds__(kArrangeThreads) arrange_activations_kernel(const ArrangeArgs x) {
  // The GEMM may launch now: it requests its first weights and then waits for this grid.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int64_t i = int64_t(blockIdx.x) * kArrangeThreads + threadIdx.x;  // (tile, chunk, lane)
  if (i >= x.s.token_tiles * x.s.k_chunks * 32) return;
  const int lane = int(i & 31);
  const int64_t tc = i >> 5;
  const int64_t t = tc / x.s.k_chunks, j = tc - t * x.s.k_chunks;
  const int64_t tok = fragment_activation_token(t, lane);
  const uint8_t* row = x.a + tok * x.row_bytes;
  uint32_t w[kFragmentWordsPerLane];
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    // k % 16 == 0 (GEMM contract): a k16 step is wholly inside K or wholly outside.
    const bool live = tok < x.m && 64 * j + 16 * s < x.k;
    float sf = 0.0f;
    if constexpr (!std::is_void_v<OutT>)
      if (live) sf = format::e4m3_to_float(__ldg(x.scales + format::sf_offset_128x4(tok, 4 * j + s, x.sf_padded_cols)));
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t kk = fragment_activation_k(j, lane, 2 * s + h);
      uint32_t v = 0u;
      if (live) {
        if constexpr (std::is_void_v<OutT>) {
          v = __ldg(reinterpret_cast<const uint32_t*>(row + kk * 2));
        } else {
          v = sm90::decode_nvfp4_pair<OutT>(__ldg(row + kk / 2), sf);
        }
      }
      w[2 * s + h] = v;
    }
  }
  x.out[2 * i] = make_uint4(w[0], w[1], w[2], w[3]);
  x.out[2 * i + 1] = make_uint4(w[4], w[5], w[6], w[7]);
}

}  // namespace

Status arrange_activations(const GemmParams& p, void* out, cudaStream_t stream) {
  const bool w4a4 = p.a_dtype == DType::kE2M1x2;
  const int64_t lda = p.lda ? p.lda : p.k;
  ArrangeArgs x{};
  x.a = static_cast<const uint8_t*>(p.a);
  x.scales = static_cast<const uint8_t*>(p.a_scales);
  x.row_bytes = w4a4 ? lda / 2 : lda * 2;
  x.m = p.m;
  x.k = p.k;
  x.sf_padded_cols = format::round_up(p.k / 16, 4);
  x.s = fragment_activation_shape(p.m, p.k);
  x.out = static_cast<uint4*>(out);
  const int64_t threads = x.s.token_tiles * x.s.k_chunks * 32;
  const int64_t blocks = (threads + kArrangeThreads - 1) / kArrangeThreads;
  if (blocks >= (int64_t(1) << 31))
    return Status(StatusCode::kNotSupported, "gemm: too many activations to arrange");
  auto launch = [&](auto kernel) {
    return launch_kernel(kernel, dim3(unsigned(blocks)), dim3(kArrangeThreads), 0, stream, p.enable_pdl, x);
  };
  const cudaError_t e = !w4a4                                 ? launch(&arrange_activations_kernel<void>)
                        : operand_type(p) == DType::kBF16 ? launch(&arrange_activations_kernel<__nv_bfloat16>)
                                                              : launch(&arrange_activations_kernel<__half>);
  return detail::cuda_status(e == cudaSuccess ? cudaGetLastError() : e, "gemm: launch arrange_activations");
}

}  // namespace fp4kit::gemm_impl
