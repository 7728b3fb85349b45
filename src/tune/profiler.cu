// The GEMM profiler of the autotuner (docs/TUNING.md): random inputs rotated beyond 2x L2, warm-up,
// CUDA-graph replay of a batch of calls timed by events, median over replays. A tactic that cannot
// implement the problem or fails is recorded and skipped.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/tune.h"
#include "gemm/prepacked_layout.h"
#include "gemm/tactics.h"

namespace fp4kit {
namespace {

// tune_gemm keeps the heuristic's tactic unless another is faster by more than this fraction.
constexpr double kTuneTieMargin = 0.015;

Status cuda_status(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(StatusCode::kCudaError, "tune: " + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
#define TUNE_CUDA(expr, what) FP4KIT_RETURN_IF_ERROR(cuda_status((expr), (what)))

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Bytes uniformly in [lo, hi].
__global__ void fill_bytes_kernel(uint8_t* p, int64_t n, uint64_t seed, int lo, int hi) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = uint8_t(lo + int(mix64(seed ^ uint64_t(i) * 0x100000001b3ull) % uint64_t(hi - lo + 1)));
}

// 16-bit floats uniform in [-1, 1).
template <class T>
__global__ void fill_half_kernel(T* p, int64_t n, uint64_t seed) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float u = float(mix64(seed ^ uint64_t(i) * 0x100000001b3ull) >> 40) * (1.0f / 16777216.0f);
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
      p[i] = __float2bfloat16(2.0f * u - 1.0f);
    else
      p[i] = __float2half(2.0f * u - 1.0f);
  }
}

__global__ void delay_kernel(unsigned long long ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) break;
    __nanosleep(1000);
  }
}

Status fill_bytes(void* p, int64_t n, uint64_t seed, int lo, int hi, cudaStream_t s) {
  if (n <= 0) return Status::ok();
  fill_bytes_kernel<<<1024, 256, 0, s>>>(static_cast<uint8_t*>(p), n, seed, lo, hi);
  return cuda_status(cudaGetLastError(), "fill kernel");
}

struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  Status alloc(size_t bytes, const char* what) {
    return cuda_status(cudaMalloc(&ptr, std::max<size_t>(bytes, 16)), std::string("cudaMalloc ") + what + " (" +
                                                                           std::to_string(bytes) + " bytes)");
  }
};

