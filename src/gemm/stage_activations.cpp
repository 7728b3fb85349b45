#include "gemm/stage_activations.h"

#include "fp4kit/quantize.h"

namespace fp4kit::gemm_impl {

Status stage_nvfp4_operand(const void* codes, const uint8_t* scales, int64_t rows, int64_t k, int64_t lda, DType dtype,
                           void* out, int64_t out_bytes, bool pdl, cudaStream_t stream) {
  DequantizeParams dq;
  dq.format = BlockFormat::kNVFP4;
  dq.elements = codes;
  dq.scales = scales;
  dq.scale_layout = ScaleLayout::kSwizzled128x4;
  dq.rows = rows;
  dq.cols = k;
  dq.element_row_stride = lda;  // 0: k
  dq.output = out;
  dq.output_dtype = dtype;
  dq.output_row_stride = k;
  dq.output_bytes = out_bytes;
  dq.enable_pdl = pdl;  // the GEMM after it then overlaps its weight loads with this kernel
  return dequantize(dq, stream);
}

Status stage_activations(GemmParams& p, void* workspace, cudaStream_t stream) {
  if (p.a_dtype != DType::kE2M1x2) return Status::ok();
  FP4KIT_RETURN_IF_ERROR(stage_nvfp4_operand(p.a, p.a_scales, p.m, p.k, p.lda, operand_type(p), workspace,
                                             int64_t(staged_a_bytes(p)), p.enable_pdl, stream));
  p.a = workspace;
  p.a_dtype = operand_type(p);
  p.lda = p.k;
  p.a_scales = nullptr;
  return Status::ok();
}

}  // namespace fp4kit::gemm_impl
