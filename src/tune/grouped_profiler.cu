// The grouped GEMM profiler (fused_moe's FC1 / FC2) and tune_moe (docs/TUNING.md, "Grouped GEMMs
// (fused MoE)"). The grouped GEMM is timed on its own, with the arguments fused_moe passes it and
// routing metadata drawn on the host, so that FC1 and FC2 get separate measurements.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/validate.h"
#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/tune.h"
#include "gemm/grouped.h"
#include "tune/profile_common.h"
#include "tune/winner.h"

namespace fp4kit {
namespace {

using gemm_impl::GroupedGemmParams;
using tune_impl::DeviceBuffer;
using tune_impl::Stream;

// tune_moe skips a tactic whose warm-up call is this much slower than the fastest so far (and
// slower than kPruneFloorUs): it cannot win, and at large T such a call takes tens of ms.
constexpr double kTunePruneFactor = 4.0;
constexpr double kPruneFloorUs = 1000.0;

// One routing table as the grouped GEMM reads it: int32 [1 + (groups + 1) + groups] =
// num_active, offsets, active (ids with rows ascending, then zeros).
std::vector<int32_t> draw_routing(const GroupedGemmShape& s, int64_t tokens, uint64_t seed, int64_t* touched) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(s.experts));
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<int64_t> rows(static_cast<size_t>(s.groups), 0);
  // Uniform: top_k distinct experts per token by a partial Fisher-Yates shuffle (as bench moe);
  // this rank (EP rank 0) owns experts [0, groups).
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < s.top_k; ++j) {
      std::uniform_int_distribution<int64_t> pick(j, s.experts - 1);
      std::swap(ids[size_t(j)], ids[size_t(pick(rng))]);
      if (ids[size_t(j)] < s.groups) ++rows[size_t(ids[size_t(j)])];
    }
  }
  const size_t g = size_t(s.groups);
  std::vector<int32_t> meta(1 + (g + 1) + g, 0);
  int32_t* offsets = meta.data() + 1;
  int32_t* active = offsets + g + 1;
  int32_t n_active = 0;
  for (size_t e = 0; e < g; ++e) {
    offsets[e + 1] = offsets[e] + int32_t(rows[e]);
    if (rows[e] > 0) active[n_active++] = int32_t(e);
  }
  meta[0] = n_active;
  *touched = n_active;
  return meta;
}

// Weights of every group for one shape; profiles one T at a time.
// Token counts the grouped GEMMs take: tokens >= 1 and tokens * top_k < 2^31 (their max_rows), compared
// without the product, which overflows for a huge count.
Status check_tokens(int64_t tokens, int64_t top_k) {
  if (tokens <= 0 || top_k <= 0 || tokens > (detail::kGemmDimLimit - 1) / top_k)
    return Status(StatusCode::kInvalidArgument, "tune: tokens must be positive and tokens * top_k < 2^31 (tokens = " +
                                                    std::to_string(tokens) + ", top_k = " + std::to_string(top_k) + ")");
  return Status::ok();
}

