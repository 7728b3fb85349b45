// The checkpoint quantizer's GPU path: one tensor at a time through device buffers allocated once,
// sized to the largest tensor. amax by fp4kit::compute_global_scale (kModelOpt), codes and linear
// scales by fp4kit::quantize_nvfp4 (kModelOpt), both with the recipes the CPU reference shares
// (format/block_recipes.h), so the bytes equal the CPU path's (docs/QUANTIZER.md).
#pragma once

#include <cstdint>
#include <memory>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

namespace fp4kit::io {

class GpuQuantizer {
 public:
  // Device buffers for tensors of at most `max_input_bytes` bytes and `max_elements` elements.
  // Fails (kNoDevice / kNotSupported / kCudaError) without a usable sm_90 GPU or device memory.
  static Status create(int64_t max_input_bytes, int64_t max_elements, std::unique_ptr<GpuQuantizer>* out);
  ~GpuQuantizer();
  GpuQuantizer(const GpuQuantizer&) = delete;
  GpuQuantizer& operator=(const GpuQuantizer&) = delete;

  // Copies a host tensor [rows, cols] (BF16/FP16/FP32, rows contiguous) to the device.
  Status load(const void* host, DType dtype, int64_t rows, int64_t cols);
  // max |x| of the loaded tensor, NaNs ignored (compute_global_scale's out_amax), to the host.
  Status amax(float* out);
  // Quantizes the loaded tensor with the decode global scale ws2 (kModelOpt, linear scales) and
  // copies codes [rows, cols/2] and scales [rows, cols/16] to the host buffers.
  Status quantize(float ws2, uint8_t* codes, uint8_t* scales);

 private:
  GpuQuantizer() = default;
  void* in_ = nullptr;
  void* codes_ = nullptr;
  void* scales_ = nullptr;
  float* scalars_ = nullptr;  // [0] ws2 (input of quantize), [1] global scale, [2] amax (outputs)
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  int64_t max_input_bytes_ = 0, max_elements_ = 0;
  DType dtype_ = DType::kBF16;
  int64_t rows_ = 0, cols_ = 0;
};

}  // namespace fp4kit::io
