// Dequantization, round trips, the MX quantizers and the global scale:
//   * dequantize() == the definition (e2m1 * e4m3 exact, * decode scale in FP32, one rounding);
//   * dequantize(quantize(x)) keeps NVFP4 within its error bounds (SNR on Gaussian data);
//   * MXFP4 / MXFP8 quantize == a re-statement of spec §2.5 / §2.7 (exact numerics), MXFP8 round
//     trip of on-grid data is lossless;
//   * compute_global_scale conventions.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "ref_test_util.h"

namespace {

using namespace fp4kit;
using namespace reftest;

const ScaleLayout kLayouts[] = {ScaleLayout::kSwizzled128x4, ScaleLayout::kSwizzled8x4, ScaleLayout::kLinear};

float global_scale(const void* x, DType dtype, int64_t rows, int64_t cols, QuantNumerics numerics) {
  GlobalScaleParams g;
  g.input = x;
  g.input_dtype = dtype;
  g.rows = rows;
  g.cols = cols;
  g.numerics = numerics;
  float gs = 0.0f;
  g.out_global_scale = &gs;
  EXPECT_TRUE(reference::compute_global_scale(g).is_ok());
  return gs;
}

struct Q {
  std::vector<uint8_t> elements, scales;
};

Q quantize_nvfp4(const HostTensor& t, const float* gs, bool per_row, QuantNumerics numerics, ScaleLayout layout) {
  Q q;
  q.elements.resize(size_t(t.rows * t.cols / 2));
  q.scales.resize(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, layout, t.rows, t.cols)));
  Nvfp4QuantizeParams p;
  p.input = t.data();
  p.input_dtype = t.dtype;
  p.rows = t.rows;
  p.cols = t.cols;
  p.input_row_stride = t.stride;
  p.global_scale = gs;
  p.per_row_global_scale = per_row;
  p.numerics = numerics;
  p.out_codes = q.elements.data();
  p.out_codes_bytes = int64_t(q.elements.size());
  p.out_scales = q.scales.data();
  p.out_scales_bytes = int64_t(q.scales.size());
  p.scale_layout = layout;
  const Status s = reference::quantize_nvfp4(p);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return q;
}

Q quantize_mx(const HostTensor& t, BlockFormat format, QuantNumerics numerics, ScaleLayout layout) {
  Q q;
  q.elements.resize(size_t(element_buffer_bytes(format, t.rows, t.cols)));
  q.scales.resize(size_t(scale_buffer_bytes(format, layout, t.rows, t.cols)), 0xAB);
  MxQuantizeParams p;
  p.format = format;
  p.input = t.data();
  p.input_dtype = t.dtype;
  p.rows = t.rows;
  p.cols = t.cols;
  p.input_row_stride = t.stride;
  p.numerics = numerics;
  p.out_elements = q.elements.data();
  p.out_elements_bytes = int64_t(q.elements.size());
  p.out_scales = q.scales.data();
  p.out_scales_bytes = int64_t(q.scales.size());
  p.scale_layout = layout;
  const Status s = reference::quantize_mx(p);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return q;
}

std::vector<float> dequantize_f32(const Q& q, BlockFormat format, ScaleLayout layout, int64_t rows, int64_t cols,
                                  const float* dgs, bool per_row) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  DequantizeParams p;
  p.format = format;
  p.elements = q.elements.data();
  p.scales = q.scales.data();
  p.scale_layout = layout;
  p.rows = rows;
  p.cols = cols;
  p.decode_global_scale = dgs;
  p.per_row_global_scale = per_row;
  p.output = out.data();
  p.output_dtype = DType::kFP32;
  p.output_bytes = int64_t(out.size() * 4);
  const Status s = reference::dequantize(p);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

double snr_db(const std::vector<float>& x, const std::vector<float>& y) {
  double sig = 0, err = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sig += double(x[i]) * x[i];
    err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  }
  return 10.0 * std::log10(sig / err);
}

