// fp4kit/quantize.h — block quantization and dequantization.
//
// The same parameter structs drive the GPU kernels (fp4kit::quantize_*, device pointers, a stream)
// and the CPU reference (fp4kit::reference::quantize_*, host pointers; fp4kit/reference.h).
// Matrices are row-major [rows, cols] with blocks along cols (K). 16-bit values are BF16/FP16.
#pragma once

#include <cstdint>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit {

// BF16/FP16/FP32 [rows, cols] -> packed E2M1 [rows, cols/2] + E4M3 scales (one per 16 elements).
struct Nvfp4QuantizeParams {
  const void* input = nullptr;      // [rows, input_row_stride] of input_dtype
  DType input_dtype = DType::kBF16;  // kBF16, kFP16 or kFP32
  int64_t rows = 0;
  int64_t cols = 0;                 // K; a multiple of 16
  int64_t input_row_stride = 0;     // elements between rows; >= cols (0 means cols)
  // FP32 global scale: one value, or `rows` values when per_row_global_scale. For kExact and kFast
  // the encode scale gs = 2688/amax; for kModelOpt the decode scale ws2 = amax/2688.
  const float* global_scale = nullptr;
  bool per_row_global_scale = false;
  QuantNumerics numerics = QuantNumerics::kExact;
  void* out_codes = nullptr;        // [rows, cols/2] bytes, rows contiguous
  int64_t out_codes_bytes = 0;      // capacity of out_codes, >= rows*cols/2
  void* out_scales = nullptr;       // scale buffer in scale_layout; padding is written as zeros
  int64_t out_scales_bytes = 0;     // capacity, >= scale_buffer_bytes(kNVFP4, layout, rows, cols)
  ScaleLayout scale_layout = ScaleLayout::kSwizzled128x4;
  bool enable_pdl = false;          // programmatic dependent launch (GPU only)
};

// BF16/FP16/FP32 -> MXFP4 (E2M1 + UE8M0, block 32) or MXFP8 (E4M3 [rows, cols] + UE8M0, block 32).
// No global scale. cols must be a multiple of 32.
struct MxQuantizeParams {
  BlockFormat format = BlockFormat::kMXFP4;  // kMXFP4 or kMXFP8
  const void* input = nullptr;
  DType input_dtype = DType::kBF16;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t input_row_stride = 0;
  QuantNumerics numerics = QuantNumerics::kExact;  // kExact or kFast
  void* out_elements = nullptr;     // MXFP4: [rows, cols/2]; MXFP8: [rows, cols]
  int64_t out_elements_bytes = 0;
  void* out_scales = nullptr;
  int64_t out_scales_bytes = 0;
  ScaleLayout scale_layout = ScaleLayout::kSwizzled128x4;
  bool enable_pdl = false;
};

// NVFP4/MXFP4/MXFP8 -> BF16/FP16/FP32. value = element * scale (* decode_global_scale for NVFP4).
struct DequantizeParams {
  BlockFormat format = BlockFormat::kNVFP4;
  const void* elements = nullptr;
  const void* scales = nullptr;
  ScaleLayout scale_layout = ScaleLayout::kSwizzled128x4;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t element_row_stride = 0;   // elements (codes) between rows of `elements`; 0 means cols;
                                    // a multiple of the block size (16 or 32)
  // NVFP4 only: the FP32 *decode* global scale (1/gs, or ws2), one value or one per row; may be
  // null for 1.0.
  const float* decode_global_scale = nullptr;
  bool per_row_global_scale = false;
  void* output = nullptr;
  DType output_dtype = DType::kBF16;
  int64_t output_row_stride = 0;    // elements; 0 means cols
  int64_t output_bytes = 0;         // capacity of output
  bool enable_pdl = false;          // programmatic dependent launch (waits for the previous kernel first)
};

// Scale-buffer layout conversion (linear <-> 128x4 <-> 8x4) for a rows x sf_cols scale matrix.
struct ScaleLayoutConvertParams {
  const uint8_t* input = nullptr;
  ScaleLayout input_layout = ScaleLayout::kLinear;
  uint8_t* output = nullptr;
  ScaleLayout output_layout = ScaleLayout::kSwizzled128x4;
  int64_t rows = 0;
  int64_t sf_cols = 0;
  int64_t input_bytes = 0;
  int64_t output_bytes = 0;
};

// amax over a [rows, cols] tensor -> global scale, in one stream-ordered sequence (no host sync).
// amax = max |x| with NaNs ignored (an all-NaN or all-zero tensor has amax 0), exact in FP32.
//   encode (kExact/kFast convention): gs = 2688.0f / amax (FP32 division, round to nearest), except
//     amax == 0 -> 1.0f;  2688/amax overflows to +Inf (amax < 2688/FLT_MAX) -> FLT_MAX (as TE
//     clamps);  2688/amax == 0 (amax = +Inf) -> 1.0f.
//   kModelOpt convention: ws2 = amax / 2688.0f (FP32 division, round to nearest), no special cases
//     (an all-zero tensor gives ws2 = 0; see docs/NUMERICS.md "Global scale").
// With per_row, one scale per row. `workspace` must hold global_scale_workspace_bytes(...).
struct GlobalScaleParams {
  const void* input = nullptr;
  DType input_dtype = DType::kBF16;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t input_row_stride = 0;
  bool per_row = false;
  QuantNumerics numerics = QuantNumerics::kExact;  // selects the convention (encode vs ModelOpt)
  float* out_global_scale = nullptr;               // 1 or rows floats
  float* out_amax = nullptr;                       // optional: 1 or rows floats
};

// ---- GPU entry points (device pointers; asynchronous on `stream`) ----
Status quantize_nvfp4(const Nvfp4QuantizeParams& p, cudaStream_t stream);
Status quantize_mx(const MxQuantizeParams& p, cudaStream_t stream);
Status dequantize(const DequantizeParams& p, cudaStream_t stream);
Status convert_scale_layout(const ScaleLayoutConvertParams& p, cudaStream_t stream);
size_t global_scale_workspace_bytes(const GlobalScaleParams& p);
Status compute_global_scale(const GlobalScaleParams& p, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream);

}  // namespace fp4kit
