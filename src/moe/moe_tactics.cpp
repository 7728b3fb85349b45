// fused_moe's grouped GEMM tactic choice (moe/moe_tactics.h).
#include "moe/moe_tactics.h"

namespace fp4kit::moe_impl {
namespace {

MoeGemm moe_gemm(const MoeParams& p, int64_t n, int64_t k, int tactic) {
  MoeGemm g;
  g.shape = GroupedGemmShape{n, k, p.ep_size > 0 ? p.num_experts / p.ep_size : 0, p.num_experts, p.top_k};
  g.act_dtype = p.act_dtype;
  g.key_a_dtype = p.mode == MoeMode::kW4A4 ? DType::kE2M1x2 : p.act_dtype;
  g.tactic = tactic;
  return g;
}

}  // namespace

MoeGemm moe_fc1_gemm(const MoeParams& p) { return moe_gemm(p, 2 * p.inter, p.hidden, p.fc1_tactic); }
MoeGemm moe_fc2_gemm(const MoeParams& p) { return moe_gemm(p, p.hidden, p.inter, p.fc2_tactic); }

gemm_impl::GroupedGemmParams grouped_params(const MoeGemm& g, int64_t tokens) {
  gemm_impl::GroupedGemmParams q;
  q.groups = g.shape.groups;
  q.max_rows = tokens * g.shape.top_k;
  q.max_group_rows = tokens;
  q.n = g.shape.n;
  q.k = g.shape.k;
  q.a_dtype = g.act_dtype;
  q.lda = g.shape.k;
  q.ldd = g.shape.n;
  q.tactic = g.tactic;
  return q;
}

int tuned_tactic(const MoeGemm& g, int64_t tokens, TuneCache* cache) {
  if (cache == nullptr) return -1;
  const int id = cache->lookup("grouped_gemm", g.key_a_dtype, g.act_dtype, g.shape.n, g.shape.k, tune_m_bucket(tokens),
                               g.shape.groups, g.shape.experts, g.shape.top_k);
  return gemm_impl::grouped_gemm_tactic(id) != nullptr ? id : -1;
}

int choose_tactic(const MoeGemm& g, int64_t tokens, TuneCache* cache, const gemm_impl::GroupedGemmParams& call,
                  size_t workspace_bytes) {
  if (g.tactic >= 0) return g.tactic;
  const int id = tuned_tactic(g, tokens, cache);
  if (id < 0) return -1;
  gemm_impl::GroupedGemmParams q = call;
  q.tactic = id;
  if (!gemm_impl::grouped_gemm_can_implement(q).is_ok()) return -1;
  if (gemm_impl::grouped_gemm_workspace_bytes(q) > workspace_bytes) return -1;
  return id;
}

}  // namespace fp4kit::moe_impl
