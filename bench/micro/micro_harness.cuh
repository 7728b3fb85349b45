// Shared set-up of the hardware microbenchmarks in bench/micro: the [iterations] argument, the
// sm_90 check, every thread's prepacked chunk inputs (one 16-byte code word and 8 scale bytes per
// thread, up to 512 threads), and the timing of a kernel launched with one CTA per SM.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gemm/sm90/fragment_decode.cuh"
#include "gemm/sm90/wgmma_kernel.cuh"

namespace fp4kit::micro {

// Decodes (the GEMMs' decode_chunk) a chunk that differs per stage `it` (its inputs xor-ed with it),
// so that nothing is hoisted out of a stage loop.
template <typename T>
__device__ __forceinline__ void decode_stage_chunk(uint4 w, uint2 sc, int it, uint32_t (&f)[4][4]) {
  w.x ^= it;
  w.y ^= it << 1;
  w.z ^= it << 2;
  w.w ^= it << 3;
  sc.x ^= it << 5;
  sc.y ^= it << 7;
  gemm_impl::sm90::decode_chunk<T>(w, sc, f);
}

// XORs a decoded chunk into `chk` (a decode whose results feed nothing else is kept alive this way).
__device__ __forceinline__ void fold_chunk(uint32_t& chk, const uint32_t (&f)[4][4]) {
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) chk ^= f[s][j];
}

// The 4 RS wgmmas m64nNk16 of one 64-K stage: the decoded chunk `a` against the 128B-swizzled
// [N][64] B tile at shared address `b`.
template <typename T, int N>
__device__ __forceinline__ void issue_rs(const uint32_t (&a)[4][4], uint32_t b, float (&acc)[N / 2]) {
#pragma unroll
  for (int s = 0; s < 4; ++s) gemm_impl::sm90::gmma_rs<T, N>(a[s], gemm_impl::sm90::sw128_desc(b + 32 * s), acc);
}

// One wgmma batch as the GEMM's consumers issue it: fence the accumulators, arrive, `issue()`,
// commit, and wait until at most one batch (this one) is in flight.
template <int NA, class Issue>
__device__ __forceinline__ void wgmma_batch(float (&acc)[NA], Issue issue) {
  gemm_impl::sm90::fence_acc(acc);
  cute::warpgroup_arrive();
  issue();
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<1>();
}

// Runs `body(cur, nxt, stage)` for stages 0..iters-1 (iters even), alternating two fragment sets: a
// stage works on `cur` and may decode the next stage into `nxt` (the GEMM consumers' double buffering).
template <class Body>
__device__ __forceinline__ void stage_pairs(int iters, uint32_t (&fa0)[4][4], uint32_t (&fa1)[4][4], Body body) {
  for (int it = 0; it < iters; it += 2) {
#pragma unroll
    for (int h = 0; h < 2; ++h) body(h ? fa1 : fa0, h ? fa0 : fa1, it + h);
  }
}

// Fills `bytes` of shared memory with small random BF16 values, visible to wgmma (async proxy) after
// the CTA barrier.
__device__ __forceinline__ void fill_smem_bf16(uint8_t* smem, int bytes) {
  for (int i = threadIdx.x; i < bytes / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3c003c00u ^ (i * 2654435761u & 0x00ff00ffu);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
}

struct ChunkInputs {
  uint4* codes = nullptr;
  uint2* scales = nullptr;
  float* out = nullptr;  // [sms][512]: one value per thread, so the work is not optimized away
  int sms = 0;
  int iters = 0;  // stages per launch, even
};

inline void release(ChunkInputs& in) {
  cudaFree(in.codes);
  cudaFree(in.scales);
  cudaFree(in.out);
  in = ChunkInputs{};
}

// Parses [iterations] (default 65536, rounded up to even: the kernels run stages in pairs), checks for
// an sm_90 GPU and fills the inputs. Returns -1 to go on, else the exit code to return now (0:
// skipped without a GPU, 1: CUDA error, 2: bad argument).
inline int setup(const char* name, int argc, char** argv, ChunkInputs& in) {
  const long iters = argc > 1 ? std::atol(argv[1]) : (1L << 16);
  if (iters <= 0 || iters > (1L << 30)) {
    std::fprintf(stderr, "%s: iterations must be in [1, 2^30]\n", name);
    return 2;
  }
  in.iters = int((iters + 1) & ~1L);
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
      major != 9) {
    std::printf("%s: skipped (needs an sm_90 GPU)\n", name);
    return 0;
  }
  cudaDeviceGetAttribute(&in.sms, cudaDevAttrMultiProcessorCount, dev);
  uint32_t h[512 * 4];
  bool ok = cudaMalloc(&in.codes, 512 * sizeof(uint4)) == cudaSuccess &&
            cudaMalloc(&in.scales, 512 * sizeof(uint2)) == cudaSuccess &&
            cudaMalloc(&in.out, size_t(in.sms) * 512 * sizeof(float)) == cudaSuccess;
  for (int i = 0; ok && i < 512 * 4; ++i) h[i] = 0x9e3779b9u * uint32_t(i + 1);
  ok = ok && cudaMemcpy(in.codes, h, 512 * sizeof(uint4), cudaMemcpyHostToDevice) == cudaSuccess;
  for (int i = 0; ok && i < 512 * 2; ++i) h[i] = 0x30303030u + (uint32_t(i) & 0x0f0f0f0fu);  // E4M3 scales near 1
  ok = ok && cudaMemcpy(in.scales, h, 512 * sizeof(uint2), cudaMemcpyHostToDevice) == cudaSuccess;
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", name, cudaGetErrorString(cudaGetLastError()));
    release(in);
    return 1;
  }
  return -1;
}

// ns per stage of the kernel `launch()` starts (once per call): a warm-up, then 5 timed launches.
template <class Launch>
float ns_per_stage(const char* name, int iters, Launch launch) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  launch();  // warm-up
  cudaEventRecord(e0);
  constexpr int kReps = 5;
  for (int r = 0; r < kReps; ++r) launch();
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", name, cudaGetErrorString(err));
    std::exit(1);
  }
  return ms / kReps * 1e6f / float(iters);
}

}  // namespace fp4kit::micro
