// Error paths of the GPU entry points. Validation runs before any CUDA call, so these tests need no
// GPU (the pointers below are never dereferenced).
#include <gtest/gtest.h>

#include <cstdint>

#include "fp4kit/device.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "quant/quant_dispatch.h"

namespace fp4kit {
namespace {

// Fake, suitably aligned "device" pointers: validation fails before anything is touched.
alignas(256) uint8_t g_storage[1024];
void* ptr(size_t offset = 0) { return g_storage + offset; }

Nvfp4QuantizeParams valid_nvfp4() {
  Nvfp4QuantizeParams p;
  p.input = ptr();
  p.input_dtype = DType::kBF16;
  p.rows = 4;
  p.cols = 64;
  p.global_scale = static_cast<const float*>(ptr(256));
  p.out_codes = ptr(512);
  p.out_codes_bytes = 4 * 32;
  p.out_scales = ptr(768);
  p.out_scales_bytes = scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, 4, 64);
  return p;
}

MxQuantizeParams valid_mx() {
  MxQuantizeParams p;
  p.format = BlockFormat::kMXFP8;
  p.input = ptr();
  p.rows = 4;
  p.cols = 64;
  p.out_elements = ptr(512);
  p.out_elements_bytes = 4 * 64;
  p.out_scales = ptr(768);
  p.out_scales_bytes = scale_buffer_bytes(BlockFormat::kMXFP8, ScaleLayout::kSwizzled128x4, 4, 64);
  return p;
}

StatusCode nv(const Nvfp4QuantizeParams& p) { return quantize_nvfp4(p, nullptr).code(); }
StatusCode mx(const MxQuantizeParams& p) { return quantize_mx(p, nullptr).code(); }

TEST(QuantizeValidation, Nvfp4Arguments) {
  auto p = valid_nvfp4();
  p.input = nullptr;
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p = valid_nvfp4();
  p.global_scale = nullptr;
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p = valid_nvfp4();
  p.out_codes = nullptr;
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p = valid_nvfp4();
  p.out_scales = nullptr;
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  for (int64_t bad : {0, -1, -64}) {
    p = valid_nvfp4();
    p.rows = bad;
    EXPECT_EQ(nv(p), StatusCode::kInvalidArgument) << "rows " << bad;
    p = valid_nvfp4();
    p.cols = bad;
    EXPECT_EQ(nv(p), StatusCode::kInvalidArgument) << "cols " << bad;
  }
  for (int64_t cols : {8, 24, 40, 65}) {
    p = valid_nvfp4();
    p.cols = cols;
    const Status s = quantize_nvfp4(p, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("multiple of 16"), std::string::npos) << s.message();
  }
  p = valid_nvfp4();
  p.input_row_stride = 63;  // < cols
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p.input_row_stride = -1;
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p = valid_nvfp4();
  p.input_dtype = DType::kE4M3;
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p = valid_nvfp4();
  p.scale_layout = static_cast<ScaleLayout>(7);
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p = valid_nvfp4();
  p.numerics = static_cast<QuantNumerics>(9);
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);
  p = valid_nvfp4();
  p.rows = int64_t(1) << 40;
  p.cols = int64_t(1) << 40;
  EXPECT_EQ(nv(p), StatusCode::kInvalidArgument);  // size overflow
}

TEST(QuantizeValidation, Nvfp4BuffersAndAlignment) {
  auto p = valid_nvfp4();
  p.out_codes_bytes = 4 * 32 - 1;
  EXPECT_EQ(nv(p), StatusCode::kBufferTooSmall);
  p = valid_nvfp4();
  p.out_scales_bytes = 128 * 4 - 1;  // 128x4 pads 4 rows to 128
  EXPECT_EQ(nv(p), StatusCode::kBufferTooSmall);
  p = valid_nvfp4();
  p.scale_layout = ScaleLayout::kLinear;
  p.out_scales_bytes = 4 * 4;  // linear needs exactly rows * cols/16
  // Accepted by validation; the pointers here are fake host addresses, so only check it where
  // nothing would be launched (no GPU: kNoDevice).
  if (!device_info().available) EXPECT_EQ(nv(p), StatusCode::kNoDevice);
  p.out_scales_bytes = 4 * 4 - 1;
  EXPECT_EQ(nv(p), StatusCode::kBufferTooSmall);
  p = valid_nvfp4();
  p.input = ptr(1);  // a BF16 tensor at an odd address
  EXPECT_EQ(nv(p), StatusCode::kMisaligned);
  p = valid_nvfp4();
  p.input_dtype = DType::kFP32;
  p.input = ptr(2);
  EXPECT_EQ(nv(p), StatusCode::kMisaligned);
  p = valid_nvfp4();
  p.global_scale = static_cast<const float*>(ptr(258));
  EXPECT_EQ(nv(p), StatusCode::kMisaligned);
  // Scales: 16-bit pair stores (linear), 32-bit padding words (swizzled).
  p = valid_nvfp4();
  p.out_scales = ptr(770);
  EXPECT_EQ(nv(p), StatusCode::kMisaligned);
  p.scale_layout = ScaleLayout::kLinear;
  p.out_scales_bytes = 4 * 4;
  p.out_scales = ptr(769);
  EXPECT_EQ(nv(p), StatusCode::kMisaligned);
  p.out_scales = ptr(770);  // 2-byte aligned is enough for linear
  if (!device_info().available) EXPECT_EQ(nv(p), StatusCode::kNoDevice);
}

