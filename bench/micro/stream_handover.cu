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
// Usage: fp4kit_micro_handover   (needs an sm_90 GPU; ~10 s)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kWarps = 8, kU = 4;            // warps per CTA; 16-byte loads per lane and group
constexpr int64_t kGroupVecs = 32 * kU;      // 16-byte vectors per warp group (2 KB)
constexpr int64_t kPieceVecs = 8 * kGroupVecs;  // dynamic mode: 16 KB per piece
constexpr int kCalls = 20;

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

__device__ __forceinline__ uint4 load_nc(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Loads the group at vector `g` (lanes interleaved: one 512-byte transaction per load); vectors at
// or past `end` are not read.
__device__ __forceinline__ void load_group(const uint4* src, int64_t g, int64_t end, int lane, uint4 (&v)[kU]) {
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int64_t i = g + u * 32 + lane;
    v[u] = i < end ? load_nc(src + i) : make_uint4(0, 0, 0, 0);
  }
}

__device__ __forceinline__ uint32_t fold(const uint4 (&v)[kU]) {
  uint32_t x = 0;
#pragma unroll
  for (int u = 0; u < kU; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  return x;
}

// Streams [begin, end) in groups, one group in flight while the previous is consumed; `cur` holds
// the group at `begin`, already requested.
__device__ __forceinline__ uint32_t stream_range(const uint4* src, int64_t begin, int64_t end, int lane,
                                                 uint4 (&cur)[kU]) {
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

template <bool kDynamic>
__global__ void __launch_bounds__(kWarps * 32, 2)
    stream_kernel(const uint4* src, int64_t vecs, unsigned int* counter, uint32_t* out) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // no-op without PDL
  const int lane = threadIdx.x & 31;
  const int64_t warp = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t warps = int64_t(gridDim.x) * kWarps;
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

// Median time per call (us) of a graph of kCalls launches over the rotated buffers.
template <bool kDynamic>
float time_per_call(const std::vector<uint4*>& bufs, int64_t vecs, bool pdl, int grid, unsigned int* counters,
                    uint32_t* out, cudaStream_t s) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  if (kDynamic) CHECK(cudaMemsetAsync(counters, 0, kCalls * sizeof(unsigned int), s));
  for (int c = 0; c < kCalls; ++c) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kWarps * 32);
    cfg.stream = s;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    const uint4* src = bufs[c % bufs.size()];
    CHECK(cudaLaunchKernelEx(&cfg, stream_kernel<kDynamic>, src, vecs, counters + c, out));
  }
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s));  // warm-up
  CHECK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < 25; ++r) {
    CHECK(cudaEventRecord(e0, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1e3f / kCalls);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return t[t.size() / 2];
}

__global__ void fill_kernel(uint4* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    p[i] = make_uint4(h, h * 3u + 1u, h ^ 0x5bd1e995u, h + seed);
  }
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
  const int grid = 2 * sms;
  unsigned int* counters = nullptr;
  uint32_t* out = nullptr;
  CHECK(cudaMalloc(&counters, kCalls * sizeof(unsigned int)));
  CHECK(cudaMalloc(&out, size_t(grid) * kWarps * sizeof(uint32_t)));
  const double sizes_mb[] = {9.4, 18.9, 37.7, 75.5, 132.1};
  const char* names[] = {"static, PDL", "static, no PDL", "dynamic, PDL", "dynamic, no PDL"};
  std::vector<std::pair<double, float>> pts[4];
  std::printf("# %d SMs, L2 %d MB, grid %d CTAs x %d warps, graph of %d calls, median per call (us)\n", sms,
              l2 >> 20, grid, kWarps, kCalls);
  std::printf("%8s %14s %14s %14s %14s\n", "MB", names[0], names[1], names[2], names[3]);
  for (double mb : sizes_mb) {
    const int64_t vecs = int64_t(mb * 1e6) / 16;
    const int rot = std::max(2, int(2.0 * l2 / (mb * 1e6)) + 1);
    std::vector<uint4*> bufs(rot);
    for (int r = 0; r < rot; ++r) {
      CHECK(cudaMalloc(&bufs[r], size_t(vecs) * 16));
      fill_kernel<<<4 * sms, 256, 0, s>>>(bufs[r], vecs, 0x1234u + r);
    }
    CHECK(cudaStreamSynchronize(s));
    const float t[4] = {time_per_call<false>(bufs, vecs, true, grid, counters, out, s),
                        time_per_call<false>(bufs, vecs, false, grid, counters, out, s),
                        time_per_call<true>(bufs, vecs, true, grid, counters, out, s),
                        time_per_call<true>(bufs, vecs, false, grid, counters, out, s)};
    std::printf("%8.1f", mb);
    for (int i = 0; i < 4; ++i) {
      std::printf(" %8.2f (%.2f)", t[i], mb * 1e-6 / (t[i] * 1e-6));  // (TB/s read)
      pts[i].push_back({mb, t[i]});
    }
    std::printf("\n");
    for (uint4* b : bufs) CHECK(cudaFree(b));
  }
  for (int i = 0; i < 4; ++i) {
    double mx = 0, my = 0;
    for (auto& p : pts[i]) mx += p.first, my += p.second;
    mx /= pts[i].size(), my /= pts[i].size();
    double sxy = 0, sxx = 0;
    for (auto& p : pts[i]) sxy += (p.first - mx) * (p.second - my), sxx += (p.first - mx) * (p.first - mx);
    const double slope = sxy / sxx;  // us per MB
    std::printf("fit %-16s fixed %.2f us per call, rate %.3f TB/s\n", names[i], my - slope * mx, 1.0 / slope);
  }
  CHECK(cudaFree(counters));
  CHECK(cudaFree(out));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
