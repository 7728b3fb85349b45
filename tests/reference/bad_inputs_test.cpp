// Argument validation of every reference entry point, one test per class of mistake. Each check
// asserts the StatusCode, that the message names the function and the offending argument, and that
// nothing was written.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"

namespace {

using namespace fp4kit;

constexpr int64_t kRows = 4, kCols = 64;

// Valid parameter sets over buffers owned by the fixture; each test breaks one thing.
class RefBadInputs : public ::testing::Test {
 protected:
  std::vector<float> in = std::vector<float>(kRows * kCols, 1.0f);
  std::vector<uint8_t> codes = std::vector<uint8_t>(kRows * kCols, 0xEE);
  std::vector<uint8_t> scales = std::vector<uint8_t>(1024, 0xEE);
  std::vector<float> out = std::vector<float>(kRows * kCols, -3.0f);
  std::vector<uint8_t> scales2 = std::vector<uint8_t>(1024, 0xEE);
  float gs = 1.0f;
  float gs_out[kRows] = {-3, -3, -3, -3};
  std::vector<uint16_t> d = std::vector<uint16_t>(64 * 64, 0xEEEE);

  Nvfp4QuantizeParams nvfp4() {
    Nvfp4QuantizeParams p;
    p.input = in.data();
    p.input_dtype = DType::kFP32;
    p.rows = kRows;
    p.cols = kCols;
    p.global_scale = &gs;
    p.out_codes = codes.data();
    p.out_codes_bytes = int64_t(codes.size());
    p.out_scales = scales.data();
    p.out_scales_bytes = int64_t(scales.size());
    return p;
  }
  MxQuantizeParams mx() {
    MxQuantizeParams p;
    p.format = BlockFormat::kMXFP8;
    p.input = in.data();
    p.input_dtype = DType::kFP32;
    p.rows = kRows;
    p.cols = kCols;
    p.out_elements = codes.data();
    p.out_elements_bytes = int64_t(codes.size());
    p.out_scales = scales.data();
    p.out_scales_bytes = int64_t(scales.size());
    return p;
  }
  DequantizeParams deq() {
    DequantizeParams p;
    p.format = BlockFormat::kNVFP4;
    p.elements = codes.data();
    p.scales = scales.data();
    p.rows = kRows;
    p.cols = kCols;
    p.output = out.data();
    p.output_dtype = DType::kFP32;
    p.output_bytes = int64_t(out.size() * 4);
    return p;
  }
  ScaleLayoutConvertParams conv() {
    ScaleLayoutConvertParams p;
    p.input = scales.data();
    p.input_layout = ScaleLayout::kLinear;
    p.input_bytes = int64_t(scales.size());
    p.output = scales2.data();
    p.output_layout = ScaleLayout::kSwizzled128x4;
    p.output_bytes = int64_t(scales2.size());
    p.rows = kRows;
    p.sf_cols = 4;
    return p;
  }
  GlobalScaleParams gsp() {
    GlobalScaleParams p;
    p.input = in.data();
    p.input_dtype = DType::kFP32;
    p.rows = kRows;
    p.cols = kCols;
    p.out_global_scale = gs_out;
    return p;
  }
  reference::GemmRefParams gemm() {
    reference::GemmRefParams p;
    p.m = 8;
    p.n = 8;
    p.k = 32;
    p.a_dtype = DType::kE2M1x2;
    p.a = codes.data();
    p.a_scales = scales.data();
    p.b = codes.data();
    p.b_scales = scales.data();
    p.d = d.data();
    return p;
  }

