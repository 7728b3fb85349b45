// Shared pieces of the weight-stream microbenchmarks in bench/micro (stream_handover.cu,
// grid_handoff.cu): L1-bypassing 16-byte loads in warp-interleaved groups, a fold that keeps them
// alive, and a fill of distinct words (never zeros or constants).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace fp4kit::micro {

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

__device__ __forceinline__ uint4 load_nc(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Loads the group at vector `g` (lanes interleaved: one 512-byte transaction per load); vectors at
// or past `end` are not read. kU: 16-byte loads per lane and group.
template <int kU>
__device__ __forceinline__ void load_group(const uint4* src, int64_t g, int64_t end, int lane, uint4 (&v)[kU]) {
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int64_t i = g + u * 32 + lane;
    v[u] = i < end ? load_nc(src + i) : make_uint4(0, 0, 0, 0);
  }
}

template <int kU>
__device__ __forceinline__ uint32_t fold(const uint4 (&v)[kU]) {
  uint32_t x = 0;
#pragma unroll
  for (int u = 0; u < kU; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  return x;
}

__global__ void fill_kernel(uint4* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    p[i] = make_uint4(h, h * 3u + 1u, h ^ 0x5bd1e995u, h + seed);
  }
}

// Median microseconds per call over 25 launches of `exec` (a graph of `calls` calls), after one
// warm-up launch; exits with a message on a CUDA error.
inline float graph_us_per_call(cudaGraphExec_t exec, int calls, cudaStream_t s) {
  auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
      std::fprintf(stderr, "fp4kit micro: %s: %s\n", what, cudaGetErrorString(e));
      std::exit(1);
    }
  };
  check(cudaGraphLaunch(exec, s), "warm-up launch");
  check(cudaStreamSynchronize(s), "warm-up");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  std::vector<float> t;
  for (int r = 0; r < 25; ++r) {
    check(cudaEventRecord(e0, s), "event record");
    check(cudaGraphLaunch(exec, s), "graph launch");
    check(cudaEventRecord(e1, s), "event record");
    check(cudaEventSynchronize(e1), "graph run");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed time");
    t.push_back(ms * 1e3f / float(calls));
  }
  std::sort(t.begin(), t.end());
  check(cudaEventDestroy(e0), "event");
  check(cudaEventDestroy(e1), "event");
  return t[t.size() / 2];
}

}  // namespace fp4kit::micro
