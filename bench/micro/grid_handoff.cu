// fp4kit_micro_handoff: what would W4A4 at 3..16 tokens gain by arranging its activations inside the
// GEMM's grid instead of in a kernel in front of it (docs/GEMM.md "Next for W4A4 at 3..16 tokens")?
//
// A stand-in for the dp GEMM streams a weight buffer (2 CTAs of 8 warps per SM, pinned there by
// dynamic shared memory as the GEMM's registers pin it; the first group requested before
// `griddepcontrol.wait`) and folds one 16-byte word of the arranged activations into every group
// (as the fragment reads; L1 hits for the warps of an SM after the first). The activations are "arranged" (a few integer operations per
// 16-byte word, 4 output words per input word: NVFP4 -> 16-bit) either
//   front    by a kernel of its own launched before each stream kernel (today's W4A4 path), or
//   in-grid  by the stream kernel's own CTAs after their wait, each a share of the words, then an
//            arrival counter all CTAs spin on (ld.acquire) before reading them; the last CTA to
//            leave zeroes the counters (zeroed once before the first call); the next call is let
//            launch only after the arrival barrier, so that its CTAs cannot take the slots this
//            call's last CTAs still need.
// Rows: the stream alone (no activations), front, in-grid, and in-grid with the cooperative launch
// attribute as well (the driver then guarantees residency; whether it combines with programmatic
// stream serialization is one of the questions). Time per call of a graph of 20 calls with PDL,
// weights rotated past 2x L2, and a check that in-grid reads what front reads.
//
// Usage: fp4kit_micro_handoff   (needs an sm_90 GPU; a few seconds)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "stream_util.cuh"

namespace {

using fp4kit::micro::fill_kernel;
using fp4kit::micro::load_group;
using fp4kit::micro::fold;
using fp4kit::micro::min64;

constexpr int kWarps = 8, kThreads = kWarps * 32, kU = 4;
constexpr int kCalls = 20;
constexpr int kPinTwoBytes = 100 << 10;  // at most 2 CTAs per SM (228 KB)
// 16 tokens x K = 14336 (down) in B-fragment order: 458 KB of 16-bit values from 115 KB of codes.
constexpr int64_t kArrangedVecs = 16 * 14336 * 2 / 16, kInputVecs = kArrangedVecs / 4;

enum class Mode { kStreamOnly, kFront, kInGrid };

// One arranged word from its input word (a stand-in for the NVFP4 decode: byte permutes and a
// multiply per pair).
__device__ __forceinline__ uint4 arrange_word(const uint4* in, int64_t i) {
  const uint4 c = in[i >> 2];
  const uint32_t s = uint32_t(i & 3) * 8u;
  auto f = [&](uint32_t w) { return __byte_perm(w >> s, w * 2654435761u, 0x5140u) ^ (w << 3); };
  return make_uint4(f(c.x), f(c.y), f(c.z), f(c.w));
}

__device__ __forceinline__ uint32_t load_acquire(const unsigned int* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The arranged words are read with plain (weak, L1-cached) loads: after the acquire on the arrival
// counter and the CTA barrier they must observe the other CTAs' writes (CUDA memory model). Not
// __ldg: the non-coherent path assumes data that no thread writes during the kernel.
__device__ __forceinline__ uint4 load_weak(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}

__global__ void __launch_bounds__(256) arrange_kernel(const uint4* in, uint4* arranged) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int64_t i = int64_t(blockIdx.x) * 256 + threadIdx.x;
  if (i < kArrangedVecs) arranged[i] = arrange_word(in, i);
}

// sync[0]: arrivals, sync[1]: departures (in-grid mode).
template <Mode kMode>
__global__ void __launch_bounds__(kThreads, 2)
    stream_kernel(const uint4* w, int64_t vecs, const uint4* in, uint4* arranged, unsigned int* sync, uint32_t* out) {
  constexpr int64_t kGroupVecs = 32 * kU;
  if constexpr (kMode != Mode::kInGrid) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int lane = threadIdx.x & 31;
  const int64_t warp = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t warps = int64_t(gridDim.x) * kWarps;
  const int64_t groups = (vecs + kGroupVecs - 1) / kGroupVecs;
  const int64_t b = groups * warp / warps * kGroupVecs, e = min64(vecs, groups * (warp + 1) / warps * kGroupVecs);
  uint4 cur[kU];
  if (b < e) load_group(w, b, e, lane, cur);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if constexpr (kMode == Mode::kInGrid) {
    for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < kArrangedVecs; i += int64_t(gridDim.x) * kThreads)
      arranged[i] = arrange_word(in, i);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      atomicAdd(&sync[0], 1u);
      while (load_acquire(&sync[0]) < gridDim.x) __nanosleep(64);
    }
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  uint32_t x = 0;
  for (int64_t g = b; g < e; g += kGroupVecs) {
    uint4 nxt[kU];
    if (g + kGroupVecs < e) load_group(w, g + kGroupVecs, e, lane, nxt);
    x ^= fold(cur);
    if constexpr (kMode != Mode::kStreamOnly) {
      const uint4 a = load_weak(arranged + (g / 32 + lane) % kArrangedVecs);
      x ^= a.x + a.y * 3u + a.z * 5u + a.w * 7u;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) cur[u] = nxt[u];
  }
  x ^= __shfl_xor_sync(0xffffffffu, x, 16);
  if (lane == 0) out[warp] = x;
  if constexpr (kMode == Mode::kInGrid) {
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(&sync[1], 1u) == gridDim.x - 1) {
      atomicExch(&sync[0], 0u);  // every CTA has passed the arrival spin: the last one out resets
      atomicExch(&sync[1], 0u);
    }
  }
}