  void expect_untouched() {
    for (uint8_t b : codes) ASSERT_EQ(b, 0xEE);
    for (uint8_t b : scales) ASSERT_EQ(b, 0xEE);
    for (uint8_t b : scales2) ASSERT_EQ(b, 0xEE);
    for (float v : out) ASSERT_EQ(v, -3.0f);
    for (float v : gs_out) ASSERT_EQ(v, -3.0f);
    for (uint16_t v : d) ASSERT_EQ(v, 0xEEEE);
  }
};

void expect_error(const Status& s, StatusCode code, const std::string& fn, const std::string& arg) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_EQ(s.message().rfind("reference::" + fn + ": ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(arg), std::string::npos) << "message should name '" << arg << "': " << s.message();
}

#define EXPECT_BAD(call, code, fn, arg)                \
  do {                                                 \
    expect_error((call), StatusCode::code, fn, arg);   \
    expect_untouched();                                \
  } while (0)

// The valid baselines are valid (and are then restored so untouched-checks hold).
TEST_F(RefBadInputs, BaselinesAreValid) {
  EXPECT_TRUE(reference::quantize_nvfp4(nvfp4()).is_ok());
  EXPECT_TRUE(reference::quantize_mx(mx()).is_ok());
  EXPECT_TRUE(reference::dequantize(deq()).is_ok());
  EXPECT_TRUE(reference::convert_scale_layout(conv()).is_ok());
  EXPECT_TRUE(reference::compute_global_scale(gsp()).is_ok());
  EXPECT_TRUE(reference::gemm(gemm()).is_ok());
}

TEST_F(RefBadInputs, NullPointers) {
  { auto p = nvfp4(); p.input = nullptr; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "input is null"); }
  { auto p = nvfp4(); p.global_scale = nullptr; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "global_scale is null"); }
  for (QuantNumerics n : {QuantNumerics::kFast, QuantNumerics::kModelOpt}) {
    auto p = nvfp4(); p.numerics = n; p.global_scale = nullptr;
    EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "global_scale is null");
  }
  { auto p = nvfp4(); p.out_codes = nullptr; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "out_codes is null"); }
  { auto p = nvfp4(); p.out_scales = nullptr; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "out_scales is null"); }
  { auto p = mx(); p.input = nullptr; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "input is null"); }
  { auto p = mx(); p.out_elements = nullptr; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "out_elements is null"); }
  { auto p = mx(); p.out_scales = nullptr; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "out_scales is null"); }
  { auto p = deq(); p.elements = nullptr; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "elements is null"); }
  { auto p = deq(); p.scales = nullptr; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "scales is null"); }
  { auto p = deq(); p.output = nullptr; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "output is null"); }
  { auto p = deq(); p.per_row_global_scale = true; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "decode_global_scale is null"); }
  { auto p = conv(); p.input = nullptr; EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "input is null"); }
  { auto p = conv(); p.output = nullptr; EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "output is null"); }
  { auto p = gsp(); p.input = nullptr; EXPECT_BAD(reference::compute_global_scale(p), kInvalidArgument, "compute_global_scale", "input is null"); }
  { auto p = gsp(); p.out_global_scale = nullptr; EXPECT_BAD(reference::compute_global_scale(p), kInvalidArgument, "compute_global_scale", "out_global_scale is null"); }
  { auto p = gemm(); p.a = nullptr; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "a is null"); }
  { auto p = gemm(); p.a_scales = nullptr; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "a_scales is null"); }
  { auto p = gemm(); p.b = nullptr; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "b is null"); }
  { auto p = gemm(); p.b_scales = nullptr; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "b_scales is null"); }
  { auto p = gemm(); p.d = nullptr; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "d is null"); }
}

TEST_F(RefBadInputs, NonPositiveSizes) {
  for (int64_t bad : {int64_t(0), int64_t(-16)}) {
    { auto p = nvfp4(); p.rows = bad; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "rows"); }
    { auto p = nvfp4(); p.cols = bad; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "cols"); }
    { auto p = mx(); p.rows = bad; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "rows"); }
    { auto p = mx(); p.cols = bad; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "cols"); }
    { auto p = deq(); p.rows = bad; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "rows"); }
    { auto p = deq(); p.cols = bad; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "cols"); }
    { auto p = conv(); p.rows = bad; EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "rows"); }
    { auto p = conv(); p.sf_cols = bad; EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "sf_cols"); }
    { auto p = gsp(); p.rows = bad; EXPECT_BAD(reference::compute_global_scale(p), kInvalidArgument, "compute_global_scale", "rows"); }
    { auto p = gsp(); p.cols = bad; EXPECT_BAD(reference::compute_global_scale(p), kInvalidArgument, "compute_global_scale", "cols"); }
    { auto p = gemm(); p.m = bad; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "m (="); }
    { auto p = gemm(); p.n = bad; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "n (="); }
    { auto p = gemm(); p.k = bad; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "k (="); }
  }
}

