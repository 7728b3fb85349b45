// Host side of the decode family: grid shape, split-K workspace, launch.
#include "common/cuda_check.h"
#include "gemm/families.h"
#include "gemm/prepacked_layout.h"
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl {
namespace {

struct DecodeGeometry {
  int64_t row_tiles, token_groups, k_chunks, chunks_per_warp;
  int64_t partial_floats, counters;
};

DecodeGeometry geometry(const Tactic& t, const GemmParams& p) {
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  DecodeGeometry g;
  g.row_tiles = (p.n + 15) / 16;
  g.token_groups = (p.m + t.nt * 8 - 1) / (t.nt * 8);
  g.k_chunks = s.k_chunks;
  g.chunks_per_warp = (s.k_chunks + int64_t(sm90::kDecodeWarps) * t.splits - 1) / (int64_t(sm90::kDecodeWarps) * t.splits);
  g.partial_floats = t.splits > 1 ? int64_t(t.splits) * g.token_groups * g.row_tiles * t.nt * 8 * 16 : 0;
  g.counters = t.splits > 1 ? g.token_groups * g.row_tiles : 0;
  return g;
}

}  // namespace

Status decode_can_implement(const Tactic& t, const GemmParams& p) {
  if (p.m > 256)
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": the decode family serves M <= 256");
  const DecodeGeometry g = geometry(t, p);
  if (g.token_groups > 65535) return Status(StatusCode::kNotSupported, "tactic " + t.name + ": too many token groups");
  if (t.splits > 1 && g.k_chunks < int64_t(t.splits) * sm90::kDecodeWarps)
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": K too short for " +
                                                 std::to_string(t.splits) + " splits");
  return Status::ok();
}

size_t decode_workspace_bytes(const Tactic& t, const GemmParams& p) {
  const DecodeGeometry g = geometry(t, p);
  return size_t(g.partial_floats) * 4 + size_t(g.counters) * 4;
}

Status decode_launch(const Tactic& t, const GemmParams& p, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream) {
  const DecodeGeometry g = geometry(t, p);
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  sm90::DecodeGemmArgs a{};
  a.m = int(p.m);
  a.n = int(p.n);
  a.k = int(p.k);
  a.a = p.a;
  a.lda = p.lda ? p.lda : p.k;
  a.a_scales = p.a_scales;
  a.a_sf_padded_cols = (p.k / 16 + 3) / 4 * 4;
  a.b_codes = static_cast<const uint4*>(p.b_prepacked);
  a.b_scales = reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.b_prepacked) + s.code_bytes());
  a.k_chunks = g.k_chunks;
  a.alpha = p.alpha;
  a.bias = p.bias;
  a.d = p.d;
  a.ldd = p.ldd ? p.ldd : p.n;
  a.chunks_per_warp = int(g.chunks_per_warp);
  if (t.splits > 1) {
    a.partials = static_cast<float*>(workspace);
    a.counters = reinterpret_cast<int*>(a.partials + g.partial_floats);
    FP4KIT_CUDA_RETURN(cudaMemsetAsync(a.counters, 0, size_t(g.counters) * 4, stream), "gemm: counter reset");
  }
  const dim3 grid(unsigned(g.row_tiles), unsigned(g.token_groups), unsigned(t.splits));
  cudaError_t err;
  if (p.a_dtype == DType::kBF16)
    err = sm90::launch_decode<__nv_bfloat16, __nv_bfloat16, false>(t.nt, t.unroll, a, grid, stream);
  else if (p.a_dtype == DType::kFP16)
    err = sm90::launch_decode<__half, __half, false>(t.nt, t.unroll, a, grid, stream);
  else if (p.d_dtype == DType::kBF16)
    err = sm90::launch_decode<__nv_bfloat16, __nv_bfloat16, true>(t.nt, t.unroll, a, grid, stream);
  else
    err = sm90::launch_decode<__nv_bfloat16, __half, true>(t.nt, t.unroll, a, grid, stream);
  return detail::cuda_status(err, ("gemm: launch " + t.name).c_str());
}

}  // namespace fp4kit::gemm_impl