// ---- dequantize == definition ----
TEST(RefDequantize, Nvfp4MatchesDefinition) {
  std::mt19937 rng(31);
  const int64_t rows = 37, cols = 96;
  std::vector<uint8_t> codes(size_t(rows * cols / 2)), lin(size_t(rows * cols / 16));
  for (auto& c : codes) c = uint8_t(rng());
  for (auto& s : lin) s = uint8_t(rng() % 0x7F);  // finite E4M3 scales (incl. 0 and subnormals)
  lin[3] = 0x7F;                                  // one NaN scale
  std::vector<float> dgs(static_cast<size_t>(rows));
  for (auto& g : dgs) g = std::ldexp(std::uniform_real_distribution<float>(1.0f, 2.0f)(rng), int(rng() % 30) - 20);
  for (ScaleLayout layout : kLayouts) {
    Q q{codes, swizzle_by_view(lin, rows, cols / 16, layout)};
    for (DType out_dtype : {DType::kFP32, DType::kBF16, DType::kFP16}) {
      for (int mode = 0; mode < 3; ++mode) {  // no decode scale, scalar, per row
        const int64_t stride = cols + 5;
        std::vector<uint8_t> out(size_t(rows * stride * 4 + 64), 0x5A);
        DequantizeParams p;
        p.format = BlockFormat::kNVFP4;
        p.elements = q.elements.data();
        p.scales = q.scales.data();
        p.scale_layout = layout;
        p.rows = rows;
        p.cols = cols;
        p.decode_global_scale = mode == 0 ? nullptr : dgs.data();
        p.per_row_global_scale = mode == 2;
        p.output = out.data();
        p.output_dtype = out_dtype;
        p.output_row_stride = stride;
        p.output_bytes = ((rows - 1) * stride + cols) * int64_t(dtype_size(out_dtype));  // exactly enough
        ASSERT_TRUE(reference::dequantize(p).is_ok());
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            float v = float(nvfp4_value(codes, lin, cols, r, c));  // exact in FP32
            if (mode > 0) v = v * dgs[size_t(mode == 2 ? r : 0)];  // FP32 RN
            const int64_t i = r * stride + c;
            if (out_dtype == DType::kFP32) {
              float got;
              std::memcpy(&got, out.data() + i * 4, 4);
              ASSERT_TRUE(got == v || (std::isnan(got) && std::isnan(v))) << r << "," << c;
            } else {
              uint16_t got;
              std::memcpy(&got, out.data() + i * 2, 2);
              const uint16_t want = nearest_16bit(double(v), out_dtype == DType::kBF16);
              if (std::isnan(v)) {
                ASSERT_EQ(got & 0x7FFF, want & 0x7FFF) << r << "," << c;
              } else {
                ASSERT_EQ(got, want) << r << "," << c << " v=" << v;
              }
            }
          }
          // The stride gap is not written.
          const size_t es = dtype_size(out_dtype);
          for (int64_t c = cols; c < stride && r + 1 < rows; ++c)
            for (size_t b = 0; b < es; ++b) ASSERT_EQ(out[size_t((r * stride + c)) * es + b], 0x5A);
        }
      }
    }
  }
}

TEST(RefDequantize, MxScaleDecoding) {
  // MXFP4: e2m1 * 2^(sf - 127); code 0 decodes to 0; code 0xFF makes the block NaN.
  std::vector<uint8_t> codes(32, 0x71), sfs = {127, 0, 0xFF, 200};  // 4 rows of one block
  std::vector<uint8_t> elems(4 * 16, 0x71);                          // elements 0.5 (even), 6.0 (odd)
  Q q{elems, sfs};
  const auto v = dequantize_f32(q, BlockFormat::kMXFP4, ScaleLayout::kLinear, 4, 32, nullptr, false);
  EXPECT_EQ(v[0], 0.5f);
  EXPECT_EQ(v[1], 6.0f);
  EXPECT_EQ(v[32], 0.0f);
  EXPECT_TRUE(std::isnan(v[64]) && std::isnan(v[65]));
  EXPECT_EQ(v[96], std::ldexp(0.5f, 73));
  // MXFP8: e4m3 * 2^(sf - 127).
  Q q8{std::vector<uint8_t>(32, 0x7E), {130}};  // 448 * 8
  const auto v8 = dequantize_f32(q8, BlockFormat::kMXFP8, ScaleLayout::kLinear, 1, 32, nullptr, false);
  EXPECT_EQ(v8[0], 3584.0f);
}

