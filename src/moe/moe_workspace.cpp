#include "moe/moe_workspace.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>

#include "fp4kit/device.h"
#include "gemm/grouped.h"
#include "moe/fused_decode.h"
#include "moe/moe_kernels.h"

namespace fp4kit::moe_impl {

MoeDims moe_dims(const MoeParams& p) {
  MoeDims d;
  d.tokens = p.num_tokens;
  d.max_tokens = std::max(p.num_tokens, p.max_tokens);
  d.hidden = p.hidden;
  d.inter = p.inter;
  d.experts = p.num_experts;
  d.top_k = p.top_k;
  d.e_local = p.ep_size > 0 ? p.num_experts / p.ep_size : 0;
  d.e_begin = d.e_local * p.ep_rank;
  d.rows = p.num_tokens * p.top_k;
  d.max_rows = d.max_tokens * p.top_k;
  return d;
}

namespace {

size_t align_up(size_t x) { return (x + kRegionAlign - 1) / kRegionAlign * kRegionAlign; }

}  // namespace

MoeWorkspaceLayout moe_workspace_layout(const MoeDims& d, size_t gemm1_ws_bytes, size_t gemm2_ws_bytes, int sms) {
  MoeWorkspaceLayout l;
  const size_t R = size_t(d.max_rows);
  const size_t E = size_t(d.e_local);
  // The multi-kernel permutation runs when some T <= max_tokens is past the fused kernel's limits.
  const bool multi = !use_fused_permute(d.max_rows, d.e_local);
  const size_t chunks = multi ? size_t(chunk_count(d.max_rows, d.e_local)) : 0;
  size_t at = 0;
  auto region = [&](size_t bytes) {
    const size_t start = at;
    at = align_up(at + bytes);
    return start;
  };
  l.header = region(4 * sizeof(int32_t));
  l.offsets = region((E + 1) * sizeof(int32_t));
  l.active = region(E * sizeof(int32_t));
  l.perm = region(R * sizeof(int32_t));
  l.row_expert = region(R * sizeof(int32_t));
  l.chunk_counts = region(chunks * E * sizeof(int32_t));
  l.chunk_flags = region(chunks * sizeof(int32_t));
  const FusedDecodeWorkspace fd = fused_decode_workspace(d.max_tokens, d.top_k, d.hidden, d.inter, d.e_local, sms);
  l.sync = region(size_t(fd.sync_words) * sizeof(int32_t));
  l.partials = region(size_t(fd.partial_floats) * sizeof(float));
  l.act = region(R * size_t(std::max(d.hidden, d.inter)) * 2);
  l.gemm_out = region(R * size_t(std::max(2 * d.inter, d.hidden)) * 2);
  l.gemm1_ws_bytes = gemm1_ws_bytes;
  l.gemm2_ws_bytes = gemm2_ws_bytes;
  l.gemm1_ws = region(gemm1_ws_bytes);
  l.gemm2_ws = region(gemm2_ws_bytes);
  l.total = at;
  return l;
}

namespace {

// Forced tactic, or the heuristic's at every T' (no tuning cache).
size_t untuned_bound(const MoeGemm& g, int64_t max_tokens) {
  static std::mutex mu;
  static std::map<std::array<int64_t, 8>, size_t> cache;
  // The decode workspace depends on the SM count (persistent grid): part of the key.
  const int64_t sms = device_info().available ? device_info().sm_count : 0;
  const std::array<int64_t, 8> key{g.shape.groups, max_tokens, g.shape.top_k, g.shape.n, g.shape.k,
                                   int64_t(g.act_dtype), g.tactic, sms};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto at = [&](int64_t tokens) { return gemm_impl::grouped_gemm_workspace_bytes(grouped_params(g, tokens)); };
  size_t bound = at(max_tokens);
  if (g.tactic < 0) {
    // The heuristic may pick a different tactic at every T' (workspace-hungry decode tactics at
    // small T'), so every T' is evaluated; each tactic's requirement grows with T', and only the
    // decode family (few rows per group) needs a workspace, so past 65536 tokens only T' =
    // max_tokens is added.
    const int64_t scan = std::min<int64_t>(max_tokens, 65536);
    for (int64_t t = 1; t <= scan; ++t) bound = std::max(bound, at(t));
  }
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = bound;
  return bound;
}

// The tuned tactics' requirement over T' <= max_tokens. A tuned tactic is fixed per T bucket and
// its requirement grows with T', so each bucket is evaluated at its largest T' <= max_tokens
// (tune_m_buckets lists exactly those ends).
size_t tuned_bound(const MoeGemm& g, int64_t max_tokens, TuneCache* tune) {
  static std::mutex mu;
  static std::map<std::array<int64_t, 11>, size_t> cache;
  const int64_t sms = device_info().available ? device_info().sm_count : 0;
  // The cache's address and generation: entries inserted or reloaded later get a new bound.
  const std::array<int64_t, 11> key{g.shape.groups, g.shape.experts, g.shape.top_k, g.shape.n, g.shape.k,
                                    int64_t(g.act_dtype), int64_t(g.key_a_dtype), max_tokens, sms,
                                    int64_t(reinterpret_cast<intptr_t>(tune)), int64_t(tune->generation())};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  size_t bound = 0;
  for (int64_t t : tune_m_buckets(max_tokens)) {
    gemm_impl::GroupedGemmParams q = grouped_params(g, t);
    q.tactic = tuned_tactic(g, t, tune);
    if (q.tactic >= 0) bound = std::max(bound, gemm_impl::grouped_gemm_workspace_bytes(q));
  }
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = bound;
  return bound;
}

}  // namespace

size_t grouped_workspace_bound(const MoeGemm& g, int64_t max_tokens, TuneCache* cache) {
  const GroupedGemmShape& s = g.shape;
  if (s.groups <= 0 || max_tokens <= 0 || s.top_k <= 0 || s.n <= 0 || s.k <= 0) return 0;
  const size_t bound = untuned_bound(g, max_tokens);
  if (g.tactic >= 0 || cache == nullptr) return bound;
  return std::max(bound, tuned_bound(g, max_tokens, cache));
}

}  // namespace fp4kit::moe_impl