TEST_F(RefBadInputs, ColsNotMultipleOfBlock) {
  { auto p = nvfp4(); p.cols = 40; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "cols (=40) must be a multiple of 16"); }
  { auto p = mx(); p.cols = 48; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "cols (=48) must be a multiple of 32"); }
  { auto p = deq(); p.cols = 24; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "cols (=24) must be a multiple of 16"); }
  { auto p = deq(); p.format = BlockFormat::kMXFP4; p.cols = 48; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "cols (=48) must be a multiple of 32"); }
  { auto p = gemm(); p.k = 40; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "k (=40) must be a multiple of 16"); }
}

TEST_F(RefBadInputs, StrideBelowCols) {
  { auto p = nvfp4(); p.input_row_stride = kCols - 1; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "input_row_stride (=63) must be >= cols"); }
  { auto p = nvfp4(); p.input_row_stride = -1; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "input_row_stride"); }
  { auto p = mx(); p.input_row_stride = 32; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "input_row_stride (=32)"); }
  { auto p = deq(); p.output_row_stride = 16; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "output_row_stride (=16)"); }
  { auto p = gsp(); p.input_row_stride = 8; EXPECT_BAD(reference::compute_global_scale(p), kInvalidArgument, "compute_global_scale", "input_row_stride (=8)"); }
  { auto p = gemm(); p.a_dtype = DType::kBF16; p.lda = 16; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "lda (=16)"); }
  { auto p = gemm(); p.lda = 64; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "lda (=64) must be 0 or k"); }
  { auto p = gemm(); p.ldd = 4; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "ldd (=4)"); }
}

TEST_F(RefBadInputs, BuffersTooSmall) {
  { auto p = nvfp4(); p.out_codes_bytes = kRows * kCols / 2 - 1; EXPECT_BAD(reference::quantize_nvfp4(p), kBufferTooSmall, "quantize_nvfp4", "out_codes holds 127 bytes, needs 128"); }
  // 128x4 layout: 128 rows x 4 columns = 512 bytes even for 4 rows.
  { auto p = nvfp4(); p.out_scales_bytes = 511; EXPECT_BAD(reference::quantize_nvfp4(p), kBufferTooSmall, "quantize_nvfp4", "out_scales holds 511 bytes, needs 512"); }
  { auto p = nvfp4(); p.scale_layout = ScaleLayout::kSwizzled8x4; p.out_scales_bytes = 31; EXPECT_BAD(reference::quantize_nvfp4(p), kBufferTooSmall, "quantize_nvfp4", "out_scales holds 31 bytes, needs 32"); }
  { auto p = mx(); p.out_elements_bytes = kRows * kCols - 1; EXPECT_BAD(reference::quantize_mx(p), kBufferTooSmall, "quantize_mx", "out_elements holds 255 bytes, needs 256"); }
  { auto p = mx(); p.out_scales_bytes = 100; EXPECT_BAD(reference::quantize_mx(p), kBufferTooSmall, "quantize_mx", "out_scales holds 100 bytes, needs 512"); }
  { auto p = deq(); p.output_bytes = kRows * kCols * 4 - 1; EXPECT_BAD(reference::dequantize(p), kBufferTooSmall, "dequantize", "output holds 1023 bytes, needs 1024"); }
  { auto p = deq(); p.output_row_stride = 100; p.output_bytes = (3 * 100 + 64) * 4 - 4; EXPECT_BAD(reference::dequantize(p), kBufferTooSmall, "dequantize", "output holds"); }
  { auto p = conv(); p.input_bytes = 15; EXPECT_BAD(reference::convert_scale_layout(p), kBufferTooSmall, "convert_scale_layout", "input holds 15 bytes, needs 16"); }
  { auto p = conv(); p.output_bytes = 511; EXPECT_BAD(reference::convert_scale_layout(p), kBufferTooSmall, "convert_scale_layout", "output holds 511 bytes, needs 512"); }
}

