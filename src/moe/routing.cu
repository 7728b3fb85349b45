// moe_route: top-k expert selection from router logits on the GPU (fp4kit/moe.h).
//
// One warp per token, four tokens per 128-thread block. The token's E <= 512 values live in
// per-warp shared memory; each of the k <= 16 selections is one warp-wide argmax over a 64-bit key
// (the value's total-order bits above the complemented expert id), so ties go to the lower expert
// id and the result does not depend on the reduction order. Numerics, identical for every token:
//
//   kSoftmaxTopK  x_i = logit; m = max_i x_i; e_i = expf(x_i - m); s = (float) Σ_i (double) e_i;
//                 p_i = e_i / s; top-k of p; w_j = p_j, or p_j / (float) Σ_j (double) p_j if
//                 renormalize.
//   kTopKSoftmax  top-k of x; m = x of the first pick; e_j = expf(x_j - m);
//                 w_j = e_j / (float) Σ_j (double) e_j.
//   kDeepSeekV3   s_i = 1 / (1 + expf(-x_i)); b_i = s_i + bias_i; group score = the sum of the two
//                 largest b_i of the group (b_i itself for groups of one); the topk_group best
//                 groups are kept (ties: lower group); top-k of b among their experts;
//                 w_j = s_j, divided by (float) Σ_j (double) s_j if renormalize, times
//                 routed_scaling_factor.
//
// Picks are written in selection order (descending p, x or b; for kDeepSeekV3 that is the biased
// score). The double sums are butterfly reductions (fixed order); every FP32 operation is IEEE
// round-to-nearest (expf is CUDA's accurate expf, within 2 ulp of the true value).
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/moe.h"
#include "moe/moe_device.cuh"
#include "moe/moe_kernels.h"