struct Stream {
  cudaStream_t s = nullptr;
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

struct Events {
  std::vector<cudaEvent_t> ev;
  ~Events() {
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
  }
  Status create(size_t n) {
    ev.assign(n, nullptr);
    for (auto& e : ev) TUNE_CUDA(cudaEventCreate(&e), "cudaEventCreate");
    return Status::ok();
  }
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// One input set per rotation slot.
struct InputSet {
  DeviceBuffer a, a_scales, b, d;
};

// Times `calls` (call i uses set i % sets) for one tactic.
Status time_tactic(const std::vector<GemmParams>& sets, int tactic, void* ws, size_t ws_bytes,
                   const ProfileOptions& opt, cudaStream_t stream, double* us) {
  int call = 0;
  auto one = [&]() -> Status {
    GemmParams p = sets[size_t(call++) % sets.size()];
    p.tactic = tactic;
    return gemm(p, ws, ws_bytes, stream);
  };
  for (int i = 0; i < std::max(1, opt.warmup); ++i) FP4KIT_RETURN_IF_ERROR(one());
  TUNE_CUDA(cudaStreamSynchronize(stream), "warm-up");

  // Every input set is used once per replay, so each replay's working set exceeds the L2 target.
  const int batch = std::max({1, opt.graph_batch, int(sets.size())});
  cudaGraph_t graph = nullptr;
  TUNE_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  const Status cs = [&]() -> Status {
    for (int i = 0; i < batch; ++i) FP4KIT_RETURN_IF_ERROR(one());
    return Status::ok();
  }();
  const cudaError_t ec = cudaStreamEndCapture(stream, &graph);
  if (!cs.is_ok()) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return cs;
  }
  TUNE_CUDA(ec, "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ei = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  TUNE_CUDA(ei, "cudaGraphInstantiate");
  const int reps = std::max(1, opt.repeats);
  std::vector<double> per_call;
  const Status rs = [&]() -> Status {
    Events e;
    FP4KIT_RETURN_IF_ERROR(e.create(size_t(reps) + 1));
    TUNE_CUDA(cudaGraphLaunch(exec, stream), "cudaGraphLaunch (warm-up)");
    delay_kernel<<<1, 1, 0, stream>>>(200000ull);  // queue every replay before the first runs
    TUNE_CUDA(cudaGetLastError(), "delay kernel");
    for (int i = 0; i < reps; ++i) {
      TUNE_CUDA(cudaEventRecord(e.ev[size_t(i)], stream), "cudaEventRecord");
      TUNE_CUDA(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    }
    TUNE_CUDA(cudaEventRecord(e.ev[size_t(reps)], stream), "cudaEventRecord");
    TUNE_CUDA(cudaStreamSynchronize(stream), "graph replays");
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      TUNE_CUDA(cudaEventElapsedTime(&ms, e.ev[size_t(i)], e.ev[size_t(i) + 1]), "cudaEventElapsedTime");
      per_call.push_back(1000.0 * ms / batch);
    }
    return Status::ok();
  }();
  cudaGraphExecDestroy(exec);
  FP4KIT_RETURN_IF_ERROR(rs);
  *us = median_of(per_call);
  return Status::ok();
}

}  // namespace

Status profile_gemm(const GemmParams& shape, const std::vector<int>& tactics_in, const ProfileOptions& opt,
                    std::vector<TacticTiming>* out) {
  out->clear();
  const DeviceInfo& dev = device_info();
  if (!dev.available) return Status(StatusCode::kNoDevice, "tune: " + dev.reason);
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.k % 16 != 0)
    return Status(StatusCode::kInvalidArgument, "tune: m, n, k must be positive and k a multiple of 16");
  std::vector<int> tactics = tactics_in;
  if (tactics.empty())
    for (const GemmTacticInfo& t : gemm_tactics()) tactics.push_back(t.id);

  const bool w4a4 = shape.a_dtype == DType::kE2M1x2;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const size_t a_bytes = size_t(m) * size_t(k) / (w4a4 ? 2 : 1) * (w4a4 ? 1 : 2);
  const size_t a_sf_bytes = w4a4 ? size_t((m + 127) / 128 * 128) * size_t((k / 16 + 3) / 4 * 4) : 0;
  const size_t b_bytes = size_t(prepacked_weight_bytes(n, k));
  const size_t d_bytes = size_t(m) * size_t(n) * 2;
  const size_t set_bytes = a_bytes + a_sf_bytes + b_bytes + d_bytes;

  size_t free_mem = 0, total_mem = 0;
  TUNE_CUDA(cudaMemGetInfo(&free_mem, &total_mem), "cudaMemGetInfo");
  const double l2 = double(dev.l2_bytes > 0 ? dev.l2_bytes : (50ll << 20));
  int sets = int(std::ceil(std::max(1.0, opt.l2_factor) * l2 / double(set_bytes))) + 1;
  sets = std::clamp(sets, 1, 64);
  while (sets > 1 && double(sets) * double(set_bytes) > 0.5 * double(free_mem)) --sets;
  if (double(set_bytes) > 0.8 * double(free_mem))
    return Status(StatusCode::kBufferTooSmall, "tune: problem needs " + std::to_string(set_bytes >> 20) +
                                                    " MiB, only " + std::to_string(free_mem >> 20) + " MiB free");

