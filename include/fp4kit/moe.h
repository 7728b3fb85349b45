// fp4kit/moe.h — NVFP4 fused mixture-of-experts layer on Hopper (routing, permute, FC1 + SwiGLU,
// FC2, finalize), in the shape of FlashInfer's cutlass_fused_moe (NVFP4_SPEC.md §6.1).
//
//   out[t] = Σ_{j < top_k, e = selected[t, j] local}  final_scales[t, j] · FC2_e( SwiGLU( FC1_e( x[t] ) ) )
//
//   FC1_e: [2I, H] NVFP4 weights, rows [0, I) = up (w3), rows [I, 2I) = gate (w1)
//   SwiGLU: h = silu(gate) · up, in FP32 from the FC1 output rounded to the activation dtype,
//           h rounded to the activation dtype (W4A16) or quantized to NVFP4 (W4A4, below)
//   FC2_e: [H, I] NVFP4 weights
//
// Numerics (also what reference::fused_moe computes, docs/MOE.md):
//  * W4A16: FC1 takes the 16-bit hidden states; FC1 alpha[e] = 1 / w1_gs[e].
//  * W4A4: the hidden states are quantized per permuted row with fc1_act_global (kExact NVFP4
//    recipe, as quantize_nvfp4), or are given pre-quantized (input_dtype kE2M1x2 with 128x4 scales
//    over the T rows); h is quantized with fc2_act_global; both GEMMs then multiply the exactly
//    decoded values (e2m1 · sf) and alpha[e] = 1 / (a_gs · w_gs[e]) restores the scale.
//  * GEMMs accumulate in FP32 and round once to the activation dtype; finalize sums the top_k
//    expert outputs in FP32 in j order (no atomics) and rounds once. Output is bit-identical run
//    to run (for a given path and tactics; across devices or tuning caches: docs/NUMERICS.md §7b).
//    Tokens none of whose experts are local produce zeros.
//
// Expert parallelism: this rank owns the E_local = E / ep_size experts [ep_rank · E_local,
// (ep_rank + 1) · E_local); weights and per-expert scales cover only those, indexed locally.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit {

// ---- expert weights -------------------------------------------------------------------------------
// Prepacks `experts` weight matrices [n, k] (checkpoint layout, as prepack_weights) into one buffer:
// expert e's prepacked weights (the dense GEMM layout, docs/GEMM.md) start at
// e * prepacked_weight_bytes(n, k).
struct MoeWeightPrepackParams {
  int64_t experts = 0;
  int64_t n = 0;                    // FC1: 2I, FC2: H
  int64_t k = 0;                    // FC1: H,  FC2: I; a multiple of 16
  const uint8_t* codes = nullptr;   // device [experts, n, k/2]
  const uint8_t* scales = nullptr;  // device, experts consecutive scale buffers of
                                    // scale_buffer_bytes(kNVFP4, scale_layout, n, k) bytes each
  ScaleLayout scale_layout = ScaleLayout::kLinear;  // kLinear or kSwizzled128x4
  void* out = nullptr;              // device, moe_prepacked_weight_bytes(experts, n, k)
  int64_t out_bytes = 0;
};
int64_t moe_prepacked_weight_bytes(int64_t experts, int64_t n, int64_t k);
// Synchronizes the stream once at the end (a NaN block scale is reported as kInvalidArgument).
Status prepack_moe_weights(const MoeWeightPrepackParams& p, cudaStream_t stream);

