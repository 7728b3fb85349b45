// Host-side planning of fused_moe: the problem's derived sizes and the workspace layout (no CUDA;
// unit-tested on the CPU by tests/moe/moe_api_test.cpp).
//
// Workspace regions (byte offsets, each aligned to kRegionAlign; R = max_tokens * top_k rows):
//   header        int32[4]: [0] bad-expert-id flag, [1] num_active
//   offsets       int32[E_local + 1]   rows of local expert e: [offsets[e], offsets[e+1])
//   active        int32[E_local]       local experts with rows, ascending (num_active valid)
//   perm          int32[R]             permuted row of entry (t, j) = t * top_k + j, or -1
//   row_expert    int32[R]             local expert of each permuted row
//   chunk_counts  int32[C * E_local]   multi-kernel permutation only (C chunks of R), else empty
//   chunk_flags   int32[C]
//   sync          int32[...]           fused-decode path: its counters (fused_decode_workspace)
//   partials      float[...]           fused-decode path: FC1 parts' partial sums (may be empty)
//   act           16-bit [R, max(H, I)]   A1 [R, H] (FC1 input), later A2 [R, I] (FC2 input)
//   gemm_out      16-bit [R, max(2I, H)]  F1 [R, 2I] (FC1 output), later F2 [R, H] (FC2 output)
//   gemm1_ws      grouped GEMM workspace of FC1 (bound over every T <= max_tokens)
//   gemm2_ws      grouped GEMM workspace of FC2
// A1/A2 and F1/F2 share storage: each buffer is dead once the next stage has read it (all stages
// run in order on one stream). The per-entry path (src/moe/per_entry.cu) uses the same layout, so
// one workspace serves both paths: header[0] (error word, with check_expert_ids), act as
// h [T * top_k, I] (its FC1 + SwiGLU output) and, in W4A4, gemm_out as the precomputed FC1 input
// [T (or T * top_k with per-expert scales), H]; the other regions are unused.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp4kit/moe.h"
#include "fp4kit/tune.h"
#include "moe/moe_tactics.h"

namespace fp4kit::moe_impl {

inline constexpr size_t kRegionAlign = 256;

struct MoeDims {
  int64_t tokens = 0;      // T
  int64_t max_tokens = 0;  // max(T, p.max_tokens): what the workspace is sized for
  int64_t hidden = 0, inter = 0, experts = 0, top_k = 0;
  int64_t e_local = 0, e_begin = 0;
  int64_t rows = 0;      // T * top_k
  int64_t max_rows = 0;  // max_tokens * top_k
};

// Assumes the shape checks of fused_moe passed.
MoeDims moe_dims(const MoeParams& p);

struct MoeWorkspaceLayout {
  size_t header = 0, offsets = 0, active = 0, perm = 0, row_expert = 0, chunk_counts = 0, chunk_flags = 0, sync = 0;
  size_t partials = 0;
  size_t act = 0, gemm_out = 0, gemm1_ws = 0, gemm2_ws = 0;
  size_t gemm1_ws_bytes = 0, gemm2_ws_bytes = 0;
  size_t total = 0;
};

// The layout for `d` with the grouped GEMM workspace bounds given (see grouped_workspace_bound);
// `sms`: the SM count the fused-decode path plans for (its FC1 split depends on it).
MoeWorkspaceLayout moe_workspace_layout(const MoeDims& d, size_t gemm1_ws_bytes, size_t gemm2_ws_bytes, int sms);

// Upper bound of grouped_gemm_workspace_bytes over every call fused_moe makes for g with
// T' <= max_tokens tokens (moe/moe_tactics.h: max_rows = T' * top_k, max_group_rows = T'): the
// forced tactic's, or with g.tactic = -1 the heuristic's choice and `cache`'s tuned tactic (if any)
// at each T'. Cached per configuration (and cache generation).
size_t grouped_workspace_bound(const MoeGemm& g, int64_t max_tokens, TuneCache* cache);

}  // namespace fp4kit::moe_impl