#define CHECK(call)                                                                           \
  do {                                                                                        \
    const cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "fp4kit_micro_handoff: %s: %s\n", #call, cudaGetErrorString(e_));  \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

struct Row {
  const char* name;
  Mode mode;
  bool cooperative;
};

struct Buffers {
  std::vector<uint4*> w;
  int64_t vecs = 0;
  uint4 *in = nullptr, *arranged = nullptr;
  unsigned int* sync = nullptr;
  uint32_t* out = nullptr;
};

cudaError_t launch_call(const Row& r, const Buffers& bf, int c, int sms, cudaStream_t s) {
  cudaLaunchAttribute attr[2]{};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  attr[1].id = cudaLaunchAttributeCooperative;
  attr[1].val.cooperative = 1;
  if (r.mode == Mode::kFront) {
    cudaLaunchConfig_t a{};
    a.gridDim = dim3(unsigned((kArrangedVecs + 255) / 256));
    a.blockDim = dim3(256);
    a.stream = s;
    a.attrs = attr;
    a.numAttrs = 1;
    const cudaError_t e = cudaLaunchKernelEx(&a, arrange_kernel, static_cast<const uint4*>(bf.in), bf.arranged);
    if (e != cudaSuccess) return e;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(2 * sms);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = kPinTwoBytes;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = r.cooperative ? 2 : 1;
  const uint4* w = bf.w[c % bf.w.size()];
  switch (r.mode) {
    case Mode::kStreamOnly:
      return cudaLaunchKernelEx(&cfg, stream_kernel<Mode::kStreamOnly>, w, bf.vecs, static_cast<const uint4*>(bf.in),
                                bf.arranged, bf.sync, bf.out);
    case Mode::kFront:
      return cudaLaunchKernelEx(&cfg, stream_kernel<Mode::kFront>, w, bf.vecs, static_cast<const uint4*>(bf.in),
                                bf.arranged, bf.sync, bf.out);
    case Mode::kInGrid:
      return cudaLaunchKernelEx(&cfg, stream_kernel<Mode::kInGrid>, w, bf.vecs, static_cast<const uint4*>(bf.in),
                                bf.arranged, bf.sync, bf.out);
  }
  return cudaErrorInvalidValue;
}

// Median us per call of a graph of kCalls calls; < 0 when the launch or the capture failed.
float time_per_call(const Row& r, const Buffers& bf, int sms, cudaStream_t s) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaError_t launch = cudaSuccess;
  for (int c = 0; c < kCalls && launch == cudaSuccess; ++c) launch = launch_call(r, bf, c, sms, s);
  const cudaError_t end = cudaStreamEndCapture(s, &graph);
  if (launch != cudaSuccess || end != cudaSuccess) {
    std::printf("# %s: %s\n", r.name, cudaGetErrorString(launch != cudaSuccess ? launch : end));
    cudaGetLastError();
    if (end == cudaSuccess) cudaGraphDestroy(graph);
    return -1.0f;
  }
  cudaGraphExec_t exec;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    std::printf("# %s: graph instantiation failed: %s\n", r.name, cudaGetErrorString(cudaGetLastError()));
    cudaGraphDestroy(graph);
    return -1.0f;
  }
  const float us = fp4kit::micro::graph_us_per_call(exec, kCalls, s);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return us;
}