// ---- routing ----------------------------------------------------------------------------------------
enum class MoeRoutingMethod {
  kSoftmaxTopK,  // softmax over E, top-k, renormalize the k weights to sum 1 (if renormalize)
  kTopKSoftmax,  // top-k of the logits, softmax over those k (FlashInfer "Renormalize")
  kDeepSeekV3,   // sigmoid; + bias for selection; top-2 sum per group picks topk_group groups;
                 // top-k inside them; weights = sigmoid scores (no bias), renormalized (if
                 // renormalize), times routed_scaling_factor
};
// Ties are broken toward the lower expert id, so routing is deterministic. GPU limits: E <= 512,
// top_k <= 16.
struct MoeRoutingParams {
  int64_t num_tokens = 0;          // T (0 is an empty batch)
  int64_t num_experts = 0;         // E
  int64_t top_k = 0;               // 1 <= k <= E
  MoeRoutingMethod method = MoeRoutingMethod::kSoftmaxTopK;
  DType logits_dtype = DType::kFP32;  // kFP32 or kBF16
  const void* logits = nullptr;    // device [T, E]
  const float* bias = nullptr;     // kDeepSeekV3: e_score_correction_bias [E] (required)
  int64_t n_group = 1;             // kDeepSeekV3: E % n_group == 0
  int64_t topk_group = 1;          // kDeepSeekV3: groups kept, 1 <= topk_group <= n_group
  float routed_scaling_factor = 1.0f;
  bool renormalize = true;
  int32_t* selected_experts = nullptr;  // device [T, k]: descending weight (kDeepSeekV3: selection
                                        // order, i.e. descending biased score, as TensorRT-LLM)
  float* final_scales = nullptr;        // device [T, k]
};
Status moe_route(const MoeRoutingParams& p, cudaStream_t stream);

// ---- fused MoE ----------------------------------------------------------------------------------------
enum class MoeMode { kW4A16, kW4A4 };

// How fused_moe computes the layer (docs/MOE.md, "Paths"); every path follows the same numerics
// contract, but the FP32 summation order (hence the last bits of the output) may differ between them.
enum class MoePath {
  kAuto,      // the heuristic of src/moe/moe_path.h: per-entry for a few (token, slot) entries
  kPipeline,  // permute + gather, FC1 grouped GEMM, SwiGLU, FC2 grouped GEMM, finalize (5 launches)
  kPerEntry,  // no permutation, 2 launches: FC1 + SwiGLU per (token, slot) entry, then FC2 +
              // finalize per token (small batches; needs top_k <= 32, hidden <= 16384 and
              // T * top_k <= 65535, else kNotSupported). fc1_tactic / fc2_tactic do not apply.
  kFusedDecode,  // permute + gather, then ONE persistent kernel for FC1 + SwiGLU, FC2 and finalize
                 // (small batches: few rows per expert; needs T * top_k <= 4096 and E / ep_size <= 512,
                 // else kNotSupported). fc1_tactic / fc2_tactic do not apply.
};

