// Host side of each kernel family: per-tactic checks, workspace and launch.
#pragma once

#include "gemm/tactics.h"

namespace fp4kit::gemm_impl {

Status decode_can_implement(const Tactic& t, const GemmParams& p);
size_t decode_workspace_bytes(const Tactic& t, const GemmParams& p);
Status decode_launch(const Tactic& t, const GemmParams& p, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream);

Status wgmma_can_implement(const Tactic& t, const GemmParams& p);
size_t wgmma_workspace_bytes(const Tactic& t, const GemmParams& p);
Status wgmma_launch(const Tactic& t, const GemmParams& p, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream);

}  // namespace fp4kit::gemm_impl