class GroupedProfiler {
 public:
  Status init(const GroupedGemmShape& s, DType act_dtype, const ProfileOptions& opt) {
    s_ = s;
    act_ = act_dtype;
    opt_ = opt;
    // Arguments first, so that they are checked on any machine.
    if (s.n <= 0 || s.k <= 0 || s.k % 16 != 0 || s.groups <= 0 || s.experts < s.groups || s.top_k <= 0 ||
        s.top_k > s.experts)
      return Status(StatusCode::kInvalidArgument,
                    "tune: grouped GEMM needs n, k > 0, k a multiple of 16, 0 < groups <= experts, "
                    "0 < top_k <= experts");
    if (act_dtype != DType::kBF16 && act_dtype != DType::kFP16)
      return Status(StatusCode::kInvalidArgument, "tune: the grouped GEMM's act dtype must be bf16 or fp16");
    const DeviceInfo& dev = device_info();
    if (!dev.available) return Status(StatusCode::kNoDevice, "tune: " + dev.reason);
    l2_ = double(dev.l2_bytes > 0 ? dev.l2_bytes : (50ll << 20));
    expert_bytes_ = prepacked_weight_bytes(s.n, s.k);
    const size_t w_bytes = size_t(s.groups) * size_t(expert_bytes_);
    size_t free_mem = 0, total_mem = 0;
    TUNE_CUDA(cudaMemGetInfo(&free_mem, &total_mem), "cudaMemGetInfo");
    if (double(w_bytes) > 0.6 * double(free_mem))
      return Status(StatusCode::kBufferTooSmall, "tune: the experts' weights need " + std::to_string(w_bytes >> 20) +
                                                     " MiB, only " + std::to_string(free_mem >> 20) + " MiB free");
    TUNE_CUDA(cudaStreamCreateWithFlags(&stream_.s, cudaStreamNonBlocking), "cudaStreamCreate");
    FP4KIT_RETURN_IF_ERROR(weights_.alloc(w_bytes, "expert weights (prepacked)"));
    FP4KIT_RETURN_IF_ERROR(tune_impl::fill_prepacked(weights_.ptr, s.groups, s.n, s.k, opt.seed * 31 + 5, stream_.s));
    FP4KIT_RETURN_IF_ERROR(alpha_.alloc(size_t(s.groups) * sizeof(float), "alpha"));
    const std::vector<float> alpha(static_cast<size_t>(s.groups), 1.0f / 64.0f);
    TUNE_CUDA(cudaMemcpyAsync(alpha_.ptr, alpha.data(), alpha.size() * sizeof(float), cudaMemcpyHostToDevice, stream_.s),
              "copy alpha");
    TUNE_CUDA(cudaStreamSynchronize(stream_.s), "fill weights");
    return Status::ok();
  }

  // The grouped GEMM fused_moe runs at T tokens (pointers unset).
  GroupedGemmParams params(int64_t tokens) const {
    GroupedGemmParams p;
    p.groups = s_.groups;
    p.max_rows = tokens * s_.top_k;
    p.max_group_rows = tokens;
    p.n = s_.n;
    p.k = s_.k;
    p.a_dtype = act_;
    return p;
  }

