// The checkpoint quantizer's GPU path (gpu_quantizer.h). Synchronous: each call returns when its
// results are on the host, so exactly one tensor is in flight.
#include "io/gpu_quantizer.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common/cuda_check.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"

namespace fp4kit::io {

namespace {

// GlobalScaleParams for a per-tensor kModelOpt scale (the workspace size does not depend on the
// tensor's size for a per-tensor scale, but is asked for through the API all the same).
GlobalScaleParams gs_params(const void* in, DType dtype, int64_t rows, int64_t cols, float* gs, float* amax) {
  GlobalScaleParams g;
  g.input = in;
  g.input_dtype = dtype;
  g.rows = rows;
  g.cols = cols;
  g.numerics = QuantNumerics::kModelOpt;
  g.out_global_scale = gs;
  g.out_amax = amax;
  return g;
}

}  // namespace

Status GpuQuantizer::create(int64_t max_input_bytes, int64_t max_elements, std::unique_ptr<GpuQuantizer>* out) {
  FP4KIT_RETURN_IF_ERROR(detail::require_device("quantize --device gpu"));
  std::unique_ptr<GpuQuantizer> q(new GpuQuantizer());
  q->max_input_bytes_ = max_input_bytes;
  q->max_elements_ = max_elements;
  const int64_t code_bytes = max_elements / 2;  // two E2M1 codes per byte
  const int64_t scale_bytes = max_elements / 16;
  q->workspace_bytes_ = global_scale_workspace_bytes(gs_params(nullptr, DType::kBF16, 1, 16, nullptr, nullptr));
  FP4KIT_CUDA_RETURN(cudaMalloc(&q->in_, size_t(std::max<int64_t>(max_input_bytes, 16))), "cudaMalloc (input)");
  FP4KIT_CUDA_RETURN(cudaMalloc(&q->codes_, size_t(std::max<int64_t>(code_bytes, 16))), "cudaMalloc (codes)");
  FP4KIT_CUDA_RETURN(cudaMalloc(&q->scales_, size_t(std::max<int64_t>(scale_bytes, 16))), "cudaMalloc (scales)");
  FP4KIT_CUDA_RETURN(cudaMalloc(reinterpret_cast<void**>(&q->scalars_), 4 * sizeof(float)), "cudaMalloc (scalars)");
  if (q->workspace_bytes_ > 0)
    FP4KIT_CUDA_RETURN(cudaMalloc(&q->workspace_, q->workspace_bytes_), "cudaMalloc (workspace)");
  *out = std::move(q);
  return Status::ok();
}

GpuQuantizer::~GpuQuantizer() {
  // Errors on release are ignored: nothing can be done about them here.
  for (void* p : {in_, codes_, scales_, static_cast<void*>(scalars_), workspace_})
    if (p) cudaFree(p);
}

Status GpuQuantizer::load(const void* host, DType dtype, int64_t rows, int64_t cols) {
  const int64_t bytes = rows * cols * int64_t(dtype_size(dtype));
  if (rows <= 0 || cols <= 0 || cols % 16 != 0 || bytes > max_input_bytes_ || rows * cols > max_elements_)
    return Status(StatusCode::kInternal, "GpuQuantizer::load: tensor " + std::to_string(rows) + "x" +
                                             std::to_string(cols) + " does not fit the buffers");
  FP4KIT_CUDA_RETURN(cudaMemcpy(in_, host, size_t(bytes), cudaMemcpyHostToDevice), "cudaMemcpy (input to device)");
  dtype_ = dtype;
  rows_ = rows;
  cols_ = cols;
  return Status::ok();
}

Status GpuQuantizer::amax(float* out) {
  if (rows_ == 0) return Status(StatusCode::kInternal, "GpuQuantizer::amax: no tensor loaded");
  const GlobalScaleParams g = gs_params(in_, dtype_, rows_, cols_, scalars_ + 1, scalars_ + 2);
  FP4KIT_RETURN_IF_ERROR(compute_global_scale(g, workspace_, workspace_bytes_, nullptr));
  FP4KIT_CUDA_RETURN(cudaMemcpy(out, scalars_ + 2, sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy (amax to host)");
  return Status::ok();
}

Status GpuQuantizer::quantize(float ws2, uint8_t* codes, uint8_t* scales) {
  if (rows_ == 0) return Status(StatusCode::kInternal, "GpuQuantizer::quantize: no tensor loaded");
  FP4KIT_CUDA_RETURN(cudaMemcpy(scalars_, &ws2, sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy (ws2 to device)");
  const int64_t code_bytes = element_buffer_bytes(BlockFormat::kNVFP4, rows_, cols_);
  const int64_t scale_bytes = scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kLinear, rows_, cols_);
  Nvfp4QuantizeParams p;
  p.input = in_;
  p.input_dtype = dtype_;
  p.rows = rows_;
  p.cols = cols_;
  p.global_scale = scalars_;  // device pointer: the decode scale ws2 (kModelOpt)
  p.numerics = QuantNumerics::kModelOpt;
  p.out_codes = codes_;
  p.out_codes_bytes = code_bytes;
  p.out_scales = scales_;
  p.out_scales_bytes = scale_bytes;
  p.scale_layout = ScaleLayout::kLinear;
  FP4KIT_RETURN_IF_ERROR(quantize_nvfp4(p, nullptr));
  FP4KIT_CUDA_RETURN(cudaMemcpy(codes, codes_, size_t(code_bytes), cudaMemcpyDeviceToHost), "cudaMemcpy (codes to host)");
  FP4KIT_CUDA_RETURN(cudaMemcpy(scales, scales_, size_t(scale_bytes), cudaMemcpyDeviceToHost),
                     "cudaMemcpy (scales to host)");
  return Status::ok();
}

}  // namespace fp4kit::io
