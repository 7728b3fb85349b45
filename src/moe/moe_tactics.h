// Which grouped GEMM tactic fused_moe runs for FC1 and FC2 (no CUDA; CPU-tested by
// tests/moe/moe_tactics_test.cpp): the caller's (MoeParams::fc1_tactic / fc2_tactic), else the
// process-wide tuning cache's entry for this GEMM and T (docs/TUNING.md) when it names a grouped
// tactic that can run the call within the reserved workspace, else the heuristic's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp4kit/moe.h"
#include "fp4kit/tune.h"
#include "gemm/grouped.h"

namespace fp4kit::moe_impl {

// One of fused_moe's grouped GEMMs, independent of T.
struct MoeGemm {
  GroupedGemmShape shape;            // FC1: n = 2I, k = H; FC2: n = H, k = I; groups = E_local
  DType act_dtype = DType::kBF16;    // A and D of the grouped GEMM
  DType key_a_dtype = DType::kBF16;  // tuning key: kE2M1x2 in W4A4, else act_dtype
  int tactic = -1;                   // forced tactic; -1: tuned or heuristic
};
// Assume check_problem passed.
MoeGemm moe_fc1_gemm(const MoeParams& p);
MoeGemm moe_fc2_gemm(const MoeParams& p);

// g's grouped GEMM at T tokens as fused_moe calls it (max_rows = T * top_k, max_group_rows = T,
// lda = k, ldd = n); pointers unset, tactic = g.tactic.
gemm_impl::GroupedGemmParams grouped_params(const MoeGemm& g, int64_t tokens);

// The cache's tactic for g at T tokens if it is an id of the grouped tactic table, else -1
// (cache == nullptr: -1). Does not check that it can run.
int tuned_tactic(const MoeGemm& g, int64_t tokens, TuneCache* cache);

// The tactic for `call` (g's GEMM at T tokens, pointers set): g.tactic when >= 0; else the tuned
// tactic when grouped_gemm_can_implement accepts it and its workspace fits `workspace_bytes`;
// else -1 (the heuristic). A tuned entry never makes a call fail.
int choose_tactic(const MoeGemm& g, int64_t tokens, TuneCache* cache, const gemm_impl::GroupedGemmParams& call,
                  size_t workspace_bytes);

}  // namespace fp4kit::moe_impl
