// The MoE epilogues' NVFP4 round trip (moe/moe_device.cuh: nvfp4_exact_roundtrip_lanes, with the block
// spread over 16 / N lanes kLaneStride apart, and nvfp4_exact_roundtrip_lanes_table, the factor from a
// table of nvfp4_exact_factor_of_byte) against the format:: recipe on the host, bit for bit (NaN:
// any NaN): random blocks over many magnitudes, zero blocks, NaN, ±Inf, -0, denormals, FLT_MAX, and
// global scales from 2^-20 to 2^20, 1 and NaN. The layer tests compare outputs within a tolerance,
// so a round trip one code off would pass them; this one would not. Skips without an sm_90 GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/gpu_test.h"
#include "format/block_recipes.h"
#include "moe/moe_device.cuh"

namespace {

using namespace fp4kit;
using namespace fp4kit::format;
using namespace fp4kit::moe_impl;

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

constexpr int kWarpsPerCta = 4;

// x: [warp][lane][N] in place; gs: one global scale per warp.
template <int N, int kStride, bool kTable>
__global__ void roundtrip_kernel(float* x, const float* gs) {
  __shared__ float table[kWarpsPerCta][kNvfp4FactorTableSize];
  const int warp = int(blockIdx.x) * kWarpsPerCta + int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const float g = gs[warp];
  float v[N];
  for (int i = 0; i < N; ++i) v[i] = x[(int64_t(warp) * 32 + lane) * N + i];
  if constexpr (kTable) {
    float* t = table[threadIdx.x >> 5];
    const auto c = quant::nvfp4_scale_const<QuantNumerics::kExact>(g);
    for (int b = lane; b < kNvfp4FactorTableSize; b += 32) t[b] = nvfp4_exact_factor_of_byte(uint32_t(b), g);
    __syncwarp();
    nvfp4_exact_roundtrip_lanes_table<N, kStride>(v, c, t);
  } else {
    nvfp4_exact_roundtrip_lanes<N, kStride>(v, g);
  }
  for (int i = 0; i < N; ++i) x[(int64_t(warp) * 32 + lane) * N + i] = v[i];
}

float pick_scale(std::mt19937& rng, int w) {
  if (w % 17 == 5) return NAN;
  if (w % 11 == 3) return 1.0f;
  return std::ldexp(1.0f + std::uniform_real_distribution<float>(0.0f, 1.0f)(rng),
                    std::uniform_int_distribution<int>(-20, 20)(rng));
}

// One block's 16 values of kind `kind`.
void fill_block(float* b, int kind, std::mt19937& rng) {
  const float sigma = std::ldexp(1.0f, std::uniform_int_distribution<int>(-24, 24)(rng));
  std::normal_distribution<float> nd(0.0f, sigma);
  for (int i = 0; i < 16; ++i) b[i] = nd(rng);
  switch (kind % 8) {
    case 0: for (int i = 0; i < 16; ++i) b[i] = 0.0f; break;
    case 1: b[3] = NAN; break;
    case 2: b[7] = INFINITY; b[9] = -INFINITY; break;
    case 3: b[0] = -0.0f; b[15] = -0.0f; break;
    case 4: for (int i = 0; i < 16; ++i) b[i] = bits_float(uint32_t(rng() & 0x807fffffu)); break;  // denormals
    case 5: b[2] = 3.402823466e+38f; b[4] = -3.402823466e+38f; break;
    case 6: for (int i = 0; i < 16; ++i) b[i] = (i % 3 == 0) ? -b[i] * 0.0f : b[i]; break;  // ±0 among others
    default: break;
  }
}

template <int N, int kStride, bool kTable>
void check_roundtrip(uint32_t seed) {
  constexpr int G = 16 / N;  // lanes per block
  const int ctas = 64, warps = ctas * kWarpsPerCta;
  std::mt19937 rng(seed);
  std::vector<float> x(size_t(warps) * 32 * N), gs(warps);
  // Lane l of a warp holds elements [N * p, N * p + N) of block `key`, p = its rank in the block.
  auto key_of = [](int l) { return l & ~((G - 1) * kStride); };
  auto rank_of = [](int l) { return (l / kStride) & (G - 1); };
  for (int w = 0; w < warps; ++w) {
    gs[size_t(w)] = pick_scale(rng, w);
    for (int key = 0; key < 32; ++key) {
      if (key_of(key) != key) continue;
      float b[16];
      fill_block(b, int(rng() % 12), rng);
      for (int l = 0; l < 32; ++l)
        if (key_of(l) == key)
          for (int i = 0; i < N; ++i) x[(size_t(w) * 32 + size_t(l)) * N + size_t(i)] = b[rank_of(l) * N + i];
    }
  }
  float *dx = nullptr, *dg = nullptr;
  CUDA_OK(cudaMalloc(&dx, x.size() * sizeof(float)));
  CUDA_OK(cudaMalloc(&dg, gs.size() * sizeof(float)));
  CUDA_OK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dg, gs.data(), gs.size() * sizeof(float), cudaMemcpyHostToDevice));
  roundtrip_kernel<N, kStride, kTable><<<ctas, kWarpsPerCta * 32>>>(dx, dg);
  CUDA_OK(cudaGetLastError());
  std::vector<float> got(x.size());
  CUDA_OK(cudaMemcpy(got.data(), dx, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(dx);
  cudaFree(dg);

  int64_t mismatches = 0;
  for (int w = 0; w < warps; ++w) {
    for (int key = 0; key < 32; ++key) {
      if (key_of(key) != key) continue;
      float b[16], out[16];
      for (int l = 0; l < 32; ++l)
        if (key_of(l) == key)
          for (int i = 0; i < N; ++i) {
            b[rank_of(l) * N + i] = x[(size_t(w) * 32 + size_t(l)) * N + size_t(i)];
            out[rank_of(l) * N + i] = got[(size_t(w) * 32 + size_t(l)) * N + size_t(i)];
          }
      float amax = 0.0f;
      for (float v : b) amax = fmax_nan_ignoring(amax, abs_f(v));
      const BlockScale bs = nvfp4_block_scale(amax, gs[size_t(w)], QuantNumerics::kExact);
      const float sf = e4m3_to_float(bs.sf);
      for (int i = 0; i < 16; ++i) {
        const float want = mul_rn(e2m1_to_float(nvfp4_encode_element(b[i], bs, QuantNumerics::kExact)), sf);
        const bool same = (std::isnan(want) && std::isnan(out[i])) || float_bits(want) == float_bits(out[i]);
        if (!same && ++mismatches <= 5)
          ADD_FAILURE() << "warp " << w << " block lane " << key << " element " << i << ": x = " << b[i]
                        << ", gs = " << gs[size_t(w)] << ": got " << out[i] << " want " << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(MoeRoundtripGpu, OneElementPerLane) {
  FP4KIT_REQUIRE_SM90A();
  check_roundtrip<1, 1, false>(101);
}

TEST(MoeRoundtripGpu, OneElementPerLaneFactorTable) {
  FP4KIT_REQUIRE_SM90A();
  check_roundtrip<1, 1, true>(102);
}

TEST(MoeRoundtripGpu, TwoElementsLanesFourApart) {
  FP4KIT_REQUIRE_SM90A();
  check_roundtrip<2, 4, false>(103);
}

TEST(MoeRoundtripGpu, EightElementsPerLane) {
  FP4KIT_REQUIRE_SM90A();
  check_roundtrip<8, 1, false>(104);
}

TEST(MoeRoundtripGpu, FourElementsPerLane) {
  FP4KIT_REQUIRE_SM90A();
  check_roundtrip<4, 1, false>(106);
}

// One thread per block: the large-batch elementwise kernels (quant_thread_per_block).
TEST(MoeRoundtripGpu, SixteenElementsPerThread) {
  FP4KIT_REQUIRE_SM90A();
  check_roundtrip<16, 1, false>(107);
}

TEST(MoeRoundtripGpu, FourElementsPerLaneFactorTable) {
  FP4KIT_REQUIRE_SM90A();
  check_roundtrip<4, 1, true>(105);
}

}  // namespace