// ---- round trips ----
TEST(RefRoundTrip, Nvfp4SnrOnGaussian) {
  std::mt19937 rng(41);
  const int64_t rows = 128, cols = 1024;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (auto& v : x) v = nd(rng);
  for (DType dtype : {DType::kFP32, DType::kBF16}) {
    const HostTensor t = make_tensor(dtype, rows, cols, cols, x);
    std::vector<float> xs(x.size());
    for (int64_t i = 0; i < rows * cols; ++i) xs[size_t(i)] = t.at(i / cols, i % cols);
    for (QuantNumerics numerics : {QuantNumerics::kExact, QuantNumerics::kFast, QuantNumerics::kModelOpt}) {
      const float gs = global_scale(t.data(), dtype, rows, cols, numerics);
      const float dgs = numerics == QuantNumerics::kModelOpt ? gs : 1.0f / gs;
      const Q q = quantize_nvfp4(t, &gs, false, numerics, ScaleLayout::kSwizzled128x4);
      const auto y = dequantize_f32(q, BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, rows, cols, &dgs, false);
      const double snr = snr_db(xs, y);
      std::cout << "nvfp4 " << quant_numerics_name(numerics) << " " << dtype_name(dtype) << " SNR " << snr << " dB\n";
      EXPECT_GT(snr, 18.0) << quant_numerics_name(numerics);
      // Element-wise bound: |x - y| <= half an E2M1 step at the block's scale, i.e. <= amax_block / 6
      // * (1 + scale rounding) ... loosely: never more than 0.5 * amax_block.
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t b = 0; b < cols / 16; ++b) {
          float amax = 0;
          for (int i = 0; i < 16; ++i) amax = std::fmax(amax, std::fabs(xs[size_t(r * cols + b * 16 + i)]));
          for (int i = 0; i < 16; ++i) {
            const size_t k = size_t(r * cols + b * 16 + i);
            ASSERT_LE(std::fabs(xs[k] - y[k]), 0.25f * amax + 1e-6f) << r << "," << b * 16 + i;
          }
        }
      }
    }
  }
}

TEST(RefRoundTrip, MxSnrAndLosslessMxfp8) {
  std::mt19937 rng(42);
  const int64_t rows = 64, cols = 512;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (auto& v : x) v = nd(rng) * 3.0f;
  const HostTensor t = make_tensor(DType::kFP32, rows, cols, cols, x);
  for (QuantNumerics numerics : {QuantNumerics::kExact, QuantNumerics::kFast}) {
    const Q q4 = quantize_mx(t, BlockFormat::kMXFP4, numerics, ScaleLayout::kSwizzled128x4);
    const double s4 = snr_db(x, dequantize_f32(q4, BlockFormat::kMXFP4, ScaleLayout::kSwizzled128x4, rows, cols, nullptr, false));
    const Q q8 = quantize_mx(t, BlockFormat::kMXFP8, numerics, ScaleLayout::kLinear);
    const double s8 = snr_db(x, dequantize_f32(q8, BlockFormat::kMXFP8, ScaleLayout::kLinear, rows, cols, nullptr, false));
    std::cout << "mxfp4 " << quant_numerics_name(numerics) << " SNR " << s4 << " dB, mxfp8 SNR " << s8 << " dB\n";
    EXPECT_GT(s4, 14.0);
    EXPECT_GT(s8, 28.0);
  }
  // On-grid data: E4M3 values times 2^j per block (block amax chosen so the scale is exactly 2^j):
  // MXFP8 reproduces it exactly.
  std::vector<float> g(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / 32; ++b) {
      const int j = int(rng() % 20) - 10;
      for (int i = 0; i < 32; ++i) {
        const float e = i == 0 ? 448.0f : float(e4m3_value(uint8_t(rng() % 0x7F)));
        g[size_t(r * cols + b * 32 + i)] = std::ldexp((rng() & 1) ? -e : e, j);
      }
    }
  }
  const HostTensor tg = make_tensor(DType::kFP32, rows, cols, cols, g);
  const Q q = quantize_mx(tg, BlockFormat::kMXFP8, QuantNumerics::kExact, ScaleLayout::kSwizzled8x4);
  EXPECT_EQ(dequantize_f32(q, BlockFormat::kMXFP8, ScaleLayout::kSwizzled8x4, rows, cols, nullptr, false), g);
}

