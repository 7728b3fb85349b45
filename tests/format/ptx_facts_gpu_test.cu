// The GPU facts the numerics contract rests on (docs/NUMERICS.md §3.2 "How the CPU emulates
// kFast"), and the shared recipes of src/format/ run on the device against the host:
//   * rcp.approx.ftz.f32(6) and (448) are the correctly rounded reciprocals (so the kFast NVFP4
//     scale byte and all of MXFP4/MXFP8 kFast are CPU/GPU bit-identical);
//   * rcp.approx.ftz.f32 is never more than 1 ulp from RN(1/x) in the normal range;
//   * ex2.approx.ftz.f32 is exact for integer arguments;
//   * arithmetic NaNs are 0x7fffffff and cvt.rn.satfinite.e4m3x2.f32 maps NaN of either sign to 0x7F
//     (why the E2M1/E4M3 encoders are sign-free for NaN);
//   * format::nvfp4_block_scale / nvfp4_encode_element (kExact) and the MX recipes give the same
//     bits on device and host; kFast gives the same scale bytes, and codes that differ only where
//     x * outScale is within 4 ulps of an E2M1 midpoint (counted and printed).
// Skips without an sm_90 GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include "common/gpu_test.h"
#include "format/block_recipes.h"
#include "format/float16.h"

