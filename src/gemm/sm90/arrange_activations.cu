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
// Every load is issued unconditionally from a valid address (rows past M read row M - 1, k16 steps
// past K the chunk's first step) and the values that do not exist are zeroed afterwards. Before
// (session 16), W4A4 loaded and decoded each k16 step inside its own branch, so a step's loads went
// out only once the previous step's values had arrived; it now reads the chunk's 32 code bytes of
// the row with two 16-byte loads (8 byte loads before) and its 4 scales, then decodes. This kernel is
// on the GEMM's critical path (the GEMM waits for it): H100, ncu, 8192x28672 M = 8, W4A4 5.3 ->
// 4.2-4.6 us (W4A16 3.5-4.1, unchanged); graph replay W4A4 M = 5..16 2-14 % faster (docs/PERF.md).
template <typename OutT>
__global__ void __launch_bounds__(kArrangeThreads) arrange_activations_kernel(const ArrangeArgs x) {
  // The GEMM may launch now: it requests its first weights and then waits for this grid.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  // The item's indices (a 64-bit division) depend only on the arguments: computed before the PDL
  // wait, which each branch issues right before its loads. (ptxas still places some address
  // arithmetic after the wait; scripts/sass_wait_path.py shows what is left.) A thread past the end
  // leaves without waiting: the grid still completes after its predecessor, its other threads wait.
  const int64_t i = int64_t(blockIdx.x) * kArrangeThreads + threadIdx.x;  // (tile, chunk, lane)
  if (i >= x.s.token_tiles * x.s.k_chunks * 32) return;
  const int lane = int(i & 31);
  const int64_t tc = i >> 5;
  const int64_t t = tc / x.s.k_chunks, j = tc - t * x.s.k_chunks;
  const int64_t tok = fragment_activation_token(t, lane);
  const bool row_live = tok < x.m;
  const int64_t src_tok = row_live ? tok : x.m - 1;
  const uint8_t* row = x.a + src_tok * x.row_bytes;
  uint32_t w[kFragmentWordsPerLane];
  if constexpr (std::is_void_v<OutT>) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
#pragma unroll
    for (int q = 0; q < kFragmentWordsPerLane; ++q) {
      // k % 16 == 0 (GEMM contract): a k16 step is wholly inside K or wholly outside.
      const int64_t kk = fragment_activation_k(j, lane, q);
      const bool live = 64 * j + 16 * (q >> 1) < x.k;
      const uint32_t v = __ldg(reinterpret_cast<const uint32_t*>(row + (live ? kk : fragment_activation_k(j, lane, q & 1)) * 2));
      w[q] = row_live && live ? v : 0u;
    }
  } else {
    // The chunk's 32 code bytes of the row: word q = 2s + h of them holds this lane's byte c =
    // lane & 3 (elements 16s + 8h + 2c, +1). A 16-byte half (32 elements) is read when it starts
    // inside K; lda, a multiple of 32 elements and >= K, then holds it whole (its steps past K, when
    // K % 32 == 16, come from the row's padding and are zeroed below).
    const uint4* src = reinterpret_cast<const uint4*>(row + 32 * j);
    const bool hi_live = 64 * j + 32 < x.k;
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const uint4 lo = __ldg(src), hi = __ldg(hi_live ? src + 1 : src);
    const uint32_t codes[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    // The chunk's four scale bytes (blocks 4j..4j+3 of the row) are adjacent in the 128x4 layout, at
    // a 4-byte aligned offset inside its padded columns: one 32-bit load, one offset computation
    // (they were four of each, after the PDL wait). Bytes of blocks past K are padding; their words
    // are zeroed below.
    const uint32_t sf4 = __ldg(reinterpret_cast<const uint32_t*>(
        x.scales + format::sf_offset_128x4(src_tok, 4 * j, x.sf_padded_cols)));
    uint8_t sfb[4];
#pragma unroll
    for (int s = 0; s < 4; ++s) sfb[s] = uint8_t(sf4 >> (8 * s));
    // Byte c = lane & 3 of words 4h..4h+3 gathered into one word (three permutes), whose eight codes
    // decode at once (sm90::decode_e2m1x8) into words 4h..4h+3, then each times its step's scale
    // (exact, as sm90::decode_nvfp4x8).
    const uint32_t c = uint32_t(lane & 3);
    uint32_t s2[4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const float sf = format::e4m3_to_float(sfb[s]);
      s2[s] = sm90::pack_pair<OutT>(sf, sf);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t g = format::gather_byte(codes[4 * h], codes[4 * h + 1], codes[4 * h + 2], codes[4 * h + 3], c);
      uint32_t v[4];
      sm90::decode_e2m1x8<OutT>(g, v);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int q = 4 * h + i, s = q >> 1;
        const bool live = row_live && 64 * j + 16 * s < x.k;
        w[q] = live ? sm90::mul_pair<OutT>(v[i], s2[s]) : 0u;
      }
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
