// Internal interface of the fused-MoE kernels (src/moe/*.cu): limits, argument blocks and host
// launchers. The pipeline and its numerics are described at the top of src/moe/fused_moe.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::moe_impl {

// ---- routing (moe_route) ----------------------------------------------------------------------------
inline constexpr int kMaxRouteExperts = 512;
inline constexpr int kMaxRouteTopK = 16;

// ---- permutation ------------------------------------------------------------------------------------
// A "chunk" of expanded entries (t, j) is ranked by one 512-thread block: warp w takes a contiguous
// span of at most kMaxSpan entries and counts them per local expert in a uint16 table
// [warps][E_local] in shared memory (kTableEntries entries at most).
inline constexpr int kPermuteThreads = 512;
inline constexpr int kPermuteWarps = kPermuteThreads / 32;
inline constexpr int kMaxSpan = 256;  // entries per warp (8 iterations of 32)
inline constexpr int kTableEntries = 16384;
inline constexpr int64_t kMaxLocalExperts = kTableEntries;  // E / ep_size
// Small problems: one kernel ranks all T*top_k entries in every block (redundantly) and gathers.
inline constexpr int64_t kFusedMaxRows = int64_t(kPermuteWarps) * kMaxSpan;  // 4096
inline constexpr int64_t kFusedMaxExperts = kPermuteThreads;                  // 512

inline bool use_fused_permute(int64_t rows, int64_t e_local) {
  return rows <= kFusedMaxRows && e_local <= kFusedMaxExperts;
}
// Multi-kernel path: warps per chunk (their tables must fit) and entries per chunk.
inline int chunk_warps(int64_t e_local) {
  const int64_t w = kTableEntries / (e_local > 0 ? e_local : 1);
  return int(w < 1 ? 1 : (w > kPermuteWarps ? kPermuteWarps : w));
}
inline int64_t chunk_entries(int64_t e_local) { return int64_t(chunk_warps(e_local)) * kMaxSpan; }