namespace {

using namespace fp4kit;
using namespace fp4kit::format;

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

__device__ float dev_rcp(float x) {
  float r;
  asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ float dev_ex2(float x) {
  float r;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ uint16_t dev_cvt_e4m3x2(float hi, float lo) {
  uint16_t r;
  asm volatile("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

__global__ void facts_kernel(uint32_t* out) {
  volatile float nan_p = __uint_as_float(0x7fc00000u), nan_n = __uint_as_float(0xffc00000u);
  volatile float inf = __uint_as_float(0x7f800000u), zero = 0.0f, two = 2.0f;
  out[0] = __float_as_uint(dev_rcp(6.0f));
  out[1] = __float_as_uint(dev_rcp(448.0f));
  out[2] = __float_as_uint(__fmul_rn(nan_n, two));
  out[3] = __float_as_uint(__fmul_rn(zero, inf));
  out[4] = __float_as_uint(mul_ftz(-zero, dev_rcp(zero)));
  out[5] = dev_cvt_e4m3x2(nan_n, nan_p);
  out[6] = dev_cvt_e4m3x2(-inf, 464.0f);
  out[7] = dev_cvt_e4m3x2(-0.0f, 465.0f);
}

__global__ void rcp_sweep_kernel(uint32_t exp_field, unsigned long long* counts) {
  const uint32_t m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= (1u << 23)) return;
  const float x = __uint_as_float((exp_field << 23) | m);
  const int32_t d = int32_t(__float_as_uint(dev_rcp(x))) - int32_t(__float_as_uint(__frcp_rn(x)));
  if (d != 0) atomicAdd(&counts[0], 1ull);
  if (d > 1 || d < -1) atomicAdd(&counts[1], 1ull);
}

__global__ void ex2_kernel(float* out) {
  const int i = int(threadIdx.x);  // 0..253 -> exponent i - 126
  out[i] = dev_ex2(float(i - 126));
}

struct BlockOut {
  uint8_t sf;
  uint8_t codes[16];
  float factor;
};

// One thread per block of 16: the shared NVFP4 recipe.
__global__ void nvfp4_recipe_kernel(const float* x, const float* S, int n_blocks, QuantNumerics mode, BlockOut* out) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  float amax = 0.0f;
  for (int i = 0; i < 16; ++i) amax = fmax_nan_ignoring(amax, abs_f(x[b * 16 + i]));
  const BlockScale bs = nvfp4_block_scale(amax, S[b], mode);
  out[b].sf = bs.sf;
  out[b].factor = bs.factor;
  for (int i = 0; i < 16; ++i) out[b].codes[i] = uint8_t(nvfp4_encode_element(x[b * 16 + i], bs, mode));
}

// One thread per block of 32: the MX recipes (format 0 = MXFP4, 1 = MXFP8).
__global__ void mx_recipe_kernel(const float* x, int n_blocks, int format, QuantNumerics mode, uint8_t* out) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = fmax_nan_ignoring(amax, abs_f(x[b * 32 + i]));
  const BlockScale bs = format == 0 ? mxfp4_block_scale(amax, mode) : mxfp8_block_scale(amax, mode);
  out[b * 33] = bs.sf;
  for (int i = 0; i < 32; ++i) {
    out[b * 33 + 1 + i] = format == 0 ? uint8_t(mxfp4_encode_element(x[b * 32 + i], bs, mode))
                                      : mxfp8_encode_element(x[b * 32 + i], bs, mode);
  }
}

TEST(PtxFacts, ReciprocalsNaNsAndCvt) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 8 * sizeof(uint32_t)));
  facts_kernel<<<1, 1>>>(d);
  uint32_t h[8];
  CUDA_OK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  cudaFree(d);
  EXPECT_EQ(h[0], 0x3e2aaaabu) << "rcp.approx.ftz(6) != RN(1/6): the kFast scale byte is no longer CPU/GPU exact";
  EXPECT_EQ(h[0], float_bits(rcp_approx_ftz(6.0f)));
  EXPECT_EQ(h[1], 0x3b124925u) << "rcp.approx.ftz(448) != RN(1/448)";
  EXPECT_EQ(h[1], float_bits(rcp_approx_ftz(448.0f)));
  EXPECT_EQ(h[2], 0x7fffffffu) << "GPU NaN from NaN * 2";
  EXPECT_EQ(h[3], 0x7fffffffu) << "GPU NaN from 0 * Inf";
  EXPECT_EQ(h[4], 0x7fffffffu) << "GPU NaN from -0 *ftz rcp(0)";
  EXPECT_EQ(h[5], 0x7f7fu) << "cvt e4m3x2(-NaN, +NaN)";
  EXPECT_EQ(h[6], 0xfe7eu) << "cvt e4m3x2(-Inf, 464)";
  EXPECT_EQ(h[7], 0x807eu) << "cvt e4m3x2(-0, 465)";
  // The host encoder agrees with the instruction on these.
  EXPECT_EQ(float_to_e4m3(bits_float(0xffc00000u)), 0x7f);
  EXPECT_EQ(float_to_e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(float_to_e4m3(465.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
}

TEST(PtxFacts, RcpApproxWithinOneUlpAndEx2Exact) {
  FP4KIT_REQUIRE_SM90A();
  unsigned long long* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 2 * sizeof(unsigned long long)));
  unsigned long long total = 0, tested = 0;
  for (uint32_t e : {1u, 100u, 126u, 127u, 128u, 200u, 252u}) {
    CUDA_OK(cudaMemset(d, 0, 2 * sizeof(unsigned long long)));
    rcp_sweep_kernel<<<(1 << 23) / 256, 256>>>(e, d);
    unsigned long long h[2];
    CUDA_OK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT_EQ(h[1], 0ull) << "rcp.approx.ftz more than 1 ulp from RN in exponent field " << e;
    total += h[0];
    tested += 1ull << 23;
  }
  cudaFree(d);
  std::cout << "rcp.approx.ftz != RN(1/x) for " << total << " of " << tested << " inputs ("
            << 100.0 * double(total) / double(tested) << "%), all by 1 ulp\n";
  float* ex = nullptr;
  CUDA_OK(cudaMalloc(&ex, 254 * sizeof(float)));
  ex2_kernel<<<1, 254>>>(ex);
  std::vector<float> hx(254);
  CUDA_OK(cudaMemcpy(hx.data(), ex, 254 * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(ex);
  for (int i = 0; i < 254; ++i) EXPECT_EQ(hx[size_t(i)], std::ldexp(1.0f, i - 126)) << "ex2.approx.ftz(" << i - 126 << ")";
}

// Random, boundary, zero, tiny, huge and special blocks.
std::vector<float> test_blocks(std::mt19937& rng, int n_blocks, int block, std::vector<float>* S) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(size_t(n_blocks * block));
  S->resize(size_t(n_blocks));
  for (int b = 0; b < n_blocks; ++b) {
    const int kind = int(rng() % 8);
    const float s = std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, int(rng() % 24) - 12);
    (*S)[size_t(b)] = (rng() % 4 == 0) ? std::ldexp(1.0f, int(rng() % 20) - 10) : s;
    for (int i = 0; i < block; ++i) {
      float v = nd(rng) * std::ldexp(1.0f, int(rng() % 16) - 8);
      if (kind == 1) v = 0.0f;
      if (kind == 2) v = (i % 3) ? -0.0f : std::ldexp(nd(rng), -30);
      if (kind == 3) v = nd(rng) * 1e30f;
      if (kind == 4) v = (i == 5) ? NAN : (i == 7 ? -INFINITY : v);
      if (kind == 5) v = float(int(nd(rng) * 8)) * 0.25f;  // coarse values, many exact products
      if (kind == 6) v = std::ldexp(nd(rng), -135);        // FP32 subnormals
      x[size_t(b * block + i)] = v;
    }
  }
  return x;
}

