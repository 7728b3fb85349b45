#include "gemm/stage_activations.h"

#include "fp4kit/quantize.h"

namespace fp4kit::gemm_impl {

Status stage_activations(GemmParams& p, void* workspace, cudaStream_t stream) {
  if (p.a_dtype != DType::kE2M1x2) return Status::ok();
  DequantizeParams dq;
  dq.format = BlockFormat::kNVFP4;
  dq.elements = p.a;
  dq.scales = p.a_scales;
  dq.scale_layout = ScaleLayout::kSwizzled128x4;
  dq.rows = p.m;
  dq.cols = p.k;
  dq.element_row_stride = p.lda;  // 0: k
  dq.output = workspace;
  dq.output_dtype = operand_type(p);
  dq.output_row_stride = p.k;
  dq.output_bytes = int64_t(staged_a_bytes(p));
  dq.enable_pdl = p.enable_pdl;  // the GEMM after it then overlaps its weight loads with this kernel
  FP4KIT_RETURN_IF_ERROR(dequantize(dq, stream));
  p.a = workspace;
  p.a_dtype = operand_type(p);
  p.lda = p.k;
  p.a_scales = nullptr;
  return Status::ok();
}

}  // namespace fp4kit::gemm_impl