// One eager call of `r` on buffer 0, its per-warp results copied back (empty when it cannot launch).
std::vector<uint32_t> one_call(const Row& r, const Buffers& bf, int sms, cudaStream_t s) {
  CHECK(cudaMemsetAsync(bf.arranged, 0, size_t(kArrangedVecs) * 16, s));
  if (launch_call(r, bf, 0, sms, s) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  std::vector<uint32_t> h(size_t(2 * sms) * kWarps);
  CHECK(cudaMemcpyAsync(h.data(), bf.out, h.size() * 4, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  return h;
}

}  // namespace

int main() {
  int dev = 0, major = 0, sms = 0, l2 = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
      major != 9) {
    std::printf("fp4kit_micro_handoff: skipped (needs an sm_90 GPU)\n");
    return 0;
  }
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (auto k : {stream_kernel<Mode::kStreamOnly>, stream_kernel<Mode::kFront>, stream_kernel<Mode::kInGrid>})
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kPinTwoBytes));
  int resident = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, stream_kernel<Mode::kInGrid>, kThreads, kPinTwoBytes));
  Buffers bf;
  CHECK(cudaMalloc(&bf.in, size_t(kInputVecs) * 16));
  CHECK(cudaMalloc(&bf.arranged, size_t(kArrangedVecs) * 16));
  CHECK(cudaMalloc(&bf.sync, 2 * sizeof(unsigned int)));
  CHECK(cudaMemset(bf.sync, 0, 2 * sizeof(unsigned int)));  // the one-time zeroing the design asks of the caller
  CHECK(cudaMalloc(&bf.out, size_t(2 * sms) * kWarps * 4));
  fill_kernel<<<sms, 256, 0, s>>>(bf.in, kInputVecs, 0x77u);
  const Row rows[] = {{"stream only", Mode::kStreamOnly, false},
                      {"front kernel", Mode::kFront, false},
                      {"in-grid", Mode::kInGrid, false},
                      {"in-grid coop", Mode::kInGrid, true}};
  std::printf("# %d SMs, L2 %d MB, grid 2 CTAs per SM (%d resident per SM), graph of %d calls with PDL, "
              "median us per call\n", sms, l2 >> 20, resident, kCalls);
  std::printf("%8s", "MB");
  for (const Row& r : rows) std::printf(" %14s", r.name);
  std::printf("\n");
  bool first = true;
  for (double mb : {9.4, 33.0}) {
    bf.vecs = int64_t(mb * 1e6) / 16;
    const int rot = std::max(2, int(2.0 * l2 / (mb * 1e6)) + 1);
    bf.w.assign(size_t(rot), nullptr);
    for (int i = 0; i < rot; ++i) {
      CHECK(cudaMalloc(&bf.w[size_t(i)], size_t(bf.vecs) * 16));
      fill_kernel<<<4 * sms, 256, 0, s>>>(bf.w[size_t(i)], bf.vecs, 0x1234u + i);
    }
    CHECK(cudaStreamSynchronize(s));
    if (first) {  // the in-grid rows must read exactly what the front kernel arranged
      first = false;
      const std::vector<uint32_t> ref = one_call(rows[1], bf, sms, s);
      for (int i = 2; i < 4; ++i) {
        const std::vector<uint32_t> got = one_call(rows[i], bf, sms, s);
        std::printf("# check %s: %s\n", rows[i].name,
                    got.empty() ? "could not launch" : got == ref ? "same results as front" : "DIFFERENT from front");
      }
    }
    std::printf("%8.1f", mb);
    for (const Row& r : rows) std::printf(" %14.2f", time_per_call(r, bf, sms, s));
    std::printf("\n");
    for (uint4* p : bf.w) CHECK(cudaFree(p));
  }
  unsigned int sync_after[2] = {1, 1};
  CHECK(cudaMemcpy(sync_after, bf.sync, sizeof(sync_after), cudaMemcpyDeviceToHost));
  std::printf("# counters after the runs: %u %u (0 0: every call left them zeroed)\n", sync_after[0], sync_after[1]);
  CHECK(cudaFree(bf.in));
  CHECK(cudaFree(bf.arranged));
  CHECK(cudaFree(bf.sync));
  CHECK(cudaFree(bf.out));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
