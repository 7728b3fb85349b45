// 2-D TMA tensor maps for row-major [rows, cols] tensors. cuTensorMapEncodeTiled is a driver API
// function; it is fetched through cudaGetDriverEntryPointByVersion so that fp4kit needs no -lcuda.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "fp4kit/status.h"

namespace fp4kit::quant {

// Box of box_rows x box_cols elements of `elem_bytes` (2 or 4) bytes, no swizzle, OOB zero fill.
// Requires base 16-byte aligned and row_bytes a multiple of 16 (checked: kMisaligned).
Status make_tensor_map_2d(CUtensorMap* map, const void* base, int elem_bytes, int64_t rows, int64_t cols,
                          int64_t row_bytes, uint32_t box_rows, uint32_t box_cols);

}  // namespace fp4kit::quant