  Stream stream;
  TUNE_CUDA(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking), "cudaStreamCreate");
  DeviceBuffer alpha;
  FP4KIT_RETURN_IF_ERROR(alpha.alloc(sizeof(float), "alpha"));
  const float one = 1.0f / 64.0f;
  TUNE_CUDA(cudaMemcpy(alpha.ptr, &one, sizeof(float), cudaMemcpyHostToDevice), "copy alpha");

  std::vector<InputSet> bufs(static_cast<size_t>(sets));
  std::vector<GemmParams> params;
  const gemm_impl::PrepackedShape ps = gemm_impl::prepacked_shape(n, k);
  for (int i = 0; i < sets; ++i) {
    InputSet& s = bufs[size_t(i)];
    const uint64_t seed = opt.seed * 0x9e3779b97f4a7c15ull + uint64_t(i) * 7919;
    FP4KIT_RETURN_IF_ERROR(s.a.alloc(a_bytes, "A"));
    FP4KIT_RETURN_IF_ERROR(s.b.alloc(b_bytes, "B (prepacked)"));
    FP4KIT_RETURN_IF_ERROR(s.d.alloc(d_bytes, "D"));
    if (w4a4) {
      FP4KIT_RETURN_IF_ERROR(s.a_scales.alloc(a_sf_bytes, "A scales"));
      FP4KIT_RETURN_IF_ERROR(fill_bytes(s.a.ptr, int64_t(a_bytes), seed + 1, 0, 255, stream.s));
      FP4KIT_RETURN_IF_ERROR(fill_bytes(s.a_scales.ptr, int64_t(a_sf_bytes), seed + 2, 0x30, 0x40, stream.s));
    } else {
      const int64_t count = m * k;
      if (shape.a_dtype == DType::kFP16)
        fill_half_kernel<<<1024, 256, 0, stream.s>>>(static_cast<__half*>(s.a.ptr), count, seed + 1);
      else
        fill_half_kernel<<<1024, 256, 0, stream.s>>>(static_cast<__nv_bfloat16*>(s.a.ptr), count, seed + 1);
      TUNE_CUDA(cudaGetLastError(), "fill A");
    }
    // Prepacked weights: codes are any bytes; the scale region must hold valid encoded scales
    // (0x98..0xB8 = 0.125..2.0, src/gemm/prepacked_layout.h).
    FP4KIT_RETURN_IF_ERROR(fill_bytes(s.b.ptr, ps.code_bytes(), seed + 3, 0, 255, stream.s));
    FP4KIT_RETURN_IF_ERROR(fill_bytes(static_cast<uint8_t*>(s.b.ptr) + ps.code_bytes(),
                                      int64_t(b_bytes) - ps.code_bytes(), seed + 4, 0x98, 0xB8, stream.s));
    GemmParams p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.a_dtype = shape.a_dtype;
    p.d_dtype = w4a4 ? shape.d_dtype : shape.a_dtype;
    p.a = s.a.ptr;
    p.a_scales = static_cast<const uint8_t*>(s.a_scales.ptr);
    p.b_prepacked = s.b.ptr;
    p.b_prepacked_bytes = int64_t(b_bytes);
    p.alpha = static_cast<const float*>(alpha.ptr);
    p.d = s.d.ptr;
    params.push_back(p);
  }
  TUNE_CUDA(cudaStreamSynchronize(stream.s), "fill inputs");

  size_t ws_bytes = 0;
  for (int id : tactics) {
    GemmParams p = params[0];
    p.tactic = id;
    if (gemm_tactic_can_implement(id, p).is_ok()) ws_bytes = std::max(ws_bytes, gemm_workspace_bytes(p));
  }
  DeviceBuffer ws;
  if (ws_bytes > 0) FP4KIT_RETURN_IF_ERROR(ws.alloc(ws_bytes, "workspace"));

  const auto table = gemm_tactics();
  for (int id : tactics) {
    TacticTiming t;
    t.tactic = id;
    t.name = (id >= 0 && id < int(table.size())) ? table[size_t(id)].name : "?";
    t.us = -1;
    GemmParams p = params[0];
    p.tactic = id;
    Status can = gemm_tactic_can_implement(id, p);
    std::swap(t.status, can);  // (Status is [[nodiscard]]; nvcc warns on operator= results)
    if (t.status.is_ok()) {
      double us = 0;
      Status timed = time_tactic(params, id, ws.ptr, ws_bytes, opt, stream.s, &us);
      std::swap(t.status, timed);
      if (t.status.is_ok()) t.us = us;
      // A sticky error (illegal address) makes every later call fail; report it and stop.
      if (!t.status.is_ok() && cudaDeviceSynchronize() != cudaSuccess) {
        out->push_back(std::move(t));
        return Status(StatusCode::kCudaError, "tune: the CUDA context is broken after tactic " + std::to_string(id) +
                                                  ": " + out->back().status.to_string());
      }
    }
    out->push_back(std::move(t));
  }
  return Status::ok();
}