  Status profile(int64_t tokens, const std::vector<int>& tactics, double prune_factor, std::vector<TacticTiming>* out) {
    out->clear();
    FP4KIT_RETURN_IF_ERROR(check_tokens(tokens, s_.top_k));
    GroupedGemmParams p = params(tokens);
    const int64_t rows = p.max_rows;

    // Routing tables: enough that the experts touched by one replay exceed l2_factor x L2.
    const size_t meta_ints = size_t(1 + 2 * s_.groups + 1);
    std::vector<std::vector<int32_t>> tables;
    int64_t touched = 0;
    tables.push_back(draw_routing(s_, tokens, opt_.seed * 0x9e3779b97f4a7c15ull + uint64_t(tokens), &touched));
    const double touched_bytes = std::max(1.0, double(touched) * double(expert_bytes_));
    const int sets = std::clamp(int(std::ceil(std::max(1.0, opt_.l2_factor) * l2_ / touched_bytes)) + 1, 1, 64);
    for (int i = 1; i < sets; ++i)
      tables.push_back(draw_routing(s_, tokens, opt_.seed * 0x9e3779b97f4a7c15ull + uint64_t(tokens) + uint64_t(i) * 7919,
                                    &touched));

    const size_t a_bytes = size_t(rows) * size_t(s_.k) * 2, d_bytes = size_t(rows) * size_t(s_.n) * 2;
    size_t free_mem = 0, total_mem = 0;
    TUNE_CUDA(cudaMemGetInfo(&free_mem, &total_mem), "cudaMemGetInfo");
    if (double(a_bytes + d_bytes) > 0.8 * double(free_mem))
      return Status(StatusCode::kBufferTooSmall, "tune: T = " + std::to_string(tokens) + " needs " +
                                                     std::to_string((a_bytes + d_bytes) >> 20) + " MiB, only " +
                                                     std::to_string(free_mem >> 20) + " MiB free");
    DeviceBuffer a, d, meta;
    FP4KIT_RETURN_IF_ERROR(a.alloc(a_bytes, "A (permuted activations)"));
    FP4KIT_RETURN_IF_ERROR(d.alloc(d_bytes, "D"));
    FP4KIT_RETURN_IF_ERROR(meta.alloc(size_t(sets) * meta_ints * 4, "routing metadata"));
    FP4KIT_RETURN_IF_ERROR(tune_impl::fill_half(a.ptr, rows * s_.k, act_, opt_.seed + uint64_t(tokens), stream_.s));
    for (int i = 0; i < sets; ++i)
      TUNE_CUDA(cudaMemcpyAsync(static_cast<int32_t*>(meta.ptr) + size_t(i) * meta_ints, tables[size_t(i)].data(),
                                meta_ints * 4, cudaMemcpyHostToDevice, stream_.s),
                "copy routing metadata");
    TUNE_CUDA(cudaStreamSynchronize(stream_.s), "fill inputs");
    p.a = a.ptr;
    p.b_prepacked = weights_.ptr;
    p.alpha = static_cast<const float*>(alpha_.ptr);
    p.d = d.ptr;
    auto with_table = [&](int i) {
      GroupedGemmParams q = p;
      const int32_t* m = static_cast<const int32_t*>(meta.ptr) + size_t(i % sets) * meta_ints;
      q.num_active = m;
      q.offsets = m + 1;
      q.active = m + 1 + s_.groups + 1;
      return q;
    };

    // The heuristic's tactic first: the reference for pruning.
    const int heuristic = gemm_impl::grouped_gemm_default_tactic(p);
    std::vector<size_t> order(tactics.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_partition(order.begin(), order.end(), [&](size_t i) { return tactics[i] == heuristic; });

    out->resize(tactics.size());
    DeviceBuffer ws;
    size_t ws_cap = 0;
    double fastest = -1;
    for (size_t i : order) {
      TacticTiming& t = (*out)[i];
      t.tactic = tactics[i];
      const gemm_impl::GroupedTactic* info = gemm_impl::grouped_gemm_tactic(t.tactic);
      t.name = info ? info->name : "?";
      t.us = -1;
      GroupedGemmParams q = with_table(0);
      q.tactic = t.tactic;
      Status can = gemm_impl::grouped_gemm_can_implement(q);
      std::swap(t.status, can);  // (Status is [[nodiscard]]; nvcc warns on operator= results)
      if (!t.status.is_ok()) continue;
      const size_t need = gemm_impl::grouped_gemm_workspace_bytes(q);
      if (need > ws_cap) {
        TUNE_CUDA(cudaMemGetInfo(&free_mem, &total_mem), "cudaMemGetInfo");
        if (double(need) > 0.25 * double(free_mem)) {
          Status big(StatusCode::kBufferTooSmall, "workspace of " + std::to_string(need >> 20) +
                                                      " MiB exceeds a quarter of the free memory");
          std::swap(t.status, big);
          continue;
        }
        FP4KIT_RETURN_IF_ERROR(ws.alloc(need, "workspace"));
        ws_cap = need;
      }
      auto call = [&](int c) -> Status {
        GroupedGemmParams r = with_table(c);
        r.tactic = t.tactic;
        return gemm_impl::grouped_gemm(r, ws.ptr, ws_cap, stream_.s);
      };
      const double prune_us = prune_factor > 0 && fastest > 0 ? std::max(kPruneFloorUs, prune_factor * fastest) : 0;
      double us = 0;
      Status timed = tune_impl::time_calls(call, sets, opt_, stream_.s, &us, prune_us);
      std::swap(t.status, timed);
      if (t.status.is_ok()) {
        t.us = us;
        if (fastest < 0 || us < fastest) fastest = us;
      } else if (cudaDeviceSynchronize() != cudaSuccess) {
        // A sticky error (illegal address) makes every later call fail; report it and stop.
        return Status(StatusCode::kCudaError, "tune: the CUDA context is broken after grouped tactic " +
                                                  std::to_string(t.tactic) + ": " + t.status.to_string());
      }
    }
    return Status::ok();
  }

 private:
  GroupedGemmShape s_;
  DType act_ = DType::kBF16;
  ProfileOptions opt_;
  double l2_ = 0;
  int64_t expert_bytes_ = 0;
  Stream stream_;
  DeviceBuffer weights_, alpha_;
};

std::vector<int> all_grouped_tactics() {
  std::vector<int> ids(static_cast<size_t>(gemm_impl::grouped_gemm_tactic_count()));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

}  // namespace

Status profile_grouped_gemm(const GroupedGemmShape& s, DType act_dtype, int64_t tokens, const std::vector<int>& tactics,
                            const ProfileOptions& opt, std::vector<TacticTiming>* out, double prune_factor) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "profile_grouped_gemm: out is null");
  out->clear();
  GroupedProfiler prof;
  FP4KIT_RETURN_IF_ERROR(prof.init(s, act_dtype, opt));
  return prof.profile(tokens, tactics.empty() ? all_grouped_tactics() : tactics, prune_factor, out);
}

