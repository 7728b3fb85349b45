// convert_scale_layout: linear <-> 128x4 <-> 8x4 for a rows x sf_cols matrix of scale bytes, on the
// GPU. One thread per output byte (grid-stride), in output order so that the stores are coalesced;
// each thread inverts the output layout to (m, k), reads the input byte at the input layout's offset
// (0 for padding positions). Every output padding byte is written 0, input padding is never read.
#include <algorithm>

#include "common/cuda_check.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"
#include "quant/quant_validate.h"

namespace fp4kit {
namespace quant {
namespace {

struct ConvertParams {
  const uint8_t* in;
  ScaleLayout in_layout;
  int64_t in_padded_cols;
  uint8_t* out;
  ScaleLayout out_layout;
  int64_t out_padded_cols;
  int64_t out_bytes;
  int64_t rows, sf_cols;
};

// (m, k) of byte `o` of a buffer in `layout` with `padded_cols` columns.
__device__ __forceinline__ void sf_position(ScaleLayout layout, int64_t o, int64_t padded_cols, int64_t* m,
                                            int64_t* k) {
  if (layout == ScaleLayout::kLinear) {
    *m = o / padded_cols;
    *k = o - *m * padded_cols;
    return;
  }
  const int64_t kt = padded_cols / 4;  // column tiles
  if (layout == ScaleLayout::kSwizzled128x4) {
    const int64_t atom = o / 512, r = o % 512;
    *m = (atom / kt) * 128 + ((r % 16) / 4) * 32 + r / 16;
    *k = (atom % kt) * 4 + r % 4;
  } else {
    const int64_t atom = o / 32, r = o % 32;
    *m = (atom / kt) * 8 + r / 4;
    *k = (atom % kt) * 4 + r % 4;
  }
}

__global__ void __launch_bounds__(256) convert_scale_layout_kernel(const ConvertParams p) {
  pdl_wait();
  const int64_t n = int64_t(gridDim.x) * blockDim.x;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < p.out_bytes; o += n) {
    int64_t m, k;
    sf_position(p.out_layout, o, p.out_padded_cols, &m, &k);
    uint8_t v = 0;
    if (m < p.rows && k < p.sf_cols) v = __ldg(p.in + sf_offset(p.in_layout, m, k, p.in_padded_cols));
    p.out[o] = v;
  }
  pdl_launch_dependents();
}

}  // namespace
}  // namespace quant

Status convert_scale_layout(const ScaleLayoutConvertParams& p, cudaStream_t stream) {
  using namespace quant;
  ArgCheck c("convert_scale_layout");
  c.not_null(p.input, "input").not_null(p.output, "output").positive(p.rows, "rows").positive(p.sf_cols, "sf_cols");
  check_layout(c, p.input_layout, "input_layout");
  check_layout(c, p.output_layout, "output_layout");
  ScaleShape in{0, 0}, out{0, 0};
  check_scale_shape(c, p.input_layout, p.rows, p.sf_cols, "input", &in);
  check_scale_shape(c, p.output_layout, p.rows, p.sf_cols, "output", &out);
  if (c.ok()) c.buffer(p.input_bytes, in.bytes(), "input").buffer(p.output_bytes, out.bytes(), "output");
  if (c.ok()) {
    const uintptr_t ib = reinterpret_cast<uintptr_t>(p.input), ob = reinterpret_cast<uintptr_t>(p.output);
    const bool overlap = ib < ob + uintptr_t(out.bytes()) && ob < ib + uintptr_t(in.bytes());
    c.require(!overlap, StatusCode::kInvalidArgument, "input and output overlap (in-place conversion is not supported)");
  }
  FP4KIT_RETURN_IF_ERROR(c.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("convert_scale_layout"));

  ConvertParams k;
  k.in = p.input;
  k.in_layout = p.input_layout;
  k.in_padded_cols = in.padded_cols;
  k.out = p.output;
  k.out_layout = p.output_layout;
  k.out_padded_cols = out.padded_cols;
  k.out_bytes = out.bytes();
  k.rows = p.rows;
  k.sf_cols = p.sf_cols;
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(convert_scale_layout_kernel), 256, 0);
  const int64_t grid = std::max<int64_t>(1, std::min<int64_t>((k.out_bytes + 255) / 256, int64_t(sm_count()) * per_sm));
  return detail::cuda_status(
      launch_kernel(convert_scale_layout_kernel, dim3(unsigned(grid)), dim3(256), 0, stream, false, k),
      "convert_scale_layout: kernel launch");
}

}  // namespace fp4kit
