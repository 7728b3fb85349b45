// Grouped NVFP4 GEMM (internal; the building block of the fused MoE in src/moe).
//
// G independent problems that share N, K and dtypes, whose row counts live on the device (they are
// produced by the MoE permutation kernel, so the host never sees them and the call stays
// graph-capturable):
//
//   for g in [0, groups):  rows [offsets[g], offsets[g+1]) of A and D:
//       D[r, :] = alpha[g] * A[r, :] · B_gᵀ                (r in those rows)
//
//   A        16-bit activations [max_rows, lda] (the permuted rows; W4A4 activations are decoded
//            to 16 bits exactly before the call, as the dense W4A4 path does)
//   B_g      prepacked NVFP4 weights of group g: `groups` consecutive buffers of
//            prepacked_weight_bytes(n, k) bytes each (prepack_weights() per expert, stacked)
//   offsets  device int32 [groups + 1], non-decreasing, offsets[0] = 0, offsets[groups] <= max_rows
//   active   device int32 [groups]: the ids of the groups with rows, ascending, then anything;
//            num_active (device int32) of them are valid. The decode family walks only these.
//   alpha    device float [groups]
//   D        [max_rows, ldd] of d_dtype (== a_dtype); rows not covered by any group are not written.
//
// Two families, as for the dense GEMM: a grouped decode kernel (mma.sync, stream-K over warps
// across the active groups, for few rows per group) and a grouped wgmma kernel (persistent tile
// scheduler over (group, m tile, n tile), for many rows per group). Deterministic: the same
// inputs give bit-identical outputs. The data-parallel decode and wgmma tactics are also
// placement-invariant (a row's result does not depend on the other groups' rows); the stream-K
// decode tactics split K by position in the unit list, so their FP32 rounding can.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::gemm_impl {

struct GroupedGemmParams {
  int64_t groups = 0;          // G >= 1
  int64_t max_rows = 0;        // rows of A and D (upper bound of offsets[groups]); 0: nothing to do
  int64_t max_group_rows = 0;  // upper bound on any group's rows (e.g. T for top-k routing)
  int64_t n = 0, k = 0;        // k multiple of 16
  DType a_dtype = DType::kBF16;  // kBF16 or kFP16; D has the same dtype
  const void* a = nullptr;
  int64_t lda = 0;             // elements; 0 means k
  const int32_t* offsets = nullptr;
  const int32_t* active = nullptr;
  const int32_t* num_active = nullptr;
  const void* b_prepacked = nullptr;  // groups * prepacked_weight_bytes(n, k)
  const float* alpha = nullptr;       // [groups]
  void* d = nullptr;
  int64_t ldd = 0;             // elements; 0 means n
  int tactic = -1;             // -1: heuristic; else an id of grouped_gemm_tactics()
  // Decode tactics: launched with programmatic dependent launch; they wait for the previous kernel
  // before reading anything (offsets, weights included). Ignored by the wgmma tactics.
  bool enable_pdl = false;
  // offsets / active / num_active are written and visible before this kernel can start (under PDL:
  // their writer triggers its dependents only after writing them and a fence, and every kernel in
  // between starts only after that trigger): the dp decode kernel then reads them and requests its
  // first weights before waiting for the previous kernel (which produces the activations).
  bool groups_ready = false;
  // Optional, wgmma tactics only: the rows of A are gathered. Row r of the grouped problem reads
  // row row_token[r] (device int32 [max_rows], each in [0, a_rows)) of `a`, an [a_rows, lda] matrix,
  // in place of a permuted copy (the MoE's FC1 reading its tokens). D is written as without it.
  const int32_t* row_token = nullptr;
  int64_t a_rows = 0;
};

enum class GroupedFamily { kDecode, kWgmma };

struct GroupedTactic {
  int id;
  GroupedFamily family;
  int nt = 0, rows = 0, unroll = 0;            // decode
  int block_n = 0, block_m = 0, stages = 0;    // wgmma
  const char* name;
  bool dp = false;  // decode: data-parallel row blocks, split-K inside the CTA (else stream-K)
  bool roll = false;  // dp: rolling load groups (stream_rolling, sm90/decode_kernel.cuh)
};

// Every grouped tactic (for the MoE autotuner); ids are dense from 0.
int grouped_gemm_tactic_count();
const GroupedTactic* grouped_gemm_tactic(int id);
// The heuristic's tactic for this problem (uses max_rows / groups and max_group_rows), for this
// device (`rich`: gemm_impl::device_hbm_rich(), tactics.h), or for either kind of device.
// Rows per group as the heuristic sees them: max_rows over the groups that can have rows (at most
// max_rows of them), rounded up; at least 1 group.
inline int64_t grouped_mean_rows(const GroupedGemmParams& p) {
  const int64_t active = p.groups < p.max_rows ? p.groups : p.max_rows;
  return active > 1 ? (p.max_rows + active - 1) / active : p.max_rows;
}
int grouped_gemm_default_tactic(const GroupedGemmParams& p);
int grouped_gemm_default_tactic(const GroupedGemmParams& p, bool rich);

Status grouped_gemm_can_implement(const GroupedGemmParams& p);   // validates p and its tactic
size_t grouped_gemm_workspace_bytes(const GroupedGemmParams& p);
// Asynchronous; no host synchronization, no allocation.
Status grouped_gemm(const GroupedGemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace fp4kit::gemm_impl
