// Cache keys of the grouped GEMMs of fused_moe (docs/TUNING.md, "Grouped GEMM keys"). The grouped
// heuristic looks at groups, T * top_k rows and T rows at most per group; under uniform routing
// (groups, experts, top_k, T) also fix the expected active experts and rows per expert. So the key
// holds those, with T bucketed like the dense M.
#include <cstdint>

#include "fp4kit/tune.h"

namespace fp4kit {

TuneKey grouped_gemm_tune_key(const GroupedGemmShape& s, DType a_dtype, DType d_dtype, int64_t tokens) {
  TuneKey key;
  key.op = "grouped_gemm";
  key.a_dtype = a_dtype;
  key.d_dtype = d_dtype;
  key.n = s.n;
  key.k = s.k;
  key.m_bucket = tune_m_bucket(tokens);
  key.groups = s.groups;
  key.experts = s.experts;
  key.top_k = s.top_k;
  return key;
}

GroupedGemmShape moe_fc1_shape(const MoeTuneLayer& l) {
  const int64_t ep = l.ep_size > 0 ? l.ep_size : 1;
  return GroupedGemmShape{2 * l.inter, l.hidden, l.experts / ep, l.experts, l.top_k};
}

GroupedGemmShape moe_fc2_shape(const MoeTuneLayer& l) {
  const int64_t ep = l.ep_size > 0 ? l.ep_size : 1;
  return GroupedGemmShape{l.hidden, l.inter, l.experts / ep, l.experts, l.top_k};
}

}  // namespace fp4kit
