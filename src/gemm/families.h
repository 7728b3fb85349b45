// Host side of each kernel family: per-tactic checks, workspace and launch.
#pragma once

#include "gemm/grouped.h"
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

// Grouped mode of both families (gemm/grouped.h); `p` is validated by grouped.cu.
Status grouped_decode_can_implement(const GroupedTactic& t, const GroupedGemmParams& p);
size_t grouped_decode_workspace_bytes(const GroupedTactic& t, const GroupedGemmParams& p);
Status grouped_decode_launch(const GroupedTactic& t, const GroupedGemmParams& p, void* workspace, cudaStream_t stream);

Status grouped_wgmma_can_implement(const GroupedTactic& t, const GroupedGemmParams& p);
Status grouped_wgmma_launch(const GroupedTactic& t, const GroupedGemmParams& p, cudaStream_t stream);

}  // namespace fp4kit::gemm_impl
