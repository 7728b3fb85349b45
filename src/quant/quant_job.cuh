// A validated quantization request in kernel terms, and the host code that picks a kernel and
// launches it. Included by quantize_nvfp4.cu and quantize_mx.cu (each instantiates its formats).
#pragma once

#include <algorithm>
#include <string>

#include "common/cuda_check.h"
#include "quant/launch.h"
#include "quant/quant_dispatch.h"
#include "quant/tensor_map.h"
#include "quant/tma_kernel.cuh"
#include "quant/vectorized_kernel.cuh"

namespace fp4kit::quant {

struct QuantJob {
  const char* function;  // for error messages
  const uint8_t* input;
  DType dtype;
  int64_t rows, cols;
  int64_t input_row_bytes;
  // 16-byte vector loads and 8/16-byte vector stores are possible: input base and row stride
  // 16-byte aligned, element output 8-byte (FP4) / 16-byte (MXFP8) aligned.
  bool vec;
  ItemOutputs out;
  bool pdl;
};

template <DType kIn, BlockFormat kFormat, QuantNumerics kMode>
Status run_quantize_typed(const QuantJob& j, cudaStream_t stream) {
  const int64_t G = j.cols / 16;
  VariantQuery q;
  q.rows = j.rows;
  q.cols = j.cols;
  q.tma_eligible = j.vec && j.rows < (int64_t(1) << 31) && j.cols < (int64_t(1) << 31) &&
                   j.input_row_bytes < (int64_t(1) << 40);
  const Variant v = choose_variant(q);

  if (v == Variant::kTma) {
    CUtensorMap map;
    FP4KIT_RETURN_IF_ERROR(make_tensor_map_2d(&map, j.input, InputType<kIn>::kBytes, j.rows, j.cols,
                                              j.input_row_bytes, kTmaTileRows, kTmaTileCols));
    TmaKernelParams p;
    p.rows = j.rows;
    p.items_per_row = G;
    p.tile_cols = (j.cols + kTmaTileCols - 1) / kTmaTileCols;
    p.num_tiles = ((j.rows + kTmaTileRows - 1) / kTmaTileRows) * p.tile_cols;
    p.out = j.out;
    auto* kernel = quantize_tma_kernel<kIn, kFormat, kMode>;
    constexpr size_t smem = size_t(tma_smem_bytes<kIn>());
    const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), kTmaThreads, smem);
    const int64_t grid = std::min<int64_t>(p.num_tiles, int64_t(sm_count()) * per_sm);
    FP4KIT_RETURN_IF_ERROR(detail::cuda_status(
        launch_kernel(kernel, dim3(unsigned(grid)), dim3(kTmaThreads), smem, stream, j.pdl, map, p),
        (std::string(j.function) + ": TMA kernel launch").c_str()));
  } else {
    auto* kernel = j.vec ? quantize_vectorized_kernel<kIn, kFormat, kMode, true>
                         : quantize_vectorized_kernel<kIn, kFormat, kMode, false>;
    const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), kVecThreads, 0);
    const int64_t pairs = (j.rows * G + 1) / 2;
    // Enough threads for the pairs, and for the scale padding of small-M problems (128x4 pads one
    // row to 128: ~4 padding stores per thread at most).
    const int64_t want = std::max((pairs + kVecThreads - 1) / kVecThreads,
                                  (scale_padding_stores(j.out.sg) + 4 * kVecThreads - 1) / (4 * kVecThreads));
    const int64_t grid = std::max<int64_t>(1, std::min<int64_t>(want, int64_t(sm_count()) * per_sm));
    const int64_t step = 2 * grid * kVecThreads;  // items per grid-stride step
    VecKernelParams p;
    p.input = j.input;
    p.input_row_bytes = j.input_row_bytes;
    p.rows = j.rows;
    p.items_per_row = G;
    p.step_rows = step / G;
    p.step_items = step % G;
    p.out = j.out;
    FP4KIT_RETURN_IF_ERROR(detail::cuda_status(
        launch_kernel(kernel, dim3(unsigned(grid)), dim3(kVecThreads), 0, stream, j.pdl, p),
        (std::string(j.function) + ": vectorized kernel launch").c_str()));
  }
  set_last_variant(v);
  return Status::ok();
}

template <BlockFormat kFormat, QuantNumerics kMode>
Status run_quantize(const QuantJob& j, cudaStream_t stream) {
  switch (j.dtype) {
    case DType::kBF16: return run_quantize_typed<DType::kBF16, kFormat, kMode>(j, stream);
    case DType::kFP16: return run_quantize_typed<DType::kFP16, kFormat, kMode>(j, stream);
    case DType::kFP32: return run_quantize_typed<DType::kFP32, kFormat, kMode>(j, stream);
    default: break;
  }
  return Status(StatusCode::kInternal, std::string(j.function) + ": unexpected input dtype");
}

}  // namespace fp4kit::quant
