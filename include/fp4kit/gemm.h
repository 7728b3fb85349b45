// fp4kit/gemm.h — dense NVFP4 GEMM on Hopper: D[M,N] = alpha * A[M,K] · B[N,K]ᵀ (+ bias[N]).
//
//   B  NVFP4 weights, prepacked once by prepack_weights() (layout in docs/GEMM.md).
//   A  BF16/FP16 activations (W4A16) or NVFP4 activations with 128x4 scales (W4A4).
//   alpha  FP32 device scalar: 1/gs_b for W4A16, 1/(gs_a*gs_b) for W4A4 (encode global scales).
//   D  BF16 or FP16 (same type as A in W4A16), row stride ldd; bias optional, same dtype as D.
//
// E2M1 x E4M3 products are decoded exactly to BF16/FP16 inside the kernels and multiplied on
// the tensor cores with FP32 accumulation; alpha and bias are applied in FP32 before the output
// is narrowed. Output is deterministic: the same inputs and tactic give bit-identical results every
// run (tactic -1 follows the device and the tuning cache: docs/NUMERICS.md §7b).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit {

// ---- weight prepack -----------------------------------------------------------------------------
// Checkpoint layout in: packed E2M1 [N, K/2] (row-major, element 2j in the low nibble) and E4M3
// block scales in `scale_layout` (kLinear as in ModelOpt checkpoints, or kSwizzled128x4).
// Prepacked layout out: 16-row x 64-K tiles in MMA-fragment order (128-bit loads per thread) plus
// re-encoded scales (docs/GEMM.md). N and K are padded internally; the original is not modified
// and can be kept by the caller if it needs the checkpoint layout again (prepack never aliases).
struct WeightPrepackParams {
  int64_t n = 0;
  int64_t k = 0;                      // multiple of 16
  const uint8_t* codes = nullptr;     // [n, k/2] device
  const uint8_t* scales = nullptr;    // device, in scale_layout
  ScaleLayout scale_layout = ScaleLayout::kLinear;
  void* out = nullptr;                // device, prepacked_weight_bytes(n, k)
  int64_t out_bytes = 0;
};
int64_t prepacked_weight_bytes(int64_t n, int64_t k);
// Asynchronous except for one check: a NaN block scale (0x7F/0xFF) cannot be represented by the
// kernels and is reported as kInvalidArgument, which needs a stream synchronization at the end.
Status prepack_weights(const WeightPrepackParams& p, cudaStream_t stream);

// ---- GEMM -----------------------------------------------------------------------------------------
struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  DType a_dtype = DType::kBF16;        // kBF16 / kFP16 (W4A16) or kE2M1x2 (W4A4)
  const void* a = nullptr;             // W4A16: [m, lda] 16-bit; W4A4: codes [m, lda/2] bytes
  int64_t lda = 0;                     // elements; 0 means k
  const uint8_t* a_scales = nullptr;   // W4A4 only: E4M3 scales of A in the 128x4 layout, 4-byte aligned
  const void* b_prepacked = nullptr;   // from prepack_weights(n, k)
  int64_t b_prepacked_bytes = 0;
  const float* alpha = nullptr;        // device, 1 float
  const void* bias = nullptr;          // device [n] of d_dtype, optional
  void* d = nullptr;                   // device [m, ldd]
  DType d_dtype = DType::kBF16;        // kBF16 or kFP16
  int64_t ldd = 0;                     // elements; 0 means n
  int tactic = -1;                     // -1: automatic (heuristic / tuned cache); else a tactic id
  // Programmatic dependent launch: the GEMM kernel may start while the previous kernel in the stream
  // finishes. Both kernel families (decode and wgmma) then issue their first weight loads before
  // waiting for that kernel, so the weights (and prepacked scales) must not be written by the kernel
  // right before (activations, alpha, bias and D are only touched after the wait). Works inside CUDA
  // graphs.
  bool enable_pdl = false;
};

// Bytes of device workspace `gemm` needs for this problem and tactic (0 is possible).
// The workspace must not be shared by GEMMs running concurrently.
size_t gemm_workspace_bytes(const GemmParams& p);
Status gemm(const GemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// ---- tactics --------------------------------------------------------------------------------------
// Every kernel configuration the dispatcher can run, for the benchmark and the autotuner.
struct GemmTacticInfo {
  int id;
  std::string name;  // e.g. "decode_w4a16_n8_w8_u4" / "wgmma_w4a16_128x128_s4"
};
std::vector<GemmTacticInfo> gemm_tactics();
// Whether tactic `id` can run problem `p` (shape, dtypes, alignment); the reason when it cannot.
Status gemm_tactic_can_implement(int id, const GemmParams& p);
// The tactic `gemm` runs for `p` when p.tactic == -1.
int gemm_default_tactic(const GemmParams& p);

}  // namespace fp4kit