// ---- MX quantize == re-statement of spec §2.5 / §2.7 (exact numerics) ----
// The smallest power of two >= v as a UE8M0 code (v > 0), clamped to [1, 254]; 0 for v == 0.
uint8_t ue8m0_ceil(float v) {
  if (v == 0.0f) return 0;
  if (std::isnan(v)) return 255;
  if (std::isinf(v)) return 254;
  int e;
  const double f = std::frexp(double(v), &e);
  const int c = (f == 0.5 ? e - 1 : e) + 127;
  return uint8_t(c < 1 ? 1 : (c > 254 ? 254 : c));
}

TEST(RefQuantizeMx, MatchesSpecRestatement) {
  std::mt19937 rng(51);
  for (DType dtype : {DType::kBF16, DType::kFP16, DType::kFP32}) {
    for (ScaleLayout layout : kLayouts) {
      for (int64_t rows : {1, 9, 130}) {
        for (int64_t cols : {32, 96}) {
          std::vector<float> x = random_values(rng, size_t(rows * cols), -10, 10);
          for (size_t i = 0; i < x.size(); i += 97) x[i] = 0.0f;
          for (size_t i = 0; i < 32 && i < x.size(); ++i) x[i] = (i % 2) ? -0.0f : 0.0f;  // a zero block
          if (x.size() > 64) x[40] = NAN;
          const HostTensor t = make_tensor(dtype, rows, cols, cols, x);
          for (BlockFormat format : {BlockFormat::kMXFP4, BlockFormat::kMXFP8}) {
            const Q q = quantize_mx(t, format, QuantNumerics::kExact, layout);
            std::vector<uint8_t> want_lin(size_t(rows * cols / 32)), want_el(q.elements.size(), 0);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t b = 0; b < cols / 32; ++b) {
                float amax = 0.0f;
                for (int i = 0; i < 32; ++i) {
                  const float v = t.at(r, b * 32 + i);
                  if (!std::isnan(v)) amax = std::fmax(amax, std::fabs(v));
                }
                const bool fp4 = format == BlockFormat::kMXFP4;
                const float v = amax * (fp4 ? 1.0f / 6.0f : 1.0f / 448.0f);
                const uint8_t sf = ue8m0_ceil(v);
                const float factor = v == 0.0f ? 0.0f : std::ldexp(1.0f, 127 - int(sf));
                want_lin[size_t(r * (cols / 32) + b)] = sf;
                for (int i = 0; i < 32; ++i) {
                  const float y = t.at(r, b * 32 + i) * factor;
                  const int64_t c = b * 32 + i;
                  if (fp4) {
                    want_el[size_t(r * cols / 2 + c / 2)] |= uint8_t(e2m1_rne_midpoints(y) << (c % 2 ? 4 : 0));
                  } else {
                    const float yc = y > 448.0f ? 448.0f : (y < -448.0f ? -448.0f : y);
                    want_el[size_t(r * cols + c)] = e4m3_nearest(yc);
                  }
                }
              }
            }
            const std::string what = std::string(block_format_name(format)) + " " + dtype_name(dtype) + " " +
                                     scale_layout_name(layout) + " " + std::to_string(rows) + "x" + std::to_string(cols);
            EXPECT_EQ(q.elements, want_el) << what;
            EXPECT_EQ(q.scales, swizzle_by_view(want_lin, rows, cols / 32, layout)) << what;
          }
        }
      }
    }
  }
}