// Blocks of `threads` threads for `items` one-per-thread work items, at least 1, at most
// max_blocks (the grid-stride kernels loop over the rest).
inline int grid_for(int64_t items, int threads, int64_t max_blocks) {
  const int64_t b = (items + threads - 1) / threads;
  return int(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
}
// W4A4's elementwise NVFP4 round trips of the pipeline (SwiGLU's requantization of h, the per-token
// quantization of x on the multi-kernel path): four lanes per 16-element block keep each thread's
// dependent chain short (these kernels sit between two GEMMs, and at small batches that chain is
// the latency); one thread per block cuts the instructions per element by a third to a half (no
// shuffles, the block scale once, 16-byte loads), which is what counts once the blocks fill the GPU many times over:
// from kQuantThreadPerBlockMin blocks per SM on. forced: 0 / 1 (FP4KIT_MOE_QUANT_BLOCK) overrides.
inline constexpr int64_t kQuantThreadPerBlockMin = 1024;
inline bool quant_thread_per_block(int64_t nvfp4_blocks, int sm_count, int forced) {
  if (forced >= 0) return forced == 1;
  return nvfp4_blocks >= kQuantThreadPerBlockMin * int64_t(sm_count > 0 ? sm_count : 132);
}
// The same with the process-wide override: FP4KIT_MOE_QUANT_BLOCK=0|1 at the first call, or
// set_quant_thread_per_block_override (tests: -1 = the rule, 0 / 1 = forced; returns the previous).
bool quant_thread_per_block(int64_t nvfp4_blocks, int sm_count);
int set_quant_thread_per_block_override(int forced);

// The pipeline's FC1 on the 256x128 wgmma tile (the only one whose tensor work outlasts one TMA box
// per activation row: sm90::kGatherRowsBN) where that pays (moe_path.h, fc1_row_gather_pays) reads
// its activation rows in place through row_token (sm90::wg_gather_producer) instead of a gathered
// copy A1: W4A16 reads x, W4A4 with one activation global the tokens quantized once. On by default;
// FP4KIT_MOE_ROW_GATHER=0|1 at the first call, or set_fc1_row_gather_override (tests: -1 = default,
// 0 / 1 = off / on; returns the previous).
bool fc1_row_gather_enabled();
int set_fc1_row_gather_override(int forced);

inline int64_t chunk_count(int64_t rows, int64_t e_local) {
  const int64_t c = chunk_entries(e_local);
  return (rows + c - 1) / c;
}

// Bits of the permutation's error word (workspace header[0]).
inline constexpr int kBadExpertId = 1;    // some id is outside [0, E) (treated as not routed)
inline constexpr int kGroupOverflow = 2;  // some local expert got more than T rows (a token selects
                                          // it twice): past the grouped GEMM's max_group_rows = T

// How the gather writes the permuted FC1 input rows.
enum class GatherMode : int {
  kCopy = 0,      // W4A16: copy the 16-bit row
  kQuantize = 1,  // W4A4, 16-bit input: kExact NVFP4 with fc1_act_global, write e2m1 * sf
  kDecode = 2,    // W4A4, NVFP4 input: e2m1 * sf from codes and 128x4 scales
  kNone = 3,      // fused permutation only: no A1 (the fused-decode kernel reads x through row_token)
};

struct PermuteArgs {
  const int32_t* selected = nullptr;  // [n] global expert ids
  int n = 0;                          // T * top_k (expanded entries)
  int top_k = 0;
  int num_experts = 0;  // E
  int e_begin = 0;      // first local expert
  int e_local = 0;
  int32_t* perm = nullptr;        // [n]: permuted row of entry (t, j), or -1
  int32_t* offsets = nullptr;     // [e_local + 1]
  int32_t* active = nullptr;      // [e_local]: local experts with rows, ascending
  int32_t* num_active = nullptr;  // [1]
  int32_t* row_expert = nullptr;  // [n]: local expert of each permuted row (null: not written)
  int32_t* row_token = nullptr;   // optional: [n] token of each permuted row (FC1 reads x through it)
  int32_t* error_flag = nullptr;  // [1]: kBadExpertId | kGroupOverflow bits
  int32_t* chunk_counts = nullptr;  // multi-kernel path: [chunks][e_local]
  int32_t* chunk_flags = nullptr;   // multi-kernel path: [chunks]
  // Fused path: block 0 triggers its programmatic dependents only after publishing offsets, active
  // and num_active (with a fence), so that kernels two launches later may read them before their own
  // wait (GroupedGemmParams::groups_ready). Otherwise every block triggers at its start.
  bool publish_before_trigger = false;
  // Fused path: words block 0 sets to zero (the fused-decode kernel's counters, fused_decode.h).
  int32_t* clear = nullptr;
  int clear_words = 0;
  // Fused path: launched with programmatic stream serialization (MoeParams::enable_pdl): the kernel
  // then starts while the previous kernel in the stream finishes and waits for it before it reads or
  // writes global memory.
  bool pdl = false;
};

struct GatherArgs {
  GatherMode mode = GatherMode::kCopy;
  bool bf16 = true;  // activation dtype
  const void* input = nullptr;          // [T, H] 16-bit or codes [T, H/2]
  const uint8_t* input_scales = nullptr;  // kDecode: 128x4 over T rows
  int64_t hidden = 0;
  void* a1 = nullptr;                   // [rows, hidden] 16-bit
  const float* act_global = nullptr;    // kQuantize
  bool per_expert = false;
  // Fused permutation only, kQuantize with one act_global or kDecode: block 0 ranks (writing
  // row_token, no gather) and the other blocks quantize (decode) the T token rows into a1 [T, H] at
  // the same time; the consumer reads them through row_token (the fused-decode path's W4A4 FC1).
  bool token_rows = false;
};

// Fused path (use_fused_permute): permutation + gather in one launch.
Status launch_permute_gather_fused(const PermuteArgs& a, const GatherArgs& g, int sm_count, cudaStream_t stream);
// Multi-kernel path: count, scan, rank (permutation only) ...
Status launch_permute_multi(const PermuteArgs& a, cudaStream_t stream);
// ... then the gather, after the optional expert-id check.
Status launch_gather(const PermuteArgs& a, const GatherArgs& g, int sm_count, cudaStream_t stream);
// W4A4 with a 16-bit input and one activation global scale: the FC1 input of every token, quantized
// and decoded once ([tokens, hidden] 16-bit into g.a1, g.mode == kQuantize, !g.per_expert), so that
// the gather can copy rows instead of quantizing each of the top_k entries of a token again.
Status launch_quantize_rows(const GatherArgs& g, int64_t tokens, int sm_count, cudaStream_t stream);

// ---- SwiGLU and finalize ----------------------------------------------------------------------------
struct SwigluArgs {
  bool bf16 = true;
  bool quantize = false;          // W4A4: quantize h with act_global (kExact) and write e2m1 * sf
  const void* f1 = nullptr;       // [rows, 2I]
  void* a2 = nullptr;             // [rows, I]
  int64_t inter = 0;
  int64_t max_rows = 0;           // T * top_k (grid size); the rows done are offsets[e_local]
  const int32_t* total_rows = nullptr;  // &offsets[e_local]
  const int32_t* row_expert = nullptr;
  const float* act_global = nullptr;
  bool per_expert = false;
  bool pdl = false;  // programmatic dependent launch (the kernel waits before reading)
};
Status launch_swiglu(const SwigluArgs& s, int sm_count, cudaStream_t stream);

struct FinalizeArgs {
  bool bf16 = true;
  const void* f2 = nullptr;  // [rows, H]
  const int32_t* perm = nullptr;
  const float* scales = nullptr;  // [T, top_k]
  int64_t tokens = 0, hidden = 0;
  int top_k = 0;
  void* out = nullptr;       // [T, H]
  bool pdl = false;  // programmatic dependent launch (the kernel waits before reading)
};
Status launch_finalize(const FinalizeArgs& f, int sm_count, cudaStream_t stream);

}  // namespace fp4kit::moe_impl
