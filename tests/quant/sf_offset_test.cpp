// The unsigned scale-offset formulas of the kernels equal format::sf_offset_* (the reference's).
#include <gtest/gtest.h>

#include "format/scale_layout.h"
#include "quant/sf_offset.h"

namespace fp4kit {
namespace {

TEST(SfOffset, UnsignedFormulasEqualFormat) {
  const int64_t cols[] = {1, 3, 4, 5, 64, 65, 1025};
  for (int64_t sf_cols : cols) {
    const int64_t pc = format::round_up(sf_cols, 4);
    for (int64_t m = 0; m < 1100; ++m)
      for (int64_t k = 0; k < sf_cols; ++k) {
        ASSERT_EQ(int64_t(quant::sf_offset_u(ScaleLayout::kSwizzled128x4, uint64_t(m), uint64_t(k), uint64_t(pc))),
                  format::sf_offset_128x4(m, k, pc));
        ASSERT_EQ(int64_t(quant::sf_offset_u(ScaleLayout::kSwizzled8x4, uint64_t(m), uint64_t(k), uint64_t(pc))),
                  format::sf_offset_8x4(m, k, pc));
        ASSERT_EQ(int64_t(quant::sf_offset_u(ScaleLayout::kLinear, uint64_t(m), uint64_t(k), uint64_t(sf_cols))),
                  format::sf_offset_linear(m, k, sf_cols));
      }
  }
  // Far rows (64-bit products).
  const int64_t m = (int64_t(1) << 33) + 77, pc = 4100;
  EXPECT_EQ(int64_t(quant::sf_offset_u(ScaleLayout::kSwizzled128x4, uint64_t(m), 4097, uint64_t(pc))),
            format::sf_offset_128x4(m, 4097, pc));
  EXPECT_EQ(int64_t(quant::sf_offset_u(ScaleLayout::kSwizzled8x4, uint64_t(m), 4097, uint64_t(pc))),
            format::sf_offset_8x4(m, 4097, pc));
}

}  // namespace
}  // namespace fp4kit
