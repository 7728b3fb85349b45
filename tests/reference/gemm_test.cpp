// reference::gemm against a naive float64 triple loop written here: operands decoded by the
// definitions in ref_test_util.h (E2M1 table x E4M3 scale read through the view definition of the
// layout, BF16/FP16 bit decoders), sum in k order in double, * alpha, + bias, then rounded to the
// output dtype by a nearest-value search over the 16-bit codes (ties to even).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "ref_test_util.h"
#include "reference/tensor_io.h"

namespace {

using namespace fp4kit;
using namespace reftest;

TEST(RefRounding, DoubleToBf16Fp16IsDirectRne) {
  std::mt19937_64 rng(11);
  int ties = 0;
  for (int i = 0; i < 200000; ++i) {
    double v;
    if (i % 4 == 0) {
      // Exact ties: a 16-bit value plus half its ulp, for both formats' ranges.
      const uint16_t c = uint16_t(rng() & 0x7F7F);
      const double x = bf16_value(c), next = bf16_value(uint16_t(c + 1));
      v = (x + next) / 2;
      ++ties;
    } else if (i % 4 == 1) {
      const uint16_t c = uint16_t(rng() % 0x7BFF);
      v = (double(fp16_value(c)) + double(fp16_value(uint16_t(c + 1)))) / 2;
      ++ties;
    } else {
      // Random doubles over a wide range, including values where double -> float -> bf16 double
      // rounding would go wrong (bits just past the bf16 half-ulp, below the float ulp).
      v = std::ldexp(double(rng() >> 11) / double(1ull << 53) + 0.5, int(rng() % 300) - 150);
      if (i % 8 == 3) v = std::ldexp(1.0 + 1.0 / 256 + 1.0 / (1ull << 40), int(rng() % 60) - 30);  // bf16 tie + tiny
    }
    if (rng() & 1) v = -v;
    ASSERT_EQ(reference::detail::double_to_bf16(v), nearest_16bit(v, true)) << v;
    ASSERT_EQ(reference::detail::double_to_fp16(v), nearest_16bit(v, false)) << v;
  }
  EXPECT_GT(ties, 50000);
  EXPECT_EQ(reference::detail::double_to_bf16(1.0 + 1.0 / 256 + 1e-12), 0x3F81);  // float would round to the tie
  EXPECT_EQ(reference::detail::double_to_fp16(65520.0), 0x7C00);
  EXPECT_EQ(reference::detail::double_to_fp16(65519.99), 0x7BFF);
  EXPECT_EQ(reference::detail::double_to_bf16(-0.0), 0x8000);
}

struct Nvfp4Operand {
  std::vector<uint8_t> codes, lin_scales, scales;  // scales: in `layout`
  ScaleLayout layout;
};

Nvfp4Operand quantize_operand(const std::vector<float>& v, int64_t rows, int64_t cols, float gs, ScaleLayout layout) {
  Nvfp4Operand o;
  o.layout = layout;
  o.codes.resize(size_t(rows * cols / 2));
  o.lin_scales.resize(size_t(rows * cols / 16));
  Nvfp4QuantizeParams p;
  p.input = v.data();
  p.input_dtype = DType::kFP32;
  p.rows = rows;
  p.cols = cols;
  p.global_scale = &gs;
  p.out_codes = o.codes.data();
  p.out_codes_bytes = int64_t(o.codes.size());
  p.out_scales = o.lin_scales.data();
  p.out_scales_bytes = int64_t(o.lin_scales.size());
  p.scale_layout = ScaleLayout::kLinear;
  EXPECT_TRUE(reference::quantize_nvfp4(p).is_ok());
  o.scales = swizzle_by_view(o.lin_scales, rows, cols / 16, layout);
  return o;
}

struct GemmCase {
  int64_t m, n, k;
  DType a_dtype;
  ScaleLayout a_layout, b_layout;
  DType out_dtype;
  bool bias;
  int64_t lda_pad, ldd_pad;
};

void run_case(const GemmCase& g, std::mt19937& rng) {
  const std::string what = "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
                           " a=" + dtype_name(g.a_dtype) + " out=" + dtype_name(g.out_dtype) +
                           (g.bias ? " bias" : "") + " a_sf=" + scale_layout_name(g.a_layout) +
                           " b_sf=" + scale_layout_name(g.b_layout);
  const int64_t M = g.m, N = g.n, K = g.k;
  const std::vector<float> a_vals = random_values(rng, size_t(M * K), -4, 4);
  const std::vector<float> b_vals = random_values(rng, size_t(N * K), -4, 4);
  const float gs_a = 2688.0f / 40.0f, gs_b = 2688.0f / 37.0f;
  const Nvfp4Operand b = quantize_operand(b_vals, N, K, gs_b, g.b_layout);

  const bool a_fp4 = g.a_dtype == DType::kE2M1x2;
  const int64_t lda = a_fp4 ? K : K + g.lda_pad;
  HostTensor a16;
  Nvfp4Operand a4;
  if (a_fp4) a4 = quantize_operand(a_vals, M, K, gs_a, g.a_layout);
  else a16 = make_tensor(g.a_dtype, M, K, lda, a_vals);
  const float alpha = a_fp4 ? 1.0f / (gs_a * gs_b) : 1.0f / gs_b;

  std::vector<float> bias_vals = random_values(rng, size_t(N), -2, 2);
  HostTensor bias = make_tensor(g.out_dtype == DType::kFP32 ? DType::kFP32 : g.out_dtype, 1, N, N, bias_vals);

  const int64_t ldd = N + g.ldd_pad;
  const size_t out_elems = size_t(M * ldd);
  std::vector<uint16_t> d16(out_elems, 0x5555);
  std::vector<float> d32(out_elems, -7.0f);
  std::vector<double> d64(size_t(M * N), -1.0);

  reference::GemmRefParams p;
  p.m = M;
  p.n = N;
  p.k = K;
  p.a_dtype = g.a_dtype;
  p.a = a_fp4 ? static_cast<const void*>(a4.codes.data()) : a16.data();
  p.lda = a_fp4 ? 0 : lda;
  p.a_scales = a_fp4 ? a4.scales.data() : nullptr;
  p.a_scale_layout = g.a_layout;
  p.b = b.codes.data();
  p.b_scales = b.scales.data();
  p.b_scale_layout = g.b_layout;
  p.alpha = alpha;
  p.bias = g.bias ? bias.data() : nullptr;
  p.out_dtype = g.out_dtype;
  p.d = g.out_dtype == DType::kFP32 ? static_cast<void*>(d32.data()) : d16.data();
  p.ldd = ldd;
  p.d_f64 = d64.data();
  const Status s = reference::gemm(p);
  ASSERT_TRUE(s.is_ok()) << what << ": " << s.to_string();

  // Naive float64 triple loop.
  int bad = 0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < K; ++kk) {
        const double av = a_fp4 ? nvfp4_value(a4.codes, a4.lin_scales, K, m, kk) : double(a16.at(m, kk));
        acc += av * nvfp4_value(b.codes, b.lin_scales, K, n, kk);
      }
      double v = acc * double(alpha);
      if (g.bias) v += double(bias.at(0, n));
      const double got64 = d64[size_t(m * N + n)];
      const size_t di = size_t(m * ldd + n);
      bool ok = got64 == v;
      if (g.out_dtype == DType::kFP32) ok = ok && d32[di] == float(v);
      else ok = ok && d16[di] == nearest_16bit(v, g.out_dtype == DType::kBF16);
      if (!ok && ++bad <= 5) {
        ADD_FAILURE() << what << " at (" << m << ", " << n << "): want " << v << " got d_f64 " << got64 << " d "
                      << (g.out_dtype == DType::kFP32 ? double(d32[di]) : double(d16[di]));
      }
    }
    for (int64_t n = N; n < ldd; ++n) {
      const size_t di = size_t(m * ldd + n);
      if (g.out_dtype == DType::kFP32) ASSERT_EQ(d32[di], -7.0f) << what << ": wrote into the ldd padding";
      else ASSERT_EQ(d16[di], 0x5555) << what << ": wrote into the ldd padding";
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(RefGemm, MatchesNaiveFloat64W4A16) {
  std::mt19937 rng(21);
  for (DType a : {DType::kBF16, DType::kFP16}) {
    for (DType out : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      run_case({1, 1, 16, a, ScaleLayout::kLinear, ScaleLayout::kSwizzled128x4, out, false, 0, 0}, rng);
      run_case({7, 13, 48, a, ScaleLayout::kLinear, ScaleLayout::kSwizzled128x4, out, true, 8, 3}, rng);
      run_case({33, 17, 80, a, ScaleLayout::kLinear, ScaleLayout::kLinear, out, true, 0, 0}, rng);
      run_case({131, 5, 272, a, ScaleLayout::kLinear, ScaleLayout::kSwizzled8x4, out, false, 16, 1}, rng);
    }
  }
}

TEST(RefGemm, MatchesNaiveFloat64W4A4) {
  std::mt19937 rng(22);
  for (DType out : {DType::kBF16, DType::kFP16, DType::kFP32}) {
    run_case({1, 3, 16, DType::kE2M1x2, ScaleLayout::kSwizzled8x4, ScaleLayout::kSwizzled128x4, out, true, 0, 0}, rng);
    run_case({9, 11, 112, DType::kE2M1x2, ScaleLayout::kSwizzled128x4, ScaleLayout::kSwizzled128x4, out, true, 0, 5}, rng);
    run_case({70, 29, 208, DType::kE2M1x2, ScaleLayout::kLinear, ScaleLayout::kSwizzled8x4, out, false, 0, 0}, rng);
    run_case({129, 130, 64, DType::kE2M1x2, ScaleLayout::kSwizzled128x4, ScaleLayout::kLinear, out, true, 0, 2}, rng);
  }
}

// The reference must handle ~1000^3 shapes in seconds (the GPU tests compare against it).
TEST(RefGemm, LargeShapeIsFast) {
  std::mt19937 rng(23);
  const int64_t M = 512, N = 512, K = 1024;
  const std::vector<float> av = random_values(rng, size_t(M * K), -2, 2), bv = random_values(rng, size_t(N * K), -2, 2);
  const Nvfp4Operand a = quantize_operand(av, M, K, 10.0f, ScaleLayout::kSwizzled128x4);
  const Nvfp4Operand b = quantize_operand(bv, N, K, 10.0f, ScaleLayout::kSwizzled128x4);
  std::vector<uint16_t> d(static_cast<size_t>(M * N));
  reference::GemmRefParams p;
  p.m = M;
  p.n = N;
  p.k = K;
  p.a_dtype = DType::kE2M1x2;
  p.a = a.codes.data();
  p.a_scales = a.scales.data();
  p.b = b.codes.data();
  p.b_scales = b.scales.data();
  p.alpha = 0.01f;
  p.d = d.data();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(reference::gemm(p).is_ok());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "reference gemm " << M << "x" << N << "x" << K << ": " << s << " s\n";
  EXPECT_LT(s, 5.0);
  // Spot-check a few outputs against the naive loop.
  for (int64_t m : {int64_t(0), M / 2, M - 1}) {
    for (int64_t n : {int64_t(0), N / 3, N - 1}) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < K; ++kk)
        acc += nvfp4_value(a.codes, a.lin_scales, K, m, kk) * nvfp4_value(b.codes, b.lin_scales, K, n, kk);
      EXPECT_EQ(d[size_t(m * N + n)], nearest_16bit(acc * double(0.01f), true)) << m << ", " << n;
    }
  }
}

}  // namespace
