// The fused-decode MoE kernel (src/moe/fused_decode.cu): FC1 + SwiGLU, FC2 and finalize of a small
// batch in one persistent launch, after the fused permutation (MoePath::kFusedDecode).
#pragma once

#include <algorithm>
#include <cstdint>

#include "fp4kit/status.h"
#include "moe/moe_path.h"  // expected_active_experts

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::moe_impl {

struct FusedDecodeArgs {
  int hidden = 0, inter = 0, top_k = 0, tokens = 0;  // H, I (multiples of 64), k, T
  int slots = 0;                     // upper bound of num_active: min(E_local, T * k)
  // FC1 input: [rows, H] 16-bit gathered by the permutation (row_token null; W4A4 with per-expert or
  // pre-quantized activations), or [T, H] read through row_token: the layer's input x (W4A16: the
  // permutation gathers nothing) or, W4A4 with one activation global, x quantized once per token by
  // the permutation's other blocks (GatherArgs::token_rows).
  const void* a1 = nullptr;
  const int32_t* row_token = nullptr;  // [rows] token of each permuted row, or null
  void* f2 = nullptr;                // [rows, H] FC2 output: the A1 region (row r of F2 over row r of A1)
  void* h = nullptr;                 // [rows, I] FC2 input
  void* out = nullptr;               // [T, H]
  const int32_t* offsets = nullptr;  // the permutation's group list and entry -> row map
  const int32_t* active = nullptr;
  const int32_t* num_active = nullptr;
  const int32_t* perm = nullptr;
  const float* final_scales = nullptr;  // [T, k]
  const uint8_t* w1 = nullptr;       // prepacked FC1 weights, w1_bytes per local expert
  const uint8_t* w2 = nullptr;
  int64_t w1_bytes = 0, w1_code_bytes = 0, w2_bytes = 0, w2_code_bytes = 0;
  const float* alpha1 = nullptr;     // [E_local]
  const float* alpha2 = nullptr;
  const float* act_global2 = nullptr;  // W4A4: fc2_act_global (per local expert with per_expert)
  bool per_expert = false;
  // Zero before the launch (fused_decode_sync_words of them, from fc1_done on; the permutation
  // kernel clears them): [slots] FC1 units done per slot, [H / 32] FC2 units done per row block,
  // the unit dispenser, then with fc1_parts > 1 [slots * I / 16] parts done per FC1 unit.
  int* fc1_done = nullptr;
  int* fin_count = nullptr;
  int* dispenser = nullptr;
  int* split_count = nullptr;
  // K splits of each FC1 unit (1, 2 or 4; fused_decode_fc1_parts) and, with more than one, their
  // FP32 partial sums: [slots * I / 16 * fc1_parts][32 lanes][8].
  int fc1_parts = 1;
  float* partials = nullptr;
  // 32-row blocks per FC2 unit (fused_decode_fc2_blocks: 2 when K = I is at most 4 chunks).
  int fc2_blocks = 1;
};

inline constexpr int64_t kFusedDecodeMaxSplitUnits = 16384;  // bounds the partials (1 KB per part)

// FC1 units are split along K (H) when the expected units (active experts x I/16) are few for the
// grid's warps W (16 per SM): 4 parts below W / 2, 2 parts below 1.3 W, each part at least 8 chunks
// of 64, at most kFusedDecodeMaxSplitUnits parts for the largest possible number of active experts.
// H100, session 9 (graph us, W4A16, parts 1 / 2 / 4; docs/PERF.md): fi-256 T = 4 (0.24 W) 72.2 /
// 63.2 / 59.5, T = 16 (0.77 W) 157.9 / 148.4 / 153.6; Qwen3-30B T = 8 (1.17 W) 66.9 / 62.4 / 66.2,
// T = 16 (1.86 W) 91.1 / 94.0 / 104.0; Qwen3.6 T = 16 (1.55 W) 74.5 / 77.6 / 84.3; DeepSeek-V3 T = 4
// (1.9 W) 283.6 / 285.6 / 293.3.
inline int fused_decode_fc1_parts(int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter, int64_t e_local,
                                  int sms) {
  const double warps = fused_decode_warps(sms);
  const double units = expected_active_experts(tokens, top_k, e_local) * double(inter / 16);
  const int64_t kc = hidden / 64;
  const int64_t slots = std::min(e_local, tokens * top_k);
  const int want = units < 0.5 * warps ? 4 : units < 1.3 * warps ? 2 : 1;
  int parts = 1;
  while (parts < want && kc / (2 * parts) >= 8 && slots * (inter / 16) * 2 * parts <= kFusedDecodeMaxSplitUnits)
    parts *= 2;
  return parts;
}

inline int64_t fused_decode_sync_words(int64_t slots, int64_t hidden, int64_t inter, int parts) {
  return slots + hidden / 32 + 1 + (parts > 1 ? slots * (inter / 16) : 0);
}

// Points a's counters into `sync` (fused_decode_sync_words(a.slots, H, I, a.fc1_parts) words, in
// the order FusedDecodeArgs lists them).
inline void bind_fused_decode_sync(FusedDecodeArgs& a, int32_t* sync) {
  a.fc1_done = sync;
  a.fin_count = a.fc1_done + a.slots;
  a.dispenser = a.fin_count + a.hidden / 32;
  a.split_count = a.dispenser + 1;
}

// Workspace of the path for any T' <= max_tokens (the largest T' whose FC1 units are split sets it).
struct FusedDecodeWorkspace {
  int64_t sync_words = 0;
  int64_t partial_floats = 0;
};
inline FusedDecodeWorkspace fused_decode_workspace(int64_t max_tokens, int64_t top_k, int64_t hidden, int64_t inter,
                                                   int64_t e_local, int sms) {
  FusedDecodeWorkspace w;
  if (!fused_decode_supported(1, top_k, e_local)) return w;
  const int64_t last = std::min(max_tokens, kFusedMaxRows / top_k);
  w.sync_words = fused_decode_sync_words(std::min(e_local, std::max<int64_t>(last, 1) * top_k), hidden, inter, 1);
  // The parts do not grow with T' (more experts, more units), the slots do: stop at the first T'
  // without a split.
  for (int64_t t = 1; t <= last; ++t) {
    const int parts = fused_decode_fc1_parts(t, top_k, hidden, inter, e_local, sms);
    if (parts == 1) break;
    const int64_t slots = std::min(e_local, t * top_k);
    w.sync_words = std::max(w.sync_words, fused_decode_sync_words(slots, hidden, inter, parts));
    w.partial_floats = std::max(w.partial_floats, slots * (inter / 16) * parts * 256);
  }
  return w;
}

Status launch_fused_decode(const FusedDecodeArgs& a, bool bf16, bool quantize, int sm_count, cudaStream_t stream);

}  // namespace fp4kit::moe_impl
