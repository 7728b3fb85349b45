// fp4kit_micro_handover: what does a one-wave weight stream pay per call, beyond its bytes, when calls
// run back to back in a CUDA graph — and how much of it is the tail of equal static ranges?
//
// The small-M GEMMs on the H200 take ~2.5 us + bytes / 4.1 TB/s per call (graph replay with PDL;
// docs/PERF.md session 19). This kernel streams like them without any compute: 2 CTAs of 8 warps per
// SM (one wave), each warp reading its part of the buffer in 2 KB groups (16 bytes x 4 per lane,
// `ld.global.nc.L1::no_allocate`), the next group requested before the current one is consumed; with
// PDL it lets the next call launch at once and loads its first group before `griddepcontrol.wait`,
// as the GEMMs do. Modes:
//   static   each warp one contiguous range of equal length (the dp GEMMs' decomposition);
//   dynamic  warps take 16 KB pieces from a per-call counter (no tail of unequal finish times; the
//            counters are cleared by a memset node in front of the graph's calls).
// For each mode, with and without PDL, the time per call of a graph of 20 calls over buffers of
// 9.4 .. 132 MB (rotated past 2x L2) and the fit t = fixed + bytes / rate.
//
// Residency. This kernel needs few registers, so up to 8 of its CTAs fit an SM: with PDL the next
// call's CTAs become resident while this call streams and have their first group in flight before
// it ends. The GEMMs' dp CTAs (~128 registers x 256 threads) fill the register file at 2 per SM, so
// the next call's CTAs land only as this call's exit. The "pin" rows reproduce that with dynamic
// shared memory that lets only 2 CTAs share an SM: 2 CTAs per SM per call (the GEMMs' shape), or 1
// CTA per SM per call (half an SM's resources: the next call's CTA fits beside it), with 2 KB or
// 4 KB groups per warp.
//
// Usage: fp4kit_micro_handover   (needs an sm_90 GPU; ~20 s)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "stream_util.cuh"

namespace {

using fp4kit::micro::fill_kernel;
using fp4kit::micro::fold;
using fp4kit::micro::load_group;
using fp4kit::micro::min64;

constexpr int kWarps = 8;                    // warps per CTA
constexpr int64_t kPieceVecs = 8 * 32 * 4;   // dynamic mode: 16 KB per piece
constexpr int kCalls = 20;
// Dynamic shared memory per CTA that lets at most 2 CTAs share an SM (228 KB, 1 KB reserved per CTA).
constexpr int kPinTwoBytes = 100 << 10;

// Streams [begin, end) in groups, one group in flight while the previous is consumed; `cur` holds
// the group at `begin`, already requested.
template <int kU>
__device__ __forceinline__ uint32_t stream_range(const uint4* src, int64_t begin, int64_t end, int lane,
                                                 uint4 (&cur)[kU]) {
  constexpr int64_t kGroupVecs = 32 * kU;
  uint32_t x = 0;
  for (int64_t g = begin; g < end; g += kGroupVecs) {
    uint4 nxt[kU];
    if (g + kGroupVecs < end) load_group(src, g + kGroupVecs, end, lane, nxt);
    x ^= fold(cur);
#pragma unroll
    for (int u = 0; u < kU; ++u) cur[u] = nxt[u];
  }
  return x;
}

template <bool kDynamic, int kU>
__global__ void __launch_bounds__(kWarps * 32, 2)
    stream_kernel(const uint4* src, int64_t vecs, unsigned int* counter, uint32_t* out) {
  constexpr int64_t kGroupVecs = 32 * kU;
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // no-op without PDL
  const int lane = threadIdx.x & 31;
  const int64_t warp = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t warps = int64_t(gridDim.x) * kWarps;
  static_assert(kPieceVecs % kGroupVecs == 0, "pieces of whole groups");
  uint32_t x = 0;
  uint4 cur[kU];
  if constexpr (!kDynamic) {
    // Equal ranges of whole groups.
    const int64_t groups = (vecs + kGroupVecs - 1) / kGroupVecs;
    const int64_t b = groups * warp / warps * kGroupVecs, e = min64(vecs, groups * (warp + 1) / warps * kGroupVecs);
    if (b < e) load_group(src, b, e, lane, cur);
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (b < e) x = stream_range(src, b, e, lane, cur);
  } else {
    int64_t piece = 0;
    if (lane == 0) piece = atomicAdd(counter, 1u);
    piece = __shfl_sync(0xffffffffu, piece, 0);
    int64_t b = piece * kPieceVecs;
    if (b < vecs) load_group(src, b, min64(vecs, b + kPieceVecs), lane, cur);
    asm volatile("griddepcontrol.wait;" ::: "memory");
    while (b < vecs) {
      x ^= stream_range(src, b, min64(vecs, b + kPieceVecs), lane, cur);
      if (lane == 0) piece = atomicAdd(counter, 1u);
      piece = __shfl_sync(0xffffffffu, piece, 0);
      b = piece * kPieceVecs;
      if (b < vecs) load_group(src, b, min64(vecs, b + kPieceVecs), lane, cur);
    }
  }
  x ^= __shfl_xor_sync(0xffffffffu, x, 16);
  if (lane == 0) out[warp] = x;
}

#define CHECK(call)                                                                             \
  do {                                                                                          \
    const cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "fp4kit_micro_handover: %s: %s\n", #call, cudaGetErrorString(e_));   \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

// One row of the table: the kernel, with or without PDL, its grid in CTAs per SM, and whether its
// residency is pinned at 2 CTAs per SM.
struct Mode {
  const char* name;
  void (*kernel)(const uint4*, int64_t, unsigned int*, uint32_t*);
  bool dynamic, pdl;
  int ctas_per_sm;
  int smem;  // dynamic shared memory per CTA (kPinTwoBytes: at most 2 CTAs per SM)
};

// Median time per call (us) of a graph of kCalls launches over the rotated buffers.
float time_per_call(const Mode& m, const std::vector<uint4*>& bufs, int64_t vecs, int sms, unsigned int* counters,
                    uint32_t* out, cudaStream_t s) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  if (m.dynamic) CHECK(cudaMemsetAsync(counters, 0, kCalls * sizeof(unsigned int), s));
  for (int c = 0; c < kCalls; ++c) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(m.ctas_per_sm * sms);
    cfg.blockDim = dim3(kWarps * 32);
    cfg.dynamicSmemBytes = size_t(m.smem);
    cfg.stream = s;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = m.pdl ? 1 : 0;
    const uint4* src = bufs[c % bufs.size()];
    CHECK(cudaLaunchKernelEx(&cfg, m.kernel, src, vecs, counters + c, out));
  }
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const float us = fp4kit::micro::graph_us_per_call(exec, kCalls, s);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return us;
}

}  // namespace