TEST_F(RefBadInputs, WrongDtypesFormatsAndEnums) {
  { auto p = nvfp4(); p.input_dtype = DType::kE4M3; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "input dtype e4m3 not supported"); }
  { auto p = nvfp4(); p.numerics = QuantNumerics(7); EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "numerics (=7)"); }
  { auto p = nvfp4(); p.scale_layout = ScaleLayout(9); EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "scale_layout (=9)"); }
  { auto p = mx(); p.input_dtype = DType::kE2M1x2; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "input dtype e2m1x2"); }
  { auto p = mx(); p.format = BlockFormat::kNVFP4; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "format nvfp4 is not an MX format"); }
  { auto p = mx(); p.numerics = QuantNumerics::kModelOpt; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "numerics modelopt not supported"); }
  { auto p = deq(); p.output_dtype = DType::kUE8M0; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "output dtype ue8m0"); }
  { auto p = deq(); p.format = BlockFormat::kMXFP8; p.decode_global_scale = &gs; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "decode_global_scale must be null for mxfp8"); }
  { auto p = deq(); p.format = BlockFormat(5); EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "format (=5)"); }
  { auto p = conv(); p.output_layout = ScaleLayout(3); EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "output_layout (=3)"); }
  { auto p = gsp(); p.input_dtype = DType::kE4M3; EXPECT_BAD(reference::compute_global_scale(p), kInvalidArgument, "compute_global_scale", "input dtype e4m3"); }
  { auto p = gemm(); p.a_dtype = DType::kFP32; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "a dtype fp32 not supported"); }
  { auto p = gemm(); p.out_dtype = DType::kE4M3; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "out dtype e4m3 not supported"); }
  { auto p = gemm(); p.b_scale_layout = ScaleLayout(4); EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "b_scale_layout (=4)"); }
}

TEST_F(RefBadInputs, SizeOverflow) {
  const int64_t huge = int64_t(1) << 40;
  { auto p = nvfp4(); p.rows = huge; p.cols = huge; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "input size"); }
  { auto p = nvfp4(); p.input_row_stride = INT64_MAX; EXPECT_BAD(reference::quantize_nvfp4(p), kInvalidArgument, "quantize_nvfp4", "overflows"); }
  { auto p = mx(); p.rows = huge; p.cols = int64_t(1) << 30; EXPECT_BAD(reference::quantize_mx(p), kInvalidArgument, "quantize_mx", "input size"); }
  { auto p = deq(); p.rows = huge; p.cols = huge; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "output size"); }
  // An element stride whose rows overflow int64 (the GPU path's "elements size" rule): rows 1..3
  // would start 2^62 bytes apart and the offset of row 2 wraps.
  { auto p = deq(); p.element_row_stride = INT64_MAX - 15; EXPECT_BAD(reference::dequantize(p), kInvalidArgument, "dequantize", "elements size 4 x 9223372036854775792 overflows"); }
  { auto p = conv(); p.rows = INT64_MAX - 3; EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "input size"); }
  { auto p = conv(); p.rows = huge; p.sf_cols = huge; EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "overflows"); }
  { auto p = gsp(); p.rows = huge; p.cols = huge; EXPECT_BAD(reference::compute_global_scale(p), kInvalidArgument, "compute_global_scale", "input size"); }
  { auto p = gemm(); p.m = huge; p.k = huge; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "overflows"); }
  { auto p = gemm(); p.n = huge; p.k = huge; EXPECT_BAD(reference::gemm(p), kInvalidArgument, "gemm", "b size"); }
}

TEST_F(RefBadInputs, OverlappingLayoutConversion) {
  auto p = conv();
  p.output = scales.data() + 8;
  p.output_bytes = 512;
  EXPECT_BAD(reference::convert_scale_layout(p), kInvalidArgument, "convert_scale_layout", "overlap");
}

}  // namespace
