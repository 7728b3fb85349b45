// fp4kit/layout.h — sizes of quantized buffers and of their scale-factor buffers.
#pragma once

#include <cstdint>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

namespace fp4kit {

// Rows and columns a scale buffer occupies after padding (rows x sf_cols logical scales).
struct ScaleShape {
  int64_t padded_rows;
  int64_t padded_cols;
  int64_t bytes() const { return padded_rows * padded_cols; }
};

// Padded shape of the scale buffer for `rows` x `sf_cols` scale factors in `layout`.
ScaleShape scale_shape(ScaleLayout layout, int64_t rows, int64_t sf_cols);

// Bytes of the scale buffer of a [rows, cols] matrix quantized to `format` (cols = K elements).
int64_t scale_buffer_bytes(BlockFormat format, ScaleLayout layout, int64_t rows, int64_t cols);

// Bytes of the packed element buffer of a [rows, cols] matrix in `format`
// (NVFP4/MXFP4: rows * cols / 2, MXFP8: rows * cols).
int64_t element_buffer_bytes(BlockFormat format, int64_t rows, int64_t cols);

}  // namespace fp4kit