// ---- global scale ----
TEST(RefGlobalScale, Conventions) {
  auto gs_of = [](std::vector<float> x, QuantNumerics n, float* amax_out = nullptr) {
    GlobalScaleParams g;
    g.input = x.data();
    g.input_dtype = DType::kFP32;
    g.rows = 1;
    g.cols = int64_t(x.size());
    g.numerics = n;
    float gs = -1.0f;
    g.out_global_scale = &gs;
    g.out_amax = amax_out;
    EXPECT_TRUE(reference::compute_global_scale(g).is_ok());
    return gs;
  };
  const float a = 3.7f;
  EXPECT_EQ(gs_of({1.0f, -a, NAN, 0.5f}, QuantNumerics::kExact), 2688.0f / a);  // NaN ignored
  EXPECT_EQ(gs_of({1.0f, -a, NAN, 0.5f}, QuantNumerics::kFast), 2688.0f / a);
  EXPECT_EQ(gs_of({1.0f, -a, NAN, 0.5f}, QuantNumerics::kModelOpt), a / 2688.0f);
  EXPECT_EQ(gs_of({0.0f, -0.0f}, QuantNumerics::kExact), 1.0f);          // amax 0 -> 1
  EXPECT_EQ(gs_of({NAN, NAN}, QuantNumerics::kExact), 1.0f);             // all NaN: amax 0 -> 1
  EXPECT_EQ(gs_of({1e-44f}, QuantNumerics::kExact), FLT_MAX);            // 2688 / amax overflows -> FLT_MAX
  EXPECT_EQ(gs_of({-INFINITY, 1.0f}, QuantNumerics::kExact), 1.0f);      // amax Inf -> 2688/Inf = 0 -> 1
  EXPECT_EQ(gs_of({0.0f}, QuantNumerics::kModelOpt), 0.0f);              // ModelOpt: no guard
  float amax = 0.0f;
  gs_of({2.0f, -5.0f}, QuantNumerics::kExact, &amax);
  EXPECT_EQ(amax, 5.0f);
}

TEST(RefGlobalScale, PerRowAndInputTypes) {
  std::mt19937 rng(61);
  const int64_t rows = 5, cols = 40, stride = 48;
  std::vector<float> x = random_values(rng, size_t(rows * cols));
  for (int64_t c = 0; c < cols; ++c) x[size_t(2 * cols + c)] = 0.0f;  // row 2 all zero
  for (DType dtype : {DType::kBF16, DType::kFP16, DType::kFP32}) {
    const HostTensor t = make_tensor(dtype, rows, cols, stride, x);
    std::vector<float> gs(static_cast<size_t>(rows)), amax(static_cast<size_t>(rows));
    GlobalScaleParams g;
    g.input = t.data();
    g.input_dtype = dtype;
    g.rows = rows;
    g.cols = cols;
    g.input_row_stride = stride;
    g.per_row = true;
    g.out_global_scale = gs.data();
    g.out_amax = amax.data();
    ASSERT_TRUE(reference::compute_global_scale(g).is_ok());
    float all = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      float a = 0.0f;
      for (int64_t c = 0; c < cols; ++c) a = std::fmax(a, std::fabs(t.at(r, c)));
      all = std::fmax(all, a);
      EXPECT_EQ(amax[size_t(r)], a);
      EXPECT_EQ(gs[size_t(r)], a == 0.0f ? 1.0f : 2688.0f / a) << dtype_name(dtype) << " row " << r;
    }
    g.per_row = false;
    ASSERT_TRUE(reference::compute_global_scale(g).is_ok());
    EXPECT_EQ(gs[0], 2688.0f / all);
    EXPECT_EQ(amax[0], all);
  }
}

}  // namespace
