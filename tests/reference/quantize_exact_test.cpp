// reference::quantize_nvfp4 (kExact) against a straight-line re-statement of NVFP4_SPEC.md §2.4,
// written here without src/format/: per block of 16
//   vecMax   = max |x_i| (NaN ignored)
//   SFValue  = vecMax != 0 ? vecMax * (S * (1.0f/6.0f)) : 0          (FP32, this association)
//   sf       = E4M3 RNE satfinite of SFValue (nearest of the 127 finite values, ties to even)
//   outScale = vecMax != 0 ? fminf(1.0f / (float(sf) * (1.0f / S)), FLT_MAX) : 0
//   code_i   = E2M1 RNE of x_i * outScale (midpoint table, ties to even, sign bit kept, NaN -> +0)
// on random, boundary (±ulps around grid points and midpoints times the block scale, SF rounding
// midpoints), all-zero, huge, negative-zero, tiny (SF underflow) and Inf/NaN blocks, for all three
// scale layouts, BF16/FP16/FP32 inputs, scalar and per-row global scales and ragged shapes.
// Also kModelOpt against its own re-statement.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "ref_test_util.h"

namespace {

using namespace fp4kit;
using namespace reftest;

struct Quantized {
  std::vector<uint8_t> codes;       // [rows, cols/2]
  std::vector<uint8_t> lin_scales;  // [rows, cols/16]
};

// ---- the re-statement ----
Quantized restate_exact(const HostTensor& t, const std::vector<float>& gs, bool per_row) {
  const int64_t rows = t.rows, cols = t.cols;
  Quantized q;
  q.codes.assign(size_t(rows * cols / 2), 0);
  q.lin_scales.assign(size_t(rows * cols / 16), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const float S = gs[per_row ? size_t(r) : 0];
    for (int64_t b = 0; b < cols / 16; ++b) {
      float vec_max = 0.0f;
      for (int i = 0; i < 16; ++i) {
        const float x = t.at(r, b * 16 + i);
        if (!std::isnan(x) && std::fabs(x) > vec_max) vec_max = std::fabs(x);
      }
      const float sf_value = vec_max != 0.0f ? vec_max * (S * (1.0f / 6.0f)) : 0.0f;
      const uint8_t sf = e4m3_nearest(sf_value);
      const float sfq = float(e4m3_value(sf));
      const float out_scale = vec_max != 0.0f ? std::fmin(1.0f / (sfq * (1.0f / S)), FLT_MAX) : 0.0f;
      q.lin_scales[size_t(r * (cols / 16) + b)] = sf;
      for (int i = 0; i < 16; ++i) {
        const uint32_t code = e2m1_rne_midpoints(t.at(r, b * 16 + i) * out_scale);
        uint8_t& byte = q.codes[size_t(r * (cols / 2) + (b * 16 + i) / 2)];
        byte |= uint8_t(i % 2 == 0 ? code : code << 4);
      }
    }
  }
  return q;
}

// ModelOpt (S = ws2, the decode scale): s = amax / (6 * ws2), 1 where that is 0; sf = E4M3(s);
// code_i = E2M1(x_i / (float(sf) * ws2)) with the sign bit set iff the quotient is < 0.
Quantized restate_modelopt(const HostTensor& t, const std::vector<float>& ws2, bool per_row) {
  const int64_t rows = t.rows, cols = t.cols;
  Quantized q;
  q.codes.assign(size_t(rows * cols / 2), 0);
  q.lin_scales.assign(size_t(rows * cols / 16), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const float S = ws2[per_row ? size_t(r) : 0];
    for (int64_t b = 0; b < cols / 16; ++b) {
      float amax = 0.0f;
      for (int i = 0; i < 16; ++i) {
        const float x = t.at(r, b * 16 + i);
        if (!std::isnan(x) && std::fabs(x) > amax) amax = std::fabs(x);
      }
      float s = amax / (6.0f * S);
      if (s == 0.0f) s = 1.0f;
      const uint8_t sf = e4m3_nearest(s);
      const float divisor = float(e4m3_value(sf)) * S;
      q.lin_scales[size_t(r * (cols / 16) + b)] = sf;
      for (int i = 0; i < 16; ++i) {
        const float y = t.at(r, b * 16 + i) / divisor;
        uint32_t code = e2m1_rne_midpoints(y) & 7u;
        if (y < 0.0f) code |= 8u;
        uint8_t& byte = q.codes[size_t(r * (cols / 2) + (b * 16 + i) / 2)];
        byte |= uint8_t(i % 2 == 0 ? code : code << 4);
      }
    }
  }
  return q;
}

// ---- inputs ----
float nudge(float v, int ulps) {
  for (; ulps > 0; --ulps) v = std::nextafter(v, INFINITY);
  for (; ulps < 0; ++ulps) v = std::nextafter(v, -INFINITY);
  return v;
}

// One block of 16 values of a randomly chosen kind, for a row whose global scale is S.
void fill_block(std::mt19937& rng, DType dtype, float S, float* x) {
  static const float grid[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f};
  const float dtype_max = dtype == DType::kFP16 ? 65504.0f : (dtype == DType::kBF16 ? 3.3e38f : FLT_MAX);
  const float dtype_tiny = dtype == DType::kFP16 ? 6e-8f : (dtype == DType::kBF16 ? 1e-38f : 1e-44f);
  std::uniform_int_distribution<int> kind_d(0, 9), ulp_d(-2, 2), grid_d(0, 14), code_d(1, 0x7E), sign_d(0, 1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto sgn = [&] { return sign_d(rng) ? -1.0f : 1.0f; };
  switch (kind_d(rng)) {
    case 0:
    case 1: {  // random, mixed magnitudes
      const float e = std::ldexp(1.0f, std::uniform_int_distribution<int>(-12, 12)(rng));
      for (int i = 0; i < 16; ++i) x[i] = nd(rng) * e;
      break;
    }
    case 2:
    case 3: {  // element boundaries: (grid point or midpoint) * sfq / S, ±2 ulps; amax pins sf
      // Half the time a power-of-two scale (mantissa 0), so that with a power-of-two S the products
      // x * outScale land exactly on the midpoints (ties).
      const int code = sign_d(rng) ? code_d(rng) : (code_d(rng) & 0x78) | 0x08;
      const float unit = float(e4m3_value(uint8_t(code))) / S;
      x[0] = sgn() * 6.0f * unit;
      for (int i = 1; i < 16; ++i) x[i] = nudge(sgn() * grid[grid_d(rng)] * unit, ulp_d(rng));
      break;
    }
    case 4: {  // SF boundaries: amax * S / 6 near an E4M3 midpoint
      const int c = std::uniform_int_distribution<int>(0, 0x7D)(rng);
      const double mid = (e4m3_value(uint8_t(c)) + e4m3_value(uint8_t(c + 1))) / 2;
      x[0] = nudge(float(mid * 6.0 / S), ulp_d(rng));
      for (int i = 1; i < 16; ++i) x[i] = nd(rng) * x[0] / 3.0f;
      break;
    }
    case 5: {  // all zero, some negative zeros
      for (int i = 0; i < 16; ++i) x[i] = sign_d(rng) ? -0.0f : 0.0f;
      break;
    }
    case 6: {  // huge values
      for (int i = 0; i < 16; ++i) x[i] = sgn() * dtype_max * std::uniform_real_distribution<float>(0.5f, 1.0f)(rng);
      break;
    }
    case 7: {  // negative zeros with tiny values (SF underflow for most S)
      for (int i = 0; i < 16; ++i) x[i] = (i % 3 == 0) ? -0.0f : sgn() * dtype_tiny * float(1 + i);
      break;
    }
    case 8: {  // a small block next to the tensor's scale: SF underflows to 0 or is subnormal
      const float e = std::ldexp(1.0f, std::uniform_int_distribution<int>(-16, -6)(rng)) / S;
      for (int i = 0; i < 16; ++i) x[i] = (i % 5 == 0) ? 0.0f : nd(rng) * e;
      break;
    }
    default: {  // specials
      for (int i = 0; i < 16; ++i) x[i] = nd(rng);
      x[std::uniform_int_distribution<int>(0, 15)(rng)] = sign_d(rng) ? NAN : -NAN;
      if (sign_d(rng)) x[std::uniform_int_distribution<int>(0, 15)(rng)] = sgn() * INFINITY;
      break;
    }
  }
}

struct Case {
  int64_t rows, cols, stride;
  std::vector<float> values;  // [rows, cols]
  std::vector<float> gs;      // 1 or rows values
  bool per_row;
};

// How the global scale of a case is chosen.
enum class GsMode {
  kDesigned,     // one scalar chosen first, blocks designed around it (ties reachable, see below)
  kFromAmax,     // the usual encode scale 2688 / amax of the finished tensor
  kPerRow,       // one designed scale per row
};

// A designed global scale: a power of two (then float(sf) / S and the output scale are exact for
// power-of-two sf, so E2M1 ties are hit exactly), 6 * 2^k (then S * (1/6) == 2^k exactly, so SF
// ties are hit exactly), or any value.
float designed_gs(std::mt19937& rng) {
  const int k = std::uniform_int_distribution<int>(-10, 10)(rng);
  switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
    case 0: return std::ldexp(1.0f, k);
    case 1: return std::ldexp(6.0f, k);
    default: return std::ldexp(std::uniform_real_distribution<float>(1.0f, 2.0f)(rng), k);
  }
}

Case make_case(std::mt19937& rng, DType dtype, int64_t rows, int64_t cols, GsMode mode) {
  Case c;
  c.rows = rows;
  c.cols = cols;
  c.stride = cols + (rows % 2 ? 16 : 0);
  c.per_row = mode == GsMode::kPerRow;
  c.values.resize(size_t(rows * cols));
  const float scalar_gs = designed_gs(rng);
  std::vector<float> row_gs(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    row_gs[size_t(r)] = c.per_row ? designed_gs(rng) : scalar_gs;
    for (int64_t b = 0; b < cols / 16; ++b) fill_block(rng, dtype, row_gs[size_t(r)], &c.values[size_t(r * cols + b * 16)]);
  }
  if (mode == GsMode::kPerRow) {
    c.gs = row_gs;
  } else if (mode == GsMode::kDesigned) {
    c.gs = {scalar_gs};
  } else {
    // 2688 / amax (NaN ignored), or 1 when that is not finite and positive.
    float amax = 0.0f;
    for (float v : c.values)
      if (!std::isnan(v)) amax = std::fmax(amax, std::fabs(v));
    const float gs = 2688.0f / amax;
    c.gs = {std::isfinite(gs) && gs > 0.0f ? gs : 1.0f};
  }
  return c;
}

class QuantizeExact : public ::testing::TestWithParam<std::tuple<DType, ScaleLayout>> {};

void check_case(DType dtype, ScaleLayout layout, QuantNumerics numerics, const Case& c, const std::string& what) {
  const HostTensor t = make_tensor(dtype, c.rows, c.cols, c.stride, c.values);
  const Quantized want = numerics == QuantNumerics::kModelOpt ? restate_modelopt(t, c.gs, c.per_row)
                                                              : restate_exact(t, c.gs, c.per_row);
  const int64_t codes_bytes = c.rows * c.cols / 2;
  const int64_t scale_bytes = scale_buffer_bytes(BlockFormat::kNVFP4, layout, c.rows, c.cols);
  std::vector<uint8_t> codes(size_t(codes_bytes + 64), 0xA5), scales(size_t(scale_bytes + 64), 0xA5);
  Nvfp4QuantizeParams p;
  p.input = t.data();
  p.input_dtype = dtype;
  p.rows = c.rows;
  p.cols = c.cols;
  p.input_row_stride = c.stride;
  p.global_scale = c.gs.data();
  p.per_row_global_scale = c.per_row;
  p.numerics = numerics;
  p.out_codes = codes.data();
  p.out_codes_bytes = int64_t(codes.size());
  p.out_scales = scales.data();
  p.out_scales_bytes = int64_t(scales.size());
  p.scale_layout = layout;
  const Status s = reference::quantize_nvfp4(p);
  ASSERT_TRUE(s.is_ok()) << what << ": " << s.to_string();

  int64_t bad_codes = 0;
  for (int64_t i = 0; i < codes_bytes; ++i) {
    if (codes[size_t(i)] != want.codes[size_t(i)] && ++bad_codes <= 5) {
      const int64_t r = i / (c.cols / 2), col = 2 * (i % (c.cols / 2));
      ADD_FAILURE() << what << ": code byte " << i << " (row " << r << ", cols " << col << ".." << col + 1
                    << ", x = " << t.at(r, col) << ", " << t.at(r, col + 1) << ") got " << int(codes[size_t(i)])
                    << " want " << int(want.codes[size_t(i)]) << ", sf "
                    << int(want.lin_scales[size_t(r * (c.cols / 16) + col / 16)]);
    }
  }
  EXPECT_EQ(bad_codes, 0) << what;
  const std::vector<uint8_t> want_scales = swizzle_by_view(want.lin_scales, c.rows, c.cols / 16, layout);
  ASSERT_EQ(int64_t(want_scales.size()), scale_bytes);
  int64_t bad_scales = 0;
  for (int64_t i = 0; i < scale_bytes; ++i) {
    if (scales[size_t(i)] != want_scales[size_t(i)] && ++bad_scales <= 5) {
      ADD_FAILURE() << what << ": scale byte " << i << " got " << int(scales[size_t(i)]) << " want "
                    << int(want_scales[size_t(i)]) << " (padding must be 0)";
    }
  }
  EXPECT_EQ(bad_scales, 0) << what;
  for (size_t i = size_t(codes_bytes); i < codes.size(); ++i) ASSERT_EQ(codes[i], 0xA5) << what << ": wrote past the codes";
  for (size_t i = size_t(scale_bytes); i < scales.size(); ++i) ASSERT_EQ(scales[i], 0xA5) << what << ": wrote past the scales";
}

TEST_P(QuantizeExact, MatchesSpecRestatement) {
  const auto [dtype, layout] = GetParam();
  std::mt19937 rng(1234 + int(dtype) * 10 + int(layout));
  for (int64_t rows : {1, 7, 129}) {
    for (int64_t cols : {16, 48, 1040}) {
      for (GsMode mode : {GsMode::kDesigned, GsMode::kFromAmax, GsMode::kPerRow}) {
        const Case c = make_case(rng, dtype, rows, cols, mode);
        check_case(dtype, layout, QuantNumerics::kExact, c,
                   std::string(dtype_name(dtype)) + " " + scale_layout_name(layout) + " " + std::to_string(rows) + "x" +
                       std::to_string(cols) + " gs mode " + std::to_string(int(mode)) + " gs[0] " + std::to_string(c.gs[0]));
      }
    }
  }
}

TEST_P(QuantizeExact, ModelOptMatchesRestatement) {
  const auto [dtype, layout] = GetParam();
  std::mt19937 rng(99 + int(dtype) * 10 + int(layout));
  for (int64_t rows : {7, 129}) {
    for (GsMode mode : {GsMode::kFromAmax, GsMode::kPerRow}) {
      Case c = make_case(rng, dtype, rows, 48, mode);
      // ModelOpt takes the decode scale ws2 = amax / 2688 (or any positive value per row).
      for (auto& g : c.gs) g = 1.0f / g;
      check_case(dtype, layout, QuantNumerics::kModelOpt, c,
                 std::string("modelopt ") + dtype_name(dtype) + " " + scale_layout_name(layout) + " rows " +
                     std::to_string(rows) + " gs mode " + std::to_string(int(mode)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllInputsAndLayouts, QuantizeExact,
    ::testing::Combine(::testing::Values(DType::kBF16, DType::kFP16, DType::kFP32),
                       ::testing::Values(ScaleLayout::kSwizzled128x4, ScaleLayout::kSwizzled8x4, ScaleLayout::kLinear)),
    [](const auto& info) {
      return std::string(dtype_name(std::get<0>(info.param))) + "_" +
             (std::get<1>(info.param) == ScaleLayout::kSwizzled128x4
                  ? "128x4"
                  : (std::get<1>(info.param) == ScaleLayout::kSwizzled8x4 ? "8x4" : "linear"));
    });

// A wide ragged shape (the GPU tests' large case): many blocks per row, per-row scales.
TEST(QuantizeExactLarge, WideRowsPerRowScale) {
  std::mt19937 rng(4321);
  const int64_t rows = std::getenv("FP4KIT_REF_LARGE") ? 1000 : 64, cols = 16400;
  for (DType dtype : {DType::kFP32, DType::kBF16}) {
    const Case c = make_case(rng, dtype, rows, cols, GsMode::kPerRow);
    check_case(dtype, ScaleLayout::kLinear, QuantNumerics::kExact, c, std::string("large ") + dtype_name(dtype));
    check_case(dtype, ScaleLayout::kSwizzled128x4, QuantNumerics::kExact, c, std::string("large 128x4 ") + dtype_name(dtype));
  }
}

// Hand-picked blocks with known answers (the restatement is checked against them, too).
TEST(QuantizeExactKnown, HandPickedBlocks) {
  // gs = 1: SFValue = amax / 6 (FP32: amax * 0x3E2AAAAB).
  std::vector<float> x(32, 0.0f);
  for (int i = 0; i < 16; ++i) x[size_t(i)] = 6.0f * float(i) / 15.0f;  // block 0: amax 6 -> sf 1.0 (0x38)
  x[16] = -0.0f;                                                       // block 1: all zero, one -0
  const float gs = 1.0f;
  std::vector<uint8_t> codes(16), scales(2);
  Nvfp4QuantizeParams p;
  p.input = x.data();
  p.input_dtype = DType::kFP32;
  p.rows = 1;
  p.cols = 32;
  p.global_scale = &gs;
  p.out_codes = codes.data();
  p.out_codes_bytes = 16;
  p.out_scales = scales.data();
  p.out_scales_bytes = 2;
  p.scale_layout = ScaleLayout::kLinear;
  ASSERT_TRUE(reference::quantize_nvfp4(p).is_ok());
  EXPECT_EQ(scales[0], 0x38);  // 1.0
  EXPECT_EQ(scales[1], 0x00);  // zero block -> SF 0
  // x = 0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 4.4, 4.8, 5.2, 5.6, 6.0
  //  -> 0, 0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 4.0, 4.0, 6.0, 6.0, 6.0
  const uint32_t want[16] = {0, 1, 2, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7};
  for (int i = 0; i < 16; ++i) {
    const uint32_t got = (i % 2 == 0) ? (codes[size_t(i / 2)] & 15u) : (codes[size_t(i / 2)] >> 4);
    EXPECT_EQ(got, want[i]) << "element " << i << " x=" << x[size_t(i)];
  }
  EXPECT_EQ(codes[8], 0x08);  // -0 -> code 8 (low nibble), +0 -> 0
  for (int i = 9; i < 16; ++i) EXPECT_EQ(codes[size_t(i)], 0x00);
}

}  // namespace
