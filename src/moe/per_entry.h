// The per-entry small-batch path of fused_moe (kernels and overview: src/moe/per_entry.cu; when it
// is taken: src/moe/moe_path.h).
#pragma once

#include <cstdint>

#include "fp4kit/moe.h"
#include "fp4kit/status.h"
#include "moe/moe_workspace.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::moe_impl {

// Runs the whole layer for T = d.tokens > 0 tokens. Assumes fused_moe's argument and workspace
// checks passed and per_entry_supported(top_k, hidden). Workspace use: `h` is the act region of
// the pipeline's layout (16-bit [max_tokens * top_k, max(H, I)] >= [T * top_k, I]), `header` its
// int32 error word (written only with check_expert_ids).
Status run_per_entry(const MoeParams& p, const MoeDims& d, int32_t* header, void* h, void* xq, cudaStream_t stream);

}  // namespace fp4kit::moe_impl