Status tune_gemm(const std::vector<GemmShape>& shapes, const std::vector<int64_t>& ms, const TuneOptions& opt,
                 TuneCache* cache, std::vector<TuneResult>* results,
                 const std::function<void(const TuneResult&, int index, int total)>& progress) {
  if (results) results->clear();
  const DeviceInfo& dev = device_info();
  if (!dev.available) return Status(StatusCode::kNoDevice, "tune: no GPU (" + dev.reason + ")");
  std::vector<int64_t> buckets;
  for (int64_t m : ms) buckets.push_back(tune_m_bucket(m));
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  const bool w4a4 = opt.a_dtype == DType::kE2M1x2;
  const DType d_dtype = w4a4 ? opt.d_dtype : opt.a_dtype;
  const int total = int(shapes.size() * buckets.size());
  int index = 0;
  for (const GemmShape& s : shapes) {
    for (int64_t b : buckets) {
      GemmParams p;
      p.m = b;
      p.n = s.n;
      p.k = s.k;
      p.a_dtype = opt.a_dtype;
      p.d_dtype = d_dtype;
      TuneResult r;
      r.key = TuneKey{"gemm", opt.a_dtype, d_dtype, s.n, s.k, b};
      r.heuristic_tactic = gemm_impl::heuristic_tactic(p, dev.sm_count);
      std::vector<int> tactics = opt.tactics;
      if (!tactics.empty() && std::find(tactics.begin(), tactics.end(), r.heuristic_tactic) == tactics.end())
        tactics.push_back(r.heuristic_tactic);
      FP4KIT_RETURN_IF_ERROR(profile_gemm(p, tactics, opt.profile, &r.timings));
      for (const TacticTiming& t : r.timings) {
        if (t.us >= 0 && (r.best_tactic < 0 || t.us < r.best_us)) {
          r.best_tactic = t.tactic;
          r.best_name = t.name;
          r.best_us = t.us;
        }
        if (t.tactic == r.heuristic_tactic) r.heuristic_us = t.us;
      }
      // A near-tie is not evidence: timings of equally fast tactics swap from run to run (and
      // between graph replay here and eager calls elsewhere). Keep the heuristic's tactic unless
      // another one beats it by more than kTuneTieMargin.
      if (r.heuristic_us >= 0 && r.best_tactic != r.heuristic_tactic &&
          r.best_us * (1.0 + kTuneTieMargin) >= r.heuristic_us) {
        r.best_tactic = r.heuristic_tactic;
        r.best_us = r.heuristic_us;
        for (const TacticTiming& t : r.timings)
          if (t.tactic == r.heuristic_tactic) r.best_name = t.name;
      }
      if (cache && r.best_tactic >= 0) {
        TuneEntry e;
        e.key = r.key;
        e.tactic = r.best_tactic;
        e.tactic_name = r.best_name;
        e.us = r.best_us;
        cache->insert(std::move(e));
      }
      if (progress) progress(r, index, total);
      ++index;
      if (results) results->push_back(std::move(r));
    }
    if (cache) FP4KIT_RETURN_IF_ERROR(cache->save());  // per shape: an interrupted run keeps its results
  }
  return Status::ok();
}

}  // namespace fp4kit