int main() {
  int dev = 0, major = 0, sms = 0, l2 = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
      major != 9) {
    std::printf("fp4kit_micro_handover: skipped (needs an sm_90 GPU)\n");
    return 0;
  }
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const Mode modes[] = {
      {"static PDL", stream_kernel<false, 4>, false, true, 2, 0},
      {"static", stream_kernel<false, 4>, false, false, 2, 0},
      {"dynamic PDL", stream_kernel<true, 4>, true, true, 2, 0},
      {"dynamic", stream_kernel<true, 4>, true, false, 2, 0},
      {"pin2 2/SM PDL", stream_kernel<false, 4>, false, true, 2, kPinTwoBytes},
      {"pin2 1/SM PDL", stream_kernel<false, 4>, false, true, 1, kPinTwoBytes},
      {"pin2 1/SM u8 PDL", stream_kernel<false, 8>, false, true, 1, kPinTwoBytes},
  };
  constexpr int kModes = sizeof(modes) / sizeof(modes[0]);
  const int max_ctas = 4 * sms;  // the largest grid of the table
  unsigned int* counters = nullptr;
  uint32_t* out = nullptr;
  CHECK(cudaMalloc(&counters, kCalls * sizeof(unsigned int)));
  CHECK(cudaMalloc(&out, size_t(max_ctas) * kWarps * sizeof(uint32_t)));
  std::printf("# %d SMs, L2 %d MB, CTAs of %d warps, graph of %d calls, median us per call (TB/s read)\n", sms,
              l2 >> 20, kWarps, kCalls);
  for (const Mode& m : modes) {
    if (m.smem > 0)
      CHECK(cudaFuncSetAttribute(m.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, m.smem));
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, m.kernel, kWarps * 32, size_t(m.smem)));
    cudaFuncAttributes fa{};
    CHECK(cudaFuncGetAttributes(&fa, m.kernel));
    std::printf("# %-18s grid %d CTAs per SM, %d registers, at most %d resident per SM\n", m.name, m.ctas_per_sm,
                fa.numRegs, resident);
  }
  const double sizes_mb[] = {9.4, 18.9, 37.7, 75.5, 132.1};
  std::vector<std::pair<double, float>> pts[kModes];
  std::printf("%8s", "MB");
  for (const Mode& m : modes) std::printf(" %18s", m.name);
  std::printf("\n");
  for (double mb : sizes_mb) {
    const int64_t vecs = int64_t(mb * 1e6) / 16;
    const int rot = std::max(2, int(2.0 * l2 / (mb * 1e6)) + 1);
    std::vector<uint4*> bufs(rot);
    for (int r = 0; r < rot; ++r) {
      CHECK(cudaMalloc(&bufs[r], size_t(vecs) * 16));
      fill_kernel<<<4 * sms, 256, 0, s>>>(bufs[r], vecs, 0x1234u + r);
    }
    CHECK(cudaStreamSynchronize(s));
    std::printf("%8.1f", mb);
    for (int i = 0; i < kModes; ++i) {
      const float t = time_per_call(modes[i], bufs, vecs, sms, counters, out, s);
      std::printf("      %6.2f (%.2f)", t, mb * 1e-6 / (t * 1e-6));
      pts[i].push_back({mb, t});
    }
    std::printf("\n");
    for (uint4* b : bufs) CHECK(cudaFree(b));
  }
  for (int i = 0; i < kModes; ++i) {
    double mx = 0, my = 0;
    for (auto& p : pts[i]) mx += p.first, my += p.second;
    mx /= pts[i].size(), my /= pts[i].size();
    double sxy = 0, sxx = 0;
    for (auto& p : pts[i]) sxy += (p.first - mx) * (p.second - my), sxx += (p.first - mx) * (p.first - mx);
    const double slope = sxy / sxx;  // us per MB
    std::printf("fit %-18s fixed %.2f us per call, rate %.3f TB/s\n", modes[i].name, my - slope * mx, 1.0 / slope);
  }
  CHECK(cudaFree(counters));
  CHECK(cudaFree(out));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
