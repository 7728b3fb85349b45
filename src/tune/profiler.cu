// The GEMM profiler of the autotuner (docs/TUNING.md): random inputs rotated beyond 2x L2, warm-up,
// CUDA-graph replay of a batch of calls timed by events, median over replays. A tactic that cannot
// implement the problem or fails is recorded and skipped.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/tune.h"
#include "gemm/tactics.h"
#include "tune/profile_common.h"
#include "tune/winner.h"

namespace fp4kit {
namespace {

using tune_impl::DeviceBuffer;
using tune_impl::Stream;

// One input set per rotation slot.
struct InputSet {
  DeviceBuffer a, a_scales, b, d;
};

// Times calls of one tactic (call i uses set i % sets).
Status time_tactic(const std::vector<GemmParams>& sets, int tactic, void* ws, size_t ws_bytes,
                   const ProfileOptions& opt, cudaStream_t stream, double* us) {
  auto call = [&](int i) -> Status {
    GemmParams p = sets[size_t(i) % sets.size()];
    p.tactic = tactic;
    return gemm(p, ws, ws_bytes, stream);
  };
  return tune_impl::time_calls(call, int(sets.size()), opt, stream, us);
}

}  // namespace

// The shapes the GEMM takes (gemm_dims_ok), checked before anything is sized or picked: the heuristic
// and the buffer sizes below assume them.
static Status check_tune_shape(int64_t m, int64_t n, int64_t k) {
  if (!gemm_impl::gemm_dims_ok(m, n, k))
    return Status(StatusCode::kInvalidArgument, "tune: m, n, k must be in [1, 2^31) and k a multiple of 16 (m = " +
                                                    std::to_string(m) + ", n = " + std::to_string(n) +
                                                    ", k = " + std::to_string(k) + ")");
  return Status::ok();
}

Status profile_gemm(const GemmParams& shape, const std::vector<int>& tactics_in, const ProfileOptions& opt,
                    std::vector<TacticTiming>* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "profile_gemm: out is null");
  out->clear();
  FP4KIT_RETURN_IF_ERROR(check_tune_shape(shape.m, shape.n, shape.k));
  const DeviceInfo& dev = device_info();
  if (!dev.available) return Status(StatusCode::kNoDevice, "tune: " + dev.reason);
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
  for (int i = 0; i < sets; ++i) {
    InputSet& s = bufs[size_t(i)];
    const uint64_t seed = opt.seed * 0x9e3779b97f4a7c15ull + uint64_t(i) * 7919;
    FP4KIT_RETURN_IF_ERROR(s.a.alloc(a_bytes, "A"));
    FP4KIT_RETURN_IF_ERROR(s.b.alloc(b_bytes, "B (prepacked)"));
    FP4KIT_RETURN_IF_ERROR(s.d.alloc(d_bytes, "D"));
    if (w4a4) {
      FP4KIT_RETURN_IF_ERROR(s.a_scales.alloc(a_sf_bytes, "A scales"));
      FP4KIT_RETURN_IF_ERROR(tune_impl::fill_bytes(s.a.ptr, int64_t(a_bytes), seed + 1, 0, 255, stream.s));
      FP4KIT_RETURN_IF_ERROR(tune_impl::fill_bytes(s.a_scales.ptr, int64_t(a_sf_bytes), seed + 2, 0x30, 0x40, stream.s));
    } else {
      FP4KIT_RETURN_IF_ERROR(tune_impl::fill_half(s.a.ptr, m * k, shape.a_dtype, seed + 1, stream.s));
    }
    FP4KIT_RETURN_IF_ERROR(tune_impl::fill_prepacked(s.b.ptr, 1, n, k, seed + 3, stream.s));
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
  for (const GemmShape& s : shapes)
    for (int64_t m : ms) FP4KIT_RETURN_IF_ERROR(check_tune_shape(m, s.n, s.k));
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
      r.heuristic_tactic = gemm_impl::heuristic_tactic(p, dev.sm_count, gemm_impl::device_hbm_rich());
      std::vector<int> tactics = opt.tactics;
      if (!tactics.empty() && std::find(tactics.begin(), tactics.end(), r.heuristic_tactic) == tactics.end())
        tactics.push_back(r.heuristic_tactic);
      FP4KIT_RETURN_IF_ERROR(profile_gemm(p, tactics, opt.profile, &r.timings));
      tune_impl::finish_point(std::move(r), cache, progress, index++, total, results);
    }
    if (cache) FP4KIT_RETURN_IF_ERROR(cache->save());  // per shape: an interrupted run keeps its results
  }
  return Status::ok();
}

}  // namespace fp4kit
