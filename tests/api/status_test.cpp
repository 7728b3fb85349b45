#include <gtest/gtest.h>

#include "common/validate.h"
#include "fp4kit/layout.h"

using namespace fp4kit;

TEST(Status, OkAndMessage) {
  EXPECT_TRUE(Status::ok().is_ok());
  Status s(StatusCode::kInvalidArgument, "x is null");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.to_string(), "invalid_argument: x is null");
}

TEST(ArgCheck, FirstFailureWins) {
  int x = 0;
  Status s = detail::ArgCheck("f").not_null(&x, "a").positive(0, "rows").positive(-1, "cols").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "f: rows (=0) must be positive");
}

TEST(ArgCheck, Classes) {
  EXPECT_EQ(detail::ArgCheck("f").not_null(nullptr, "p").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(detail::ArgCheck("f").multiple_of(40, 16, "cols", "block").status().message(),
            "f: cols (=40) must be a multiple of 16 (block)");
  EXPECT_EQ(detail::ArgCheck("f").aligned(reinterpret_cast<void*>(0x1004), 16, "p").status().code(),
            StatusCode::kMisaligned);
  EXPECT_EQ(detail::ArgCheck("f").buffer(10, 11, "out").status().code(), StatusCode::kBufferTooSmall);
  EXPECT_EQ(detail::ArgCheck("f").size_fits(int64_t(1) << 40, int64_t(1) << 30, 2, "a").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(detail::ArgCheck("f").size_fits(1 << 20, 1 << 20, 2, "a").ok());
  EXPECT_EQ(detail::ArgCheck("f").dtype_in(DType::kE4M3, {DType::kBF16, DType::kFP16}, "input").status().message(),
            "f: input dtype e4m3 not supported (expected bf16, fp16)");
}

TEST(Layout, BufferSizes) {
  EXPECT_EQ(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, 1, 16), 128 * 4);
  EXPECT_EQ(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, 129, 80), 256 * 8);
  EXPECT_EQ(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled8x4, 9, 16), 16 * 4);
  EXPECT_EQ(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kLinear, 9, 48), 9 * 3);
  EXPECT_EQ(scale_buffer_bytes(BlockFormat::kMXFP4, ScaleLayout::kLinear, 9, 64), 9 * 2);
  EXPECT_EQ(element_buffer_bytes(BlockFormat::kMXFP8, 3, 64), 192);
  EXPECT_EQ(element_buffer_bytes(BlockFormat::kNVFP4, 3, 64), 96);
}
