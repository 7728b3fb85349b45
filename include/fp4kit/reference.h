// fp4kit/reference.h — the CPU reference: the numerics contract of fp4kit, written for clarity and
// threaded to test large shapes. Same parameter structs as the GPU API, host pointers.
#pragma once

#include <cstdint>

#include "fp4kit/quantize.h"
#include "fp4kit/status.h"
#include "fp4kit/types.h"

namespace fp4kit::reference {

Status quantize_nvfp4(const Nvfp4QuantizeParams& p);
Status quantize_mx(const MxQuantizeParams& p);
Status dequantize(const DequantizeParams& p);
Status convert_scale_layout(const ScaleLayoutConvertParams& p);
Status compute_global_scale(const GlobalScaleParams& p);

// Reference GEMM: D[m, n] = alpha * sum_k A[m, k] * B[n, k] (+ bias[n]), with A and B decoded
// exactly to double and accumulated in double, then rounded once to out_dtype.
// B is always NVFP4 [n, k] (packed codes [n, k/2] + scales in b_scale_layout). A is BF16/FP16
// [m, lda] (W4A16) or NVFP4 (W4A4: codes [m, k/2] + scales in a_scale_layout).
struct GemmRefParams {
  int64_t m = 0, n = 0, k = 0;
  DType a_dtype = DType::kBF16;  // kBF16, kFP16 or kE2M1x2
  const void* a = nullptr;
  int64_t lda = 0;               // elements (16-bit A) ; 0 means k
  const uint8_t* a_scales = nullptr;
  ScaleLayout a_scale_layout = ScaleLayout::kSwizzled128x4;
  const uint8_t* b = nullptr;
  const uint8_t* b_scales = nullptr;
  ScaleLayout b_scale_layout = ScaleLayout::kSwizzled128x4;
  float alpha = 1.0f;             // 1/(gs_a*gs_b) for W4A4, 1/gs_b for W4A16
  const void* bias = nullptr;     // [n] in out_dtype, optional
  DType out_dtype = DType::kBF16;  // kBF16, kFP16 or kFP32
  void* d = nullptr;              // [m, ldd]
  int64_t ldd = 0;                // 0 means n
  double* d_f64 = nullptr;        // optional: the unrounded result [m, n]
};
Status gemm(const GemmRefParams& p);

}  // namespace fp4kit::reference
