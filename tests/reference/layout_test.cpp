// Scale-factor layouts: the offset formulas against the tensor definition (pad, view, transpose,
// flatten; NVFP4_SPEC.md §3.2/§3.3) and reference::convert_scale_layout between every pair.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "ref_test_util.h"
#include "reference/scale_offset.h"

namespace {

using namespace fp4kit;
using namespace reftest;

const ScaleLayout kLayouts[] = {ScaleLayout::kSwizzled128x4, ScaleLayout::kSwizzled8x4, ScaleLayout::kLinear};
const int64_t kRows[] = {1, 7, 8, 9, 31, 32, 33, 127, 128, 129, 300};
const int64_t kSfCols[] = {1, 2, 3, 4, 5, 8, 13, 65};

TEST(ScaleLayout, OffsetFormulaEqualsViewDefinition) {
  for (ScaleLayout layout : kLayouts) {
    for (int64_t rows : kRows) {
      for (int64_t sf_cols : kSfCols) {
        const ScaleShape shape = scale_shape(layout, rows, sf_cols);
        const std::vector<int64_t> where = view_positions(rows, sf_cols, layout);
        std::vector<int> hits(size_t(shape.bytes()), 0);
        for (int64_t m = 0; m < rows; ++m) {
          for (int64_t k = 0; k < sf_cols; ++k) {
            const int64_t off = reference::detail::sf_offset(layout, m, k, shape.padded_cols);
            ASSERT_EQ(off, where[size_t(m * sf_cols + k)])
                << scale_layout_name(layout) << " rows " << rows << " sf_cols " << sf_cols << " (m, k) = (" << m << ", "
                << k << ")";
            ASSERT_LT(off, shape.bytes());
            ++hits[size_t(off)];
          }
        }
        for (int h : hits) ASSERT_LE(h, 1) << "two scales share a byte";
      }
    }
  }
}

TEST(ScaleLayout, SpecFormulaSpotChecks) {
  // offset(m, k) = (m/128)(Kp/4)512 + (k/4)512 + (m%32)16 + ((m%128)/32)4 + k%4 (spec §3.2, §9.4)
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kSwizzled128x4, 0, 0, 8), 0);
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kSwizzled128x4, 1, 0, 8), 16);
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kSwizzled128x4, 32, 0, 8), 4);
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kSwizzled128x4, 0, 4, 8), 512);
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kSwizzled128x4, 128, 0, 8), 1024);
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kSwizzled128x4, 129, 5, 8), 1024 + 512 + 16 + 1);
  // 8x4: (m/8)(Kp/4)32 + (k/4)32 + (m%8)4 + k%4
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kSwizzled8x4, 9, 5, 8), 64 + 32 + 4 + 1);
  EXPECT_EQ(reference::detail::sf_offset(ScaleLayout::kLinear, 9, 5, 7), 68);
}

// Every pair of layouts, ragged shapes: output == definition of the output layout, all padding 0
// (the output buffer starts as 0xFF, the input's padding is junk), nothing written past the end.
TEST(ScaleLayout, ConvertEveryPairAndRoundTrip) {
  std::mt19937 rng(5);
  for (int64_t rows : kRows) {
    for (int64_t sf_cols : kSfCols) {
      std::vector<uint8_t> lin(static_cast<size_t>(rows * sf_cols));
      for (auto& b : lin) b = uint8_t(1 + rng() % 255);  // never 0, so misplaced padding shows
      for (ScaleLayout from : kLayouts) {
        std::vector<uint8_t> in = swizzle_by_view(lin, rows, sf_cols, from);
        // Junk in the input's padding: it must not be read.
        const std::vector<int64_t> where = view_positions(rows, sf_cols, from);
        std::vector<bool> used(in.size(), false);
        for (int64_t w : where) used[size_t(w)] = true;
        for (size_t i = 0; i < in.size(); ++i)
          if (!used[i]) in[i] = 0xCD;
        for (ScaleLayout to : kLayouts) {
          const std::string what = std::string(scale_layout_name(from)) + " -> " + scale_layout_name(to) + " rows " +
                                    std::to_string(rows) + " sf_cols " + std::to_string(sf_cols);
          const int64_t out_bytes = scale_shape(to, rows, sf_cols).bytes();
          std::vector<uint8_t> out(size_t(out_bytes + 16), 0xFF);
          ScaleLayoutConvertParams p;
          p.input = in.data();
          p.input_layout = from;
          p.input_bytes = int64_t(in.size());
          p.output = out.data();
          p.output_layout = to;
          p.output_bytes = int64_t(out.size());
          p.rows = rows;
          p.sf_cols = sf_cols;
          ASSERT_TRUE(reference::convert_scale_layout(p).is_ok()) << what;
          const std::vector<uint8_t> want = swizzle_by_view(lin, rows, sf_cols, to);
          ASSERT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + out_bytes), want) << what;
          for (size_t i = size_t(out_bytes); i < out.size(); ++i) ASSERT_EQ(out[i], 0xFF) << what;
          // And back.
          std::vector<uint8_t> back(in.size(), 0xFF);
          ScaleLayoutConvertParams q = p;
          q.input = out.data();
          q.input_layout = to;
          q.input_bytes = out_bytes;
          q.output = back.data();
          q.output_layout = from;
          q.output_bytes = int64_t(back.size());
          ASSERT_TRUE(reference::convert_scale_layout(q).is_ok()) << what;
          ASSERT_EQ(unswizzle_by_view(back, rows, sf_cols, from), lin) << what;
          ASSERT_EQ(back, swizzle_by_view(lin, rows, sf_cols, from)) << what << " (padding must be 0)";
        }
      }
    }
  }
}

// Quantizing straight into a layout == quantizing to linear and converting.
TEST(ScaleLayout, QuantizeThenConvertEqualsDirect) {
  std::mt19937 rng(8);
  const int64_t rows = 133, cols = 208;
  const std::vector<float> x = random_values(rng, size_t(rows * cols));
  const float gs = 3.5f;
  auto quantize = [&](ScaleLayout layout) {
    std::vector<uint8_t> codes(static_cast<size_t>(rows * cols / 2));
    std::vector<uint8_t> scales(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, layout, rows, cols)), 0x11);
    Nvfp4QuantizeParams p;
    p.input = x.data();
    p.input_dtype = DType::kFP32;
    p.rows = rows;
    p.cols = cols;
    p.global_scale = &gs;
    p.out_codes = codes.data();
    p.out_codes_bytes = int64_t(codes.size());
    p.out_scales = scales.data();
    p.out_scales_bytes = int64_t(scales.size());
    p.scale_layout = layout;
    EXPECT_TRUE(reference::quantize_nvfp4(p).is_ok());
    return std::make_pair(codes, scales);
  };
  const auto lin = quantize(ScaleLayout::kLinear);
  for (ScaleLayout layout : {ScaleLayout::kSwizzled128x4, ScaleLayout::kSwizzled8x4}) {
    const auto direct = quantize(layout);
    EXPECT_EQ(direct.first, lin.first);
    EXPECT_EQ(direct.second, swizzle_by_view(lin.second, rows, cols / 16, layout)) << scale_layout_name(layout);
  }
}

}  // namespace