Status tune_moe(const std::vector<MoeTuneLayer>& layers, const std::vector<int64_t>& tokens, const TuneOptions& opt,
                TuneCache* cache, std::vector<TuneResult>* results,
                const std::function<void(const TuneResult&, int index, int total)>& progress) {
  if (results) results->clear();
  for (const MoeTuneLayer& l : layers) {
    constexpr int64_t kMax = detail::kGemmDimLimit;  // fused_moe's limits: the GEMMs' n, k and int32 expert ids
    if (l.hidden <= 0 || l.inter <= 0 || l.hidden % 64 != 0 || l.inter % 64 != 0 || l.experts <= 0 ||
        l.top_k <= 0 || l.top_k > l.experts || l.ep_size <= 0 || l.experts % l.ep_size != 0 ||
        l.hidden >= kMax || l.inter >= kMax / 2 || l.experts >= kMax)
      return Status(StatusCode::kInvalidArgument,
                    "tune: MoE layer '" + l.name +
                        "' needs H and I multiples of 64 (H, 2 I < 2^31), 0 < top_k <= E < 2^31 and E a multiple "
                        "of ep_size");
  }
  for (const MoeTuneLayer& l : layers)
    for (int64_t t : tokens) FP4KIT_RETURN_IF_ERROR(check_tokens(t, l.top_k));
  const bool w4a4 = opt.a_dtype == DType::kE2M1x2;
  const DType act = w4a4 ? opt.d_dtype : opt.a_dtype;
  if (act != DType::kBF16 && act != DType::kFP16)
    return Status(StatusCode::kInvalidArgument, "tune: the MoE act dtype must be bf16 or fp16");
  const DeviceInfo& dev = device_info();
  if (!dev.available) return Status(StatusCode::kNoDevice, "tune: no GPU (" + dev.reason + ")");
  std::vector<int64_t> buckets;
  for (int64_t t : tokens) buckets.push_back(tune_m_bucket(t));
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  const int total = int(layers.size() * 2 * buckets.size());
  int index = 0;
  for (const MoeTuneLayer& l : layers) {
    for (int fc = 1; fc <= 2; ++fc) {
      const GroupedGemmShape s = fc == 1 ? moe_fc1_shape(l) : moe_fc2_shape(l);
      GroupedProfiler prof;
      FP4KIT_RETURN_IF_ERROR(prof.init(s, act, opt.profile));
      for (int64_t t : buckets) {
        TuneResult r;
        r.key = grouped_gemm_tune_key(s, opt.a_dtype, act, t);
        r.label = l.name + (fc == 1 ? " fc1" : " fc2");
        r.heuristic_tactic = gemm_impl::grouped_gemm_default_tactic(prof.params(t));
        std::vector<int> tactics = opt.tactics.empty() ? all_grouped_tactics() : opt.tactics;
        if (std::find(tactics.begin(), tactics.end(), r.heuristic_tactic) == tactics.end())
          tactics.push_back(r.heuristic_tactic);
        FP4KIT_RETURN_IF_ERROR(prof.profile(t, tactics, kTunePruneFactor, &r.timings));
        tune_impl::finish_point(std::move(r), cache, progress, index++, total, results);
      }
    }
    if (cache) FP4KIT_RETURN_IF_ERROR(cache->save());  // per layer: an interrupted run keeps its results
  }
  return Status::ok();
}

}  // namespace fp4kit