TEST(QuantizeValidation, MxArguments) {
  auto p = valid_mx();
  p.format = BlockFormat::kNVFP4;
  EXPECT_EQ(mx(p), StatusCode::kInvalidArgument);
  p = valid_mx();
  p.cols = 48;  // multiple of 16, not of 32
  EXPECT_EQ(mx(p), StatusCode::kInvalidArgument);
  p = valid_mx();
  p.numerics = QuantNumerics::kModelOpt;
  EXPECT_EQ(mx(p), StatusCode::kInvalidArgument);
  p = valid_mx();
  p.rows = 0;
  EXPECT_EQ(mx(p), StatusCode::kInvalidArgument);
  p = valid_mx();
  p.out_elements_bytes = 4 * 64 - 1;  // MXFP8 elements are one byte each
  EXPECT_EQ(mx(p), StatusCode::kBufferTooSmall);
  p = valid_mx();
  p.format = BlockFormat::kMXFP4;
  p.out_elements_bytes = 4 * 32;
  // MXFP4 needs only half a byte per element: the buffer check passes and the next check (the
  // misaligned input) fails. (A valid call would launch a kernel on these fake pointers:
  // compute-sanitizer caught that as out-of-bounds writes.)
  p.input = ptr(3);
  EXPECT_EQ(mx(p), StatusCode::kMisaligned);
  p = valid_mx();
  p.input = ptr(3);
  EXPECT_EQ(mx(p), StatusCode::kMisaligned);
  p = valid_mx();
  p.out_scales = nullptr;
  EXPECT_EQ(mx(p), StatusCode::kInvalidArgument);
  p = valid_mx();
  p.out_scales = ptr(770);  // swizzled padding is written as 32-bit words
  EXPECT_EQ(mx(p), StatusCode::kMisaligned);
}

TEST(QuantizeValidation, DequantizeArguments) {
  DequantizeParams p;
  p.elements = ptr();
  p.scales = ptr(256);
  p.rows = 4;
  p.cols = 64;
  p.output = ptr(512);
  p.output_bytes = 4 * 64 * 2;
  auto dq = [](const DequantizeParams& q) { return dequantize(q, nullptr).code(); };
  auto q = p;
  q.cols = 40;
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
  q = p;
  q.format = BlockFormat::kMXFP4;
  q.cols = 48;
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
  q = p;
  q.output_bytes -= 1;
  EXPECT_EQ(dq(q), StatusCode::kBufferTooSmall);
  q = p;
  q.output_row_stride = 32;
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
  q = p;
  q.element_row_stride = 32;  // < cols
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
  q = p;
  q.element_row_stride = 72;  // not a multiple of the block size
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
  q = p;
  q.format = BlockFormat::kMXFP8;
  q.decode_global_scale = static_cast<const float*>(ptr(768));
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);  // MX has no global scale
  q = p;
  q.per_row_global_scale = true;
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);  // per-row without a scale
  q = p;
  q.output = ptr(513);
  EXPECT_EQ(dq(q), StatusCode::kMisaligned);
  q = p;
  q.output_dtype = DType::kE2M1x2;
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
  q = p;
  q.scales = nullptr;
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
  q = p;
  q.element_row_stride = int64_t(1) << 62;  // rows * stride overflows the byte offsets
  EXPECT_EQ(dq(q), StatusCode::kInvalidArgument);
}