template <class T>
T* to_device(const std::vector<T>& v) {
  T* d = nullptr;
  if (cudaMalloc(&d, v.size() * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

bool near_e2m1_midpoint(float y) {
  static const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const float a = std::fabs(y);
  for (float m : mids) {
    const float ulp = std::nextafter(m, INFINITY) - m;
    if (std::fabs(a - m) <= 4.0f * ulp) return true;
  }
  return false;
}

// Gaussian data rounded to BF16, one tensor-wide S = 2688 / amax: the common case.
std::vector<float> bf16_gaussian_blocks(std::mt19937& rng, int n_blocks, std::vector<float>* S) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(size_t(n_blocks) * 16);
  float amax = 0.0f;
  for (auto& v : x) {
    v = bf16_to_float(float_to_bf16(nd(rng)));
    amax = std::fmax(amax, std::fabs(v));
  }
  S->assign(size_t(n_blocks), 2688.0f / amax);
  return x;
}

class PtxFactsRecipes : public ::testing::TestWithParam<int> {};

TEST_P(PtxFactsRecipes, SharedNvfp4RecipeDeviceEqualsHost) {
  FP4KIT_REQUIRE_SM90A();
  std::mt19937 rng(2024);
  const int n = 1 << 16;
  std::vector<float> S;
  const std::vector<float> x = GetParam() == 0 ? test_blocks(rng, n, 16, &S) : bf16_gaussian_blocks(rng, n, &S);
  const char* data = GetParam() == 0 ? "adversarial blocks" : "bf16 gaussian, gs = 2688/amax";
  float* dx = to_device(x);
  float* dS = to_device(S);
  BlockOut* dout = nullptr;
  CUDA_OK(cudaMalloc(&dout, size_t(n) * sizeof(BlockOut)));
  for (QuantNumerics mode : {QuantNumerics::kExact, QuantNumerics::kFast, QuantNumerics::kModelOpt}) {
    nvfp4_recipe_kernel<<<(n + 127) / 128, 128>>>(dx, dS, n, mode, dout);
    std::vector<BlockOut> g(static_cast<size_t>(n));
    CUDA_OK(cudaMemcpy(g.data(), dout, size_t(n) * sizeof(BlockOut), cudaMemcpyDeviceToHost));
    int64_t sf_diff = 0, code_diff = 0, unexplained = 0;
    for (int b = 0; b < n; ++b) {
      float amax = 0.0f;
      for (int i = 0; i < 16; ++i) amax = fmax_nan_ignoring(amax, abs_f(x[size_t(b * 16 + i)]));
      const BlockScale bs = nvfp4_block_scale(amax, S[size_t(b)], mode);
      sf_diff += bs.sf != g[size_t(b)].sf;
      for (int i = 0; i < 16; ++i) {
        const float xi = x[size_t(b * 16 + i)];
        if (nvfp4_encode_element(xi, bs, mode) == g[size_t(b)].codes[i]) continue;
        ++code_diff;
        if (!(mode == QuantNumerics::kFast && near_e2m1_midpoint(mul_ftz(xi, bs.factor)))) ++unexplained;
      }
    }
    std::cout << "nvfp4 " << quant_numerics_name(mode) << " (" << data << "): device vs host " << sf_diff
              << " scale bytes, " << code_diff << " of " << n * 16 << " codes differ\n";
    EXPECT_EQ(sf_diff, 0) << quant_numerics_name(mode);
    EXPECT_EQ(unexplained, 0) << quant_numerics_name(mode) << ": code differences away from E2M1 midpoints";
    if (mode != QuantNumerics::kFast) EXPECT_EQ(code_diff, 0) << quant_numerics_name(mode);
  }
  cudaFree(dout);
  cudaFree(dx);
  cudaFree(dS);
}

INSTANTIATE_TEST_SUITE_P(Data, PtxFactsRecipes, ::testing::Values(0, 1));

TEST(PtxFacts, MxRecipesDeviceEqualsHost) {
  FP4KIT_REQUIRE_SM90A();
  std::mt19937 rng(77);
  const int n = 1 << 15;
  std::vector<float> unused;
  const std::vector<float> x = test_blocks(rng, n, 32, &unused);
  float* dx = to_device(x);
  uint8_t* dout = nullptr;
  CUDA_OK(cudaMalloc(&dout, size_t(n) * 33));
  for (int format : {0, 1}) {
    for (QuantNumerics mode : {QuantNumerics::kExact, QuantNumerics::kFast}) {
      mx_recipe_kernel<<<(n + 127) / 128, 128>>>(dx, n, format, mode, dout);
      std::vector<uint8_t> g(size_t(n) * 33);
      CUDA_OK(cudaMemcpy(g.data(), dout, g.size(), cudaMemcpyDeviceToHost));
      int64_t diff = 0;
      for (int b = 0; b < n; ++b) {
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = fmax_nan_ignoring(amax, abs_f(x[size_t(b * 32 + i)]));
        const BlockScale bs = format == 0 ? mxfp4_block_scale(amax, mode) : mxfp8_block_scale(amax, mode);
        diff += bs.sf != g[size_t(b) * 33];
        for (int i = 0; i < 32; ++i) {
          const float xi = x[size_t(b * 32 + i)];
          const uint8_t h = format == 0 ? uint8_t(mxfp4_encode_element(xi, bs, mode)) : mxfp8_encode_element(xi, bs, mode);
          diff += h != g[size_t(b) * 33 + 1 + i];
        }
      }
      EXPECT_EQ(diff, 0) << (format == 0 ? "mxfp4 " : "mxfp8 ") << quant_numerics_name(mode);
    }
  }
  cudaFree(dout);
  cudaFree(dx);
}

}  // namespace