namespace fp4kit {
namespace moe_impl {
namespace {

constexpr int kRouteWarps = 4;

struct RouteArgs {
  const void* logits;
  bool logits_bf16;
  const float* bias;
  int tokens, experts, top_k;
  int method;  // MoeRoutingMethod
  int n_group, topk_group;
  float scaling;
  bool renormalize;
  int32_t* ids;
  float* weights;
};

// Total-order key of v (larger is better), with ties toward the lower id; NaN ranks below -Inf,
// -0 equals +0. 0 is never a valid key (it marks "no candidate").
__device__ __forceinline__ unsigned long long topk_key(float v, int id) {
  uint32_t u;
  if (v != v) {
    u = 1u;
  } else {
    const uint32_t b = __float_as_uint(v == 0.0f ? 0.0f : v);
    u = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  }
  return (static_cast<unsigned long long>(u) << 32) | (0xffffffffu - static_cast<uint32_t>(id));
}

// The best candidate of vals[0, n) (excluded[i] != 0 skipped), or -1 if there is none.
// Every lane returns the same id.
__device__ __forceinline__ int warp_argmax(const float* vals, const uint8_t* excluded, int n, int lane) {
  unsigned long long best = 0;
  for (int i = lane; i < n; i += 32) {
    if (!excluded[i]) {
      const unsigned long long k = topk_key(vals[i], i);
      best = k > best ? k : best;
    }
  }
  best = warp_max_u64(best);
  return best ? static_cast<int>(0xffffffffu - static_cast<uint32_t>(best)) : -1;
}

__device__ __forceinline__ float sigmoid(float x) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }

__global__ void __launch_bounds__(kRouteWarps * 32) route_kernel(RouteArgs a) {
  __shared__ float sel_s[kRouteWarps][kMaxRouteExperts];   // selection value
  __shared__ float src_s[kRouteWarps][kMaxRouteExperts];   // weight source
  __shared__ uint8_t excl_s[kRouteWarps][kMaxRouteExperts];
  __shared__ float gscore_s[kRouteWarps][kMaxRouteExperts];
  __shared__ uint8_t gtaken_s[kRouteWarps][kMaxRouteExperts];

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t t = int64_t(blockIdx.x) * kRouteWarps + warp;
  if (t >= a.tokens) return;  // warp-uniform; the kernel has no block-wide barrier
  float* sel = sel_s[warp];
  float* src = src_s[warp];
  uint8_t* excl = excl_s[warp];
  const int E = a.experts;

  auto logit = [&](int i) -> float {
    if (a.logits_bf16) {
      const uint16_t b = static_cast<const uint16_t*>(a.logits)[t * E + i];
      return __uint_as_float(uint32_t(b) << 16);
    }
    return static_cast<const float*>(a.logits)[t * E + i];
  };

  if (a.method == int(MoeRoutingMethod::kSoftmaxTopK)) {
    float m = -INFINITY;
    for (int i = lane; i < E; i += 32) {
      const float x = logit(i);
      sel[i] = x;
      m = fmaxf(m, x);
    }
    m = warp_max_f32(m);
    double part = 0.0;
    for (int i = lane; i < E; i += 32) {
      const float e = expf(__fsub_rn(sel[i], m));
      src[i] = e;
      part += double(e);
    }
    const float s = float(warp_sum_f64(part));
    for (int i = lane; i < E; i += 32) {
      const float p = __fdiv_rn(src[i], s);
      sel[i] = p;
      src[i] = p;
      excl[i] = 0;
    }
  } else if (a.method == int(MoeRoutingMethod::kTopKSoftmax)) {
    for (int i = lane; i < E; i += 32) {
      const float x = logit(i);
      sel[i] = x;
      src[i] = x;
      excl[i] = 0;
    }
  } else {  // kDeepSeekV3
    for (int i = lane; i < E; i += 32) {
      const float s = sigmoid(logit(i));
      src[i] = s;
      sel[i] = __fadd_rn(s, a.bias[i]);
      excl[i] = 0;
    }
    __syncwarp();
    if (a.topk_group < a.n_group) {
      const int gsize = E / a.n_group;
      float* gscore = gscore_s[warp];
      uint8_t* gtaken = gtaken_s[warp];
      for (int g = lane; g < a.n_group; g += 32) {
        float t1 = -INFINITY, t2 = -INFINITY;
        for (int i = g * gsize; i < (g + 1) * gsize; ++i) {
          const float v = sel[i];
          if (v > t1) {
            t2 = t1;
            t1 = v;
          } else if (v > t2) {
            t2 = v;
          }
        }
        gscore[g] = gsize == 1 ? t1 : __fadd_rn(t1, t2);
        gtaken[g] = 0;
      }
      __syncwarp();
      for (int r = 0; r < a.topk_group; ++r) {
        const int g = warp_argmax(gscore, gtaken, a.n_group, lane);
        if (lane == 0 && g >= 0) gtaken[g] = 1;
        __syncwarp();
      }
      for (int i = lane; i < E; i += 32) excl[i] = gtaken[i / gsize] ? 0 : 1;
    }
  }
  __syncwarp();

  int my_id = -1;
  for (int j = 0; j < a.top_k; ++j) {
    const int id = warp_argmax(sel, excl, E, lane);
    if (lane == 0 && id >= 0) excl[id] = 1;
    __syncwarp();
    if (lane == j) my_id = id;
  }

  const bool mine = lane < a.top_k;
  float v = (mine && my_id >= 0) ? src[my_id] : 0.0f;
  float w;
  if (a.method == int(MoeRoutingMethod::kTopKSoftmax)) {
    const float m = __shfl_sync(kFullMask, v, 0);
    const float e = mine ? expf(__fsub_rn(v, m)) : 0.0f;
    const float s = float(warp_sum_f64(double(e)));
    w = __fdiv_rn(e, s);
  } else {
    w = v;
    if (a.renormalize) {
      const float s = float(warp_sum_f64(double(w)));
      w = __fdiv_rn(w, s);
    }
    if (a.method == int(MoeRoutingMethod::kDeepSeekV3)) w = __fmul_rn(w, a.scaling);
  }
  if (mine) {
    a.ids[t * a.top_k + lane] = my_id;
    a.weights[t * a.top_k + lane] = w;
  }
}

}  // namespace
}  // namespace moe_impl