struct MoeParams {
  int64_t num_tokens = 0;          // T; 0 is a valid empty batch (nothing is launched)
  int64_t max_tokens = 0;          // the workspace is sized for T <= max_tokens (0: num_tokens)
  int64_t hidden = 0;              // H, a multiple of 64
  int64_t inter = 0;               // I, a multiple of 64
  int64_t num_experts = 0;         // E (global)
  int64_t top_k = 0;               // 1 <= top_k <= E
  int64_t ep_size = 1, ep_rank = 0;  // E % ep_size == 0, 0 <= ep_rank < ep_size
  MoeMode mode = MoeMode::kW4A16;
  DType act_dtype = DType::kBF16;  // kBF16 or kFP16: hidden states (if 16-bit), intermediates, output
  DType input_dtype = DType::kBF16;  // act_dtype, or kE2M1x2 (W4A4 only: pre-quantized input)
  const void* input = nullptr;     // device [T, H] 16-bit, or codes [T, H/2]
  const uint8_t* input_scales = nullptr;  // kE2M1x2 input: E4M3 scales, 128x4 layout over T rows
  const int32_t* selected_experts = nullptr;  // device [T, top_k], global ids in [0, E); a token
                                              // may repeat an expert as long as no expert gets
                                              // more than T rows in all
  const float* final_scales = nullptr;        // device [T, top_k]
  const void* fc1_weights = nullptr;  // device, moe_prepacked_weight_bytes(E_local, 2I, H)
  int64_t fc1_weights_bytes = 0;
  const void* fc2_weights = nullptr;  // device, moe_prepacked_weight_bytes(E_local, H, I)
  int64_t fc2_weights_bytes = 0;
  const float* fc1_alpha = nullptr;   // device [E_local]
  const float* fc2_alpha = nullptr;   // device [E_local]
  const float* fc1_act_global = nullptr;  // W4A4 with 16-bit input: encode gs of the FC1 input
  const float* fc2_act_global = nullptr;  // W4A4: encode gs of the FC2 input
  bool act_global_per_expert = false;     // act globals hold E_local values instead of 1
  void* output = nullptr;          // device [T, H] of act_dtype
  // Expert ids live on the device. Ids outside [0, E) never cause out-of-bounds accesses (they are
  // treated as not routed); with check_expert_ids fused_moe also synchronizes the stream after
  // the permutation (per-entry path: after its first kernel, which then checks the ids) and returns
  // kInvalidArgument if it saw one (or an expert with more than T rows), before the output is
  // written. The check is refused (kInvalidArgument) while the stream is capturing: turn it off
  // for CUDA graphs and latency.
  bool check_expert_ids = true;
  // Programmatic dependent launch of the layer's first kernel (as GemmParams::enable_pdl): it may
  // start while the previous kernel in the stream finishes, and waits for that kernel's completion
  // before it reads or writes anything, so there is no contract on the previous kernel. Overlaps
  // the launch with the previous kernel's tail (H100, back-to-back layers: within +-2 %, the launch
  // gap is small there). Applies to the small-batch paths (per-entry, fused-decode); ignored with
  // check_expert_ids (the call synchronizes) and on the pipeline path (measured slower there).
  bool enable_pdl = false;
  int fc1_tactic = -1, fc2_tactic = -1;  // grouped GEMM tactics (pipeline path); -1: heuristic
  MoePath path = MoePath::kAuto;         // force a path (benchmarks, tests); kAuto in production
};

size_t moe_workspace_bytes(const MoeParams& p);
// Asynchronous unless check_expert_ids; no allocation; graph-capturable without the check.
Status fused_moe(const MoeParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// ---- CPU reference ------------------------------------------------------------------------------------
namespace reference {

// Host pointers throughout. Weights in the checkpoint layout (not prepacked), LINEAR scales.
struct MoeRefParams {
  int64_t num_tokens = 0, hidden = 0, inter = 0, num_experts = 0, top_k = 0;
  int64_t ep_size = 1, ep_rank = 0;
  MoeMode mode = MoeMode::kW4A16;
  DType act_dtype = DType::kBF16;
  DType input_dtype = DType::kBF16;
  const void* input = nullptr;             // [T, H] 16-bit bits, or codes [T, H/2]
  const uint8_t* input_scales = nullptr;   // kE2M1x2 input: 128x4 over T rows
  const int32_t* selected_experts = nullptr;
  const float* final_scales = nullptr;
  const uint8_t* fc1_codes = nullptr;      // [E_local, 2I, H/2]
  const uint8_t* fc1_scales = nullptr;     // [E_local, 2I, H/16] linear
  const uint8_t* fc2_codes = nullptr;      // [E_local, H, I/2]
  const uint8_t* fc2_scales = nullptr;     // [E_local, H, I/16] linear
  const float* fc1_alpha = nullptr;        // [E_local]
  const float* fc2_alpha = nullptr;
  const float* fc1_act_global = nullptr;
  const float* fc2_act_global = nullptr;
  bool act_global_per_expert = false;
  void* output = nullptr;                  // [T, H] 16-bit bits of act_dtype
  float* output_f32 = nullptr;             // optional: the FP32 sums before the final rounding
};
Status fused_moe(const MoeRefParams& p);
Status moe_route(const MoeRoutingParams& p);  // host pointers

}  // namespace reference
}  // namespace fp4kit
