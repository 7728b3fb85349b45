// CPU reference scale-layout conversion: any of linear / 128x4 / 8x4 to any other, for a
// rows x sf_cols matrix of scale bytes. Every padding byte of the output is written 0; padding of
// the input is never read.
#include <cstring>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "reference/checks.h"
#include "reference/parallel.h"
#include "reference/scale_offset.h"

namespace fp4kit::reference {

using detail::ArgCheck;

Status convert_scale_layout(const ScaleLayoutConvertParams& p) {
  ArgCheck c("reference::convert_scale_layout");
  c.not_null(p.input, "input").not_null(p.output, "output").positive(p.rows, "rows").positive(p.sf_cols, "sf_cols");
  detail::check_layout(c, p.input_layout, "input_layout");
  detail::check_layout(c, p.output_layout, "output_layout");
  ScaleShape in{0, 0}, out{0, 0};
  detail::check_scale_shape(c, p.input_layout, p.rows, p.sf_cols, "input", &in);
  detail::check_scale_shape(c, p.output_layout, p.rows, p.sf_cols, "output", &out);
  if (c.ok()) c.buffer(p.input_bytes, in.bytes(), "input").buffer(p.output_bytes, out.bytes(), "output");
  if (c.ok()) {
    const uintptr_t ib = reinterpret_cast<uintptr_t>(p.input), ob = reinterpret_cast<uintptr_t>(p.output);
    const bool overlap = ib < ob + uintptr_t(out.bytes()) && ob < ib + uintptr_t(in.bytes());
    c.require(!overlap, StatusCode::kInvalidArgument, "input and output overlap (in-place conversion is not supported)");
  }
  FP4KIT_RETURN_IF_ERROR(c.status());

  std::memset(p.output, 0, size_t(out.bytes()));
  const int64_t grain = p.sf_cols >= 65536 ? 1 : 65536 / p.sf_cols;
  detail::parallel_for(p.rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t m = r0; m < r1; ++m) {
      for (int64_t k = 0; k < p.sf_cols; ++k) {
        p.output[detail::sf_offset(p.output_layout, m, k, out.padded_cols)] =
            p.input[detail::sf_offset(p.input_layout, m, k, in.padded_cols)];
      }
    }
  });
  return Status::ok();
}

}  // namespace fp4kit::reference