Status moe_route(const MoeRoutingParams& p, cudaStream_t stream) {
  using detail::ArgCheck;
  ArgCheck check("moe_route");
  const bool method_ok = p.method == MoeRoutingMethod::kSoftmaxTopK || p.method == MoeRoutingMethod::kTopKSoftmax ||
                         p.method == MoeRoutingMethod::kDeepSeekV3;
  check.non_negative(p.num_tokens, "num_tokens")
      .positive(p.num_experts, "num_experts")
      .require(p.num_experts <= moe_impl::kMaxRouteExperts, StatusCode::kNotSupported,
               "num_experts (=" + std::to_string(p.num_experts) + ") must be <= " +
                   std::to_string(moe_impl::kMaxRouteExperts))
      .positive(p.top_k, "top_k")
      .require(p.top_k <= p.num_experts, StatusCode::kInvalidArgument,
               "top_k (=" + std::to_string(p.top_k) + ") must be <= num_experts (=" + std::to_string(p.num_experts) +
                   ")")
      .require(p.top_k <= moe_impl::kMaxRouteTopK, StatusCode::kNotSupported,
               "top_k (=" + std::to_string(p.top_k) + ") must be <= " + std::to_string(moe_impl::kMaxRouteTopK))
      .require(method_ok, StatusCode::kInvalidArgument,
               "method (=" + std::to_string(int(p.method)) + ") is not a MoeRoutingMethod")
      .dtype_in(p.logits_dtype, {DType::kFP32, DType::kBF16}, "logits")
      .size_fits(p.num_tokens, p.num_experts, 4, "logits");
  if (p.method == MoeRoutingMethod::kDeepSeekV3) {
    check.positive(p.n_group, "n_group")
        .require(p.n_group > 0 && p.num_experts % p.n_group == 0, StatusCode::kInvalidArgument,
                 "num_experts (=" + std::to_string(p.num_experts) + ") must be a multiple of n_group (=" +
                     std::to_string(p.n_group) + ")")
        .require(p.topk_group >= 1 && p.topk_group <= p.n_group, StatusCode::kInvalidArgument,
                 "topk_group (=" + std::to_string(p.topk_group) + ") must be in [1, n_group (=" +
                     std::to_string(p.n_group) + ")]");
    if (check.ok()) {
      const int64_t candidates = p.topk_group * (p.num_experts / p.n_group);
      check.require(p.top_k <= candidates, StatusCode::kInvalidArgument,
                    "top_k (=" + std::to_string(p.top_k) + ") must be <= topk_group * num_experts / n_group (=" +
                        std::to_string(candidates) + ")");
    }
  }
  FP4KIT_RETURN_IF_ERROR(check.status());
  if (p.num_tokens == 0) return Status::ok();
  check.not_null(p.logits, "logits").not_null(p.selected_experts, "selected_experts").not_null(p.final_scales, "final_scales");
  if (p.method == MoeRoutingMethod::kDeepSeekV3) check.not_null(p.bias, "bias");
  check.aligned(p.logits, p.logits_dtype == DType::kFP32 ? 4 : 2, "logits")
      .aligned(p.selected_experts, 4, "selected_experts")
      .aligned(p.final_scales, 4, "final_scales")
      .aligned(p.bias, 4, "bias")
      .require(p.num_tokens < (int64_t(1) << 31), StatusCode::kInvalidArgument,
               "num_tokens (=" + std::to_string(p.num_tokens) + ") must be < 2^31");
  FP4KIT_RETURN_IF_ERROR(check.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("moe_route"));

  moe_impl::RouteArgs a;
  a.logits = p.logits;
  a.logits_bf16 = p.logits_dtype == DType::kBF16;
  a.bias = p.bias;
  a.tokens = int(p.num_tokens);
  a.experts = int(p.num_experts);
  a.top_k = int(p.top_k);
  a.method = int(p.method);
  a.n_group = int(p.method == MoeRoutingMethod::kDeepSeekV3 ? p.n_group : 1);
  a.topk_group = int(p.method == MoeRoutingMethod::kDeepSeekV3 ? p.topk_group : 1);
  a.scaling = p.routed_scaling_factor;
  a.renormalize = p.renormalize;
  a.ids = p.selected_experts;
  a.weights = p.final_scales;
  const int64_t blocks = (p.num_tokens + moe_impl::kRouteWarps - 1) / moe_impl::kRouteWarps;
  moe_impl::route_kernel<<<unsigned(blocks), moe_impl::kRouteWarps * 32, 0, stream>>>(a);
  return detail::last_launch_status("moe_route: route_kernel");
}

}  // namespace fp4kit