TEST(QuantizeValidation, LayoutConvertArguments) {
  ScaleLayoutConvertParams p;
  p.input = static_cast<const uint8_t*>(ptr());
  p.output = static_cast<uint8_t*>(ptr(512));
  p.input_layout = ScaleLayout::kLinear;
  p.output_layout = ScaleLayout::kSwizzled8x4;
  p.rows = 3;
  p.sf_cols = 5;
  p.input_bytes = 15;
  p.output_bytes = 8 * 8;
  auto cv = [](const ScaleLayoutConvertParams& q) { return convert_scale_layout(q, nullptr).code(); };
  auto q = p;
  q.output_bytes = 63;
  EXPECT_EQ(cv(q), StatusCode::kBufferTooSmall);
  q = p;
  q.input_bytes = 14;
  EXPECT_EQ(cv(q), StatusCode::kBufferTooSmall);
  q = p;
  q.sf_cols = 0;
  EXPECT_EQ(cv(q), StatusCode::kInvalidArgument);
  q = p;
  q.output = static_cast<uint8_t*>(ptr(8));  // overlaps the input
  EXPECT_EQ(cv(q), StatusCode::kInvalidArgument);
}

TEST(QuantizeValidation, GlobalScaleArguments) {
  GlobalScaleParams p;
  p.input = ptr();
  p.rows = 4;
  p.cols = 64;
  p.out_global_scale = static_cast<float*>(ptr(512));
  const size_t need = global_scale_workspace_bytes(p);
  EXPECT_GT(need, 0u);
  EXPECT_EQ(compute_global_scale(p, nullptr, need, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(compute_global_scale(p, ptr(768), need - 4, nullptr).code(), StatusCode::kBufferTooSmall);
  auto q = p;
  q.per_row = true;
  EXPECT_EQ(global_scale_workspace_bytes(q), 0u);
  q = p;
  q.cols = -5;
  EXPECT_EQ(compute_global_scale(q, ptr(768), need, nullptr).code(), StatusCode::kInvalidArgument);
  q = p;
  q.out_global_scale = nullptr;
  EXPECT_EQ(compute_global_scale(q, ptr(768), need, nullptr).code(), StatusCode::kInvalidArgument);
  q = p;
  q.input = ptr(1);
  EXPECT_EQ(compute_global_scale(q, ptr(768), need, nullptr).code(), StatusCode::kMisaligned);
}

// A valid call reaches the device check: without a GPU it fails with kNoDevice (never crashes).
TEST(QuantizeValidation, ValidCallWithoutGpuIsNoDevice) {
  if (device_info().available) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(nv(valid_nvfp4()), StatusCode::kNoDevice);
  EXPECT_EQ(mx(valid_mx()), StatusCode::kNoDevice);
}

TEST(QuantDispatch, VariantParsingAndForcing) {
  quant::Variant v;
  EXPECT_TRUE(quant::parse_variant("tma", &v));
  EXPECT_EQ(v, quant::Variant::kTma);
  EXPECT_TRUE(quant::parse_variant("vectorized", &v));
  EXPECT_EQ(v, quant::Variant::kVectorized);
  EXPECT_FALSE(quant::parse_variant("fast", &v));
  quant::VariantQuery q;
  q.rows = 1 << 15;
  q.cols = 1 << 14;
  q.tma_eligible = true;
  quant::set_variant_override(quant::Variant::kVectorized);
  EXPECT_EQ(quant::choose_variant(q), quant::Variant::kVectorized);
  quant::set_variant_override(quant::Variant::kTma);
  EXPECT_EQ(quant::choose_variant(q), quant::Variant::kTma);
  q.tma_eligible = false;
  EXPECT_EQ(quant::choose_variant(q), quant::Variant::kVectorized);  // forced TMA needs alignment
  quant::set_variant_override(quant::Variant::kAuto);
  q.tma_eligible = true;
  q.rows = 1;
  q.cols = 256;
  EXPECT_EQ(quant::choose_variant(q), quant::Variant::kVectorized);  // small: below the threshold
  // The measured crossover (docs/QUANTIZE.md): TMA from 2^31 elements on.
  q.rows = 1 << 16;
  q.cols = 1 << 15;
  EXPECT_EQ(quant::choose_variant(q), quant::Variant::kTma);
  q.rows = 1 << 15;
  EXPECT_EQ(quant::choose_variant(q), quant::Variant::kVectorized);
  q.cols = 1 << 14;
  EXPECT_EQ(quant::choose_variant(q), quant::Variant::kVectorized);
}

}  // namespace
}  // namespace fp4kit
