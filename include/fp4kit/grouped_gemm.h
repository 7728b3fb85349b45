// fp4kit/grouped_gemm.h — grouped NVFP4 GEMM: G problems that share N, K and dtypes, whose rows sit
// contiguously in one A and one D and whose row counts live on the device (the "contiguous" layout of
// MoE frameworks that permute tokens themselves, as DeepGEMM's m-grouped GEMM):
//
//   for g in [0, groups):  for r in [group_offsets[g], group_offsets[g+1]):
//       D[r, :] = alpha[g] * A[r, :] · B_gᵀ
//
// B_g are prepacked NVFP4 weights (prepack_weights, fp4kit/gemm.h), `groups` buffers of
// prepacked_weight_bytes(n, k) bytes laid end to end. A is BF16/FP16 (W4A16) or NVFP4 with 128x4
// scales over max_rows rows (W4A4). The numerics are the dense GEMM's (exact decode, FP32
// accumulation, alpha in FP32, one rounding); the kernels are the fused MoE's grouped GEMMs (a
// decode family for few rows per group, a wgmma family with a persistent tile scheduler over
// (group, m tile, n tile) for many). Deterministic: the same inputs and tactic give bit-identical
// outputs (docs/NUMERICS.md §7b).
//
// The offsets are device data, so the host cannot check them without a synchronization. A small
// kernel in front of the GEMM checks them (offsets[0] == 0, non-decreasing, offsets[groups] <=
// max_rows, no group longer than max_group_rows) and derives the list of non-empty groups; offsets
// that fail never cause an out-of-bounds access: the GEMM then writes nothing. With check_offsets the
// call synchronizes the stream after that kernel and returns kInvalidArgument (refused while the
// stream is capturing a graph: turn it off for CUDA graphs and latency).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fp4kit/gemm.h"
#include "fp4kit/status.h"
#include "fp4kit/types.h"

namespace fp4kit {

struct GroupedGemmParams {
  int64_t groups = 0;          // G >= 1
  int64_t max_rows = 0;        // rows of A and D (offsets[G] <= max_rows); 0: nothing to do
  int64_t max_group_rows = 0;  // bound on any one group's rows (0: max_rows); a tight bound lets the
                               // dispatcher pick the small-row kernels (e.g. T for top-k routing)
  int64_t n = 0, k = 0;        // every B_g is [n, k]; k a multiple of 16
  DType a_dtype = DType::kBF16;  // kBF16 / kFP16 (W4A16) or kE2M1x2 (W4A4)
  const void* a = nullptr;       // W4A16: [max_rows, lda] 16-bit; W4A4: codes [max_rows, lda/2]
  int64_t lda = 0;               // elements; 0 means k
  const uint8_t* a_scales = nullptr;    // W4A4 only: E4M3 scales of A, 128x4 layout over max_rows rows
  const int32_t* group_offsets = nullptr;  // device [G + 1]
  const void* b_prepacked = nullptr;       // device, G * prepacked_weight_bytes(n, k)
  int64_t b_prepacked_bytes = 0;
  const float* alpha = nullptr;  // device [G]: 1/gs_b[g] (W4A16) or 1/(gs_a*gs_b[g]) (W4A4)
  void* d = nullptr;             // device [max_rows, ldd]; rows outside every group are not written
  DType d_dtype = DType::kBF16;  // kBF16 / kFP16 (W4A16: a_dtype)
  int64_t ldd = 0;               // elements; 0 means n
  int tactic = -1;               // -1: heuristic; else an id of grouped_gemm_tactics()
  bool check_offsets = true;     // synchronize and report invalid offsets (see above)
  // Programmatic dependent launch: the call's first kernel may start while the previous kernel in the
  // stream finishes and waits for it before reading anything (no contract on the previous kernel).
  // Ignored with check_offsets.
  bool enable_pdl = false;
};

// Device workspace `grouped_gemm` needs (> 0: the checked offsets and the group list live there;
// W4A4 also stages A decoded to 16 bits, max_rows * k * 2 bytes). One per stream.
size_t grouped_gemm_workspace_bytes(const GroupedGemmParams& p);
// Asynchronous unless check_offsets; no allocation; graph-capturable without the check.
Status grouped_gemm(const GroupedGemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream);

std::vector<GemmTacticInfo> grouped_gemm_tactics();
// Whether tactic `id` can run `p`, and why not.
Status grouped_gemm_tactic_can_implement(int id, const GroupedGemmParams& p);
// The tactic `grouped_gemm` runs for `p` when p.tactic == -1 (it uses groups, max_rows,
// max_group_rows, n and k; the tuning cache is not consulted).
int grouped_gemm_default_tactic(const GroupedGemmParams& p);

namespace reference {
// The CPU reference (host pointers): each group through reference::gemm (fp4kit/reference.h), B_g
// in the checkpoint layout: codes [G, n, k/2] and E4M3 scales [G, n, k/16] in b_scale_layout per
// group (kLinear: one [n, k/16] matrix per group, end to end). Rows outside every group are not
// written. Offsets are validated as on the device (kInvalidArgument).
struct GroupedGemmRefParams {
  int64_t groups = 0, max_rows = 0, max_group_rows = 0, n = 0, k = 0;
  DType a_dtype = DType::kBF16;
  const void* a = nullptr;
  int64_t lda = 0;
  const uint8_t* a_scales = nullptr;   // W4A4: 128x4 over max_rows rows
  const int32_t* group_offsets = nullptr;
  const uint8_t* b = nullptr;          // [G, n, k/2]
  const uint8_t* b_scales = nullptr;   // G scale matrices of n x k/16 in b_scale_layout
  ScaleLayout b_scale_layout = ScaleLayout::kLinear;
  const float* alpha = nullptr;        // [G]
  void* d = nullptr;
  DType d_dtype = DType::kBF16;
  int64_t ldd = 0;
};
Status grouped_gemm(const GroupedGemmRefParams& p);
}  // namespace reference

}  // namespace fp4kit
