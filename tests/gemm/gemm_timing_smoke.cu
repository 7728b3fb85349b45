// A quick timing smoke test for the decode family, run only with FP4KIT_TIMING=1 (prints, never
// asserts speed). The real benchmark is `fp4kit bench gemm`.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/gpu_test.h"
#include "fp4kit/gemm.h"

using namespace fp4kit;

__global__ void fill_random_bytes(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t x = uint32_t(i) * 2654435761u ^ seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = uint8_t(x);
  }
}

TEST(GemmTiming, DecodeSmoke) {
  FP4KIT_REQUIRE_SM90A();
  if (!std::getenv("FP4KIT_TIMING")) GTEST_SKIP() << "set FP4KIT_TIMING=1 to run";
  struct Shape { int64_t n, k; };
  for (Shape sh : {Shape{8192, 8192}, Shape{8192, 28672}, Shape{28672, 4096}, Shape{4096, 4096}}) {
    const int64_t bytes = prepacked_weight_bytes(sh.n, sh.k);
    const int copies = int(std::max<int64_t>(2, (200ll << 20) / bytes + 1));
    std::vector<uint8_t*> w(copies);
    for (auto& p : w) {
      cudaMalloc(&p, bytes);
      fill_random_bytes<<<1024, 256>>>(p, bytes, 1234);
      // scale bytes must stay in the encoded range [0x68, 0xF0]: write a plausible constant
      cudaMemset(p + sh.n / 64 * 64 * 0 + (bytes / 9) * 8, 0xB0, bytes - (bytes / 9) * 8);
    }
    for (int64_t m : {1, 16, 32}) {
      void *a, *d, *ws = nullptr;
      float* alpha;
      cudaMalloc(&a, m * sh.k * 2);
      fill_random_bytes<<<256, 256>>>(static_cast<uint8_t*>(a), m * sh.k * 2, 99);
      cudaMemset(a, 0x3c, m * sh.k * 2);  // bf16 ~0.0115, finite
      cudaMalloc(&d, m * sh.n * 2);
      cudaMalloc(&alpha, 4);
      float one = 1.0f;
      cudaMemcpy(alpha, &one, 4, cudaMemcpyHostToDevice);
      GemmParams p;
      p.m = m, p.n = sh.n, p.k = sh.k;
      p.a = a, p.d = d, p.alpha = alpha;
      p.b_prepacked_bytes = bytes;
      p.b_prepacked = w[0];
      const int auto_tactic = gemm_default_tactic(p);
      for (const GemmTacticInfo& t : gemm_tactics()) {
        p.tactic = t.id;
        if (!gemm_tactic_can_implement(t.id, p).is_ok()) continue;
        const size_t wsb = gemm_workspace_bytes(p);
        if (wsb) cudaMalloc(&ws, wsb);
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        std::vector<float> times;
        // Batches of back-to-back launches (weights rotated beyond L2), so host overhead overlaps.
        constexpr int kBatch = 20;
        for (int it = 0; it < 8; ++it) {
          cudaEventRecord(e0);
          for (int b = 0; b < kBatch; ++b) {
            p.b_prepacked = w[(it * kBatch + b) % copies];
            ASSERT_TRUE(gemm(p, ws, wsb, nullptr).is_ok());
          }
          cudaEventRecord(e1);
          cudaEventSynchronize(e1);
          float ms;
          cudaEventElapsedTime(&ms, e0, e1);
          if (it >= 2) times.push_back(ms / kBatch);
        }
        std::sort(times.begin(), times.end());
        const double us = times[times.size() / 2] * 1e3;
        std::printf("decode n=%lld k=%lld m=%lld %-22s %s %7.1f us  %.3f TB/s weights\n", (long long)sh.n,
                    (long long)sh.k, (long long)m, t.name.c_str(), t.id == auto_tactic ? "*" : " ", us,
                    bytes / us * 1e-6);
        if (ws) cudaFree(ws);
        ws = nullptr;
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
      }
      cudaFree(a);
      cudaFree(d);
      cudaFree(alpha);
    }
    for (auto& p : w) cudaFree(p);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Large-M (wgmma family) timing, FP4KIT_TIMING=1 only: TFLOPS per tactic at LLM shapes.
TEST(GemmTiming, WgmmaSmoke) {
  FP4KIT_REQUIRE_SM90A();
  if (!std::getenv("FP4KIT_TIMING")) GTEST_SKIP() << "set FP4KIT_TIMING=1 to run";
  struct Shape { int64_t m, n, k; };
  for (Shape sh : {Shape{4096, 8192, 8192}, Shape{2048, 28672, 4096}, Shape{8192, 4096, 4096}, Shape{512, 8192, 8192},
                   Shape{128, 8192, 8192}}) {
    const int64_t bytes = prepacked_weight_bytes(sh.n, sh.k);
    uint8_t* w;
    cudaMalloc(&w, bytes);
    fill_random_bytes<<<1024, 256>>>(w, bytes, 1234);
    cudaMemset(w + (bytes / 9) * 8, 0xB0, bytes - (bytes / 9) * 8);
    void *a, *d;
    float* alpha;
    cudaMalloc(&a, sh.m * sh.k * 2);
    cudaMemset(a, 0x3c, sh.m * sh.k * 2);
    cudaMalloc(&d, sh.m * sh.n * 2);
    cudaMalloc(&alpha, 4);
    float one = 1.0f;
    cudaMemcpy(alpha, &one, 4, cudaMemcpyHostToDevice);
    GemmParams p;
    p.m = sh.m, p.n = sh.n, p.k = sh.k;
    p.a = a, p.d = d, p.alpha = alpha;
    p.b_prepacked_bytes = bytes;
    p.b_prepacked = w;
    const int auto_tactic = gemm_default_tactic(p);
    for (const GemmTacticInfo& t : gemm_tactics()) {
      if (t.name.rfind("wgmma", 0) != 0) continue;
      p.tactic = t.id;
      if (!gemm_tactic_can_implement(t.id, p).is_ok()) continue;
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      std::vector<float> times;
      for (int it = 0; it < 20; ++it) {
        cudaEventRecord(e0);
        ASSERT_TRUE(gemm(p, nullptr, 0, nullptr).is_ok());
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (it >= 5) times.push_back(ms);
      }
      std::sort(times.begin(), times.end());
      const double us = times[times.size() / 2] * 1e3;
      std::printf("wgmma m=%lld n=%lld k=%lld %-24s %s %8.1f us  %6.1f TFLOPS\n", (long long)sh.m, (long long)sh.n,
                  (long long)sh.k, t.name.c_str(), t.id == auto_tactic ? "*" : " ", us,
                  2.0 * sh.m * sh.n * sh.k / us * 1e-6);
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    cudaFree(a);
    cudaFree(d);
    cudaFree(alpha);
    cudaFree(w);
  }
}
