// The fused-decode MoE kernel (src/moe/fused_decode.cu): FC1 + SwiGLU, FC2 and finalize of a small
// batch in one persistent launch, after the fused permutation (MoePath::kFusedDecode).
#pragma once

#include <cstdint>

#include "fp4kit/status.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::moe_impl {

struct FusedDecodeArgs {
  int hidden = 0, inter = 0, top_k = 0, tokens = 0;  // H, I (multiples of 64), k, T
  int slots = 0;                     // upper bound of num_active: min(E_local, T * k)
  const void* a1 = nullptr;          // [rows, H] FC1 input (16-bit, gathered by the permutation)
  void* f2 = nullptr;                // [rows, H] FC2 output: must be a1 (row r of F2 overwrites row r of A1)
  void* h = nullptr;                 // [rows, I] FC2 input
  void* out = nullptr;               // [T, H]
  const int32_t* offsets = nullptr;  // the permutation's group list and entry -> row map
  const int32_t* active = nullptr;
  const int32_t* num_active = nullptr;
  const int32_t* perm = nullptr;
  const float* final_scales = nullptr;  // [T, k]
  const uint8_t* w1 = nullptr;       // prepacked FC1 weights, w1_bytes per local expert
  const uint8_t* w2 = nullptr;
  int64_t w1_bytes = 0, w1_code_bytes = 0, w2_bytes = 0, w2_code_bytes = 0;
  const float* alpha1 = nullptr;     // [E_local]
  const float* alpha2 = nullptr;
  const float* act_global2 = nullptr;  // W4A4: fc2_act_global (per local expert with per_expert)
  bool per_expert = false;
  // Zero before the launch (fused_decode_sync_words of them, from fc1_done on; the permutation
  // kernel clears them): [slots] FC1 units done per slot, [H / 32] FC2 units done per row block,
  // then the unit dispenser.
  int* fc1_done = nullptr;
  int* fin_count = nullptr;
  int* dispenser = nullptr;
};

inline int64_t fused_decode_sync_words(int64_t slots, int64_t hidden) { return slots + hidden / 32 + 1; }

Status launch_fused_decode(const FusedDecodeArgs& a, bool bf16, bool quantize, int sm_count, cudaStream_t stream);

}  // namespace fp4kit::moe_impl
