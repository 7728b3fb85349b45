// CPU reference of the fused MoE layer and of the routing helper (fp4kit/moe.h, docs/MOE.md).
//
// Routing (reference::moe_route), per token. FP32 arithmetic (expf, IEEE + - * /, no FMA); every
// sum is taken in double (in ascending expert id, or in slot order) and rounded once to FP32:
//   logits: FP32, or BF16 bit patterns decoded exactly to FP32.
//   top-k: k passes, each taking the remaining expert with the largest key; equal keys go to the
//     lower expert id; a NaN key ranks below every other key (NaN logits are not meaningful).
//   kSoftmaxTopK: m = max_e l_e (NaN ignored); x_e = expf(l_e - m); s = float(Σ_e x_e);
//     p_e = x_e / s. Top-k by p. Weights: renormalize ? p_j / float(Σ_j p_j) : p_j.
//   kTopKSoftmax: top-k by l; m = l of the first pick; x_j = expf(l_j - m);
//     w_j = x_j / float(Σ_j x_j) (always sums to 1; `renormalize` has no effect).
//   kDeepSeekV3: score_e = 1 / (1 + expf(-l_e)); sel_e = score_e + bias_e. Group g (E / n_group
//     consecutive experts) scores top1 + top2 of its sel values (top1 alone for groups of one).
//     The topk_group best groups are kept (equal scores: lower group id), then top-k by sel over
//     the experts of the kept groups. Weights: renormalize ? score_j / float(Σ_j score_j) :
//     score_j, then * routed_scaling_factor (kDeepSeekV3 only).
//   Output: the picks in selection order (descending key: p, l, or the biased sel), weights in the
//   same order. For the softmax methods that is descending weight; for kDeepSeekV3 the weights
//   (unbiased scores) need not be descending. This is the order the GPU kernel writes
//   (src/moe/routing.cu) and TRT-LLM's DeepSeek routing uses; only the summation order of the
//   finalize step depends on it.
//
// Fused MoE (reference::fused_moe), for each token t and slot j whose expert e = selected[t, j] is
// local (le = e - ep_rank * E_local in [0, E_local)):
//   x   = the input row: 16-bit values decoded exactly (W4A16); in W4A4 a 16-bit row is quantized
//         with gs1 = fc1_act_global[act_global_per_expert ? le : 0] by the kExact NVFP4 recipe
//         (format/block_recipes.h, the recipe of quantize_nvfp4) and replaced by its decoded
//         values e2m1 * sf (no 1/gs: alpha carries it); a pre-quantized row (kE2M1x2) is decoded
//         the same way with its scales read from the 128x4 layout over T rows.
//   FC1 y[n] = r16( float(Σ_k x[k] · w1[le, n, k]) * fc1_alpha[le] ), n in [0, 2I):
//         w = e2m1 * sf decoded exactly, every product exact in double, the sum in double in k
//         order, converted once to FP32 (RNE), multiplied by alpha in FP32 (RNE), then r16 =
//         round to act_dtype (RNE). This models the kernels: FP32 accumulators (whose only
//         difference from the reference is the order and rounding of the sum), alpha applied to
//         the FP32 sum in FP32, one narrowing.
//   SwiGLU: up = y[0, I), gate = y[I, 2I); h[i] = r16( (gate / (1 + expf(-gate))) * up ) in FP32.
//   W4A4: h is quantized with gs2 = fc2_act_global[act_global_per_expert ? le : 0] (kExact) and
//         replaced by its decoded values.
//   FC2 z[n] = r16( float(Σ_i h[i] · w2[le, n, i]) * fc2_alpha[le] ), n in [0, H), as FC1.
//   finalize: acc = +0.0f; for j = 0 .. k-1 with a local expert: acc = acc + final_scales[t, j]
//         * z_j[n] (FP32, the product and the sum each rounded: no FMA, as the GPU kernel writes
//         it with __fmul_rn/__fadd_rn); output_f32 = acc, output = r16(acc).
//   Slots whose expert is not local contribute nothing (a token none of whose experts is local
//   gets +0.0 everywhere).
//
// Work is grouped by expert so that every weight row is decoded once per call and used by all
// the rows routed to that expert; the threads split (expert, row range) items. Every output value
// is computed by the same fixed sequence of operations whatever the thread count.
#include <algorithm>
#include <cmath>
#include <new>
#include <string>
#include <vector>

#include "fp4kit/moe.h"
#include "format/block_recipes.h"
#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/float16.h"
#include "format/fp32_ops.h"
#include "format/scale_layout.h"
#include "reference/checks.h"
#include "reference/parallel.h"

namespace fp4kit::reference {

using detail::ArgCheck;

namespace {

std::string num(int64_t v) { return std::to_string(v); }

// ---- routing --------------------------------------------------------------------------------------

float load_logit(const void* logits, DType t, int64_t i) {
  if (t == DType::kFP32) return static_cast<const float*>(logits)[i];
  return format::bf16_to_float(static_cast<const uint16_t*>(logits)[i]);
}

// a ranks before b: larger key, equal keys -> lower id; NaN below everything.
bool ranks_before(float ka, int64_t a, float kb, int64_t b) {
  const bool na = std::isnan(ka), nb = std::isnan(kb);
  if (na != nb) return nb;
  if (!na && ka != kb) return ka > kb;
  return a < b;
}

// The top `k` of candidates (ids) by key[id], in rank order.
std::vector<int64_t> top_k_of(const std::vector<int64_t>& candidates, const std::vector<float>& key, int64_t k) {
  std::vector<int64_t> out;
  std::vector<char> taken(candidates.size(), 0);
  for (int64_t pass = 0; pass < k; ++pass) {
    int64_t best = -1;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (taken[c]) continue;
      if (best < 0 || ranks_before(key[size_t(candidates[c])], candidates[c], key[size_t(candidates[size_t(best)])],
                                   candidates[size_t(best)])) {
        best = int64_t(c);
      }
    }
    if (best < 0) break;
    taken[size_t(best)] = 1;
    out.push_back(candidates[size_t(best)]);
  }
  return out;
}

bool valid_method(MoeRoutingMethod m) {
  return m == MoeRoutingMethod::kSoftmaxTopK || m == MoeRoutingMethod::kTopKSoftmax ||
         m == MoeRoutingMethod::kDeepSeekV3;
}

void route_token(const MoeRoutingParams& p, int64_t t, std::vector<float>& l, std::vector<float>& key,
                 std::vector<int64_t>& all) {
  const int64_t E = p.num_experts, k = p.top_k;
  for (int64_t e = 0; e < E; ++e) l[size_t(e)] = load_logit(p.logits, p.logits_dtype, t * E + e);
  std::vector<int64_t> sel;
  std::vector<float> w(static_cast<size_t>(k), 0.0f);
  switch (p.method) {
    case MoeRoutingMethod::kSoftmaxTopK: {
      float m = -INFINITY;
      for (int64_t e = 0; e < E; ++e) m = format::fmax_nan_ignoring(m, l[size_t(e)]);
      double s64 = 0.0;
      for (int64_t e = 0; e < E; ++e) {
        key[size_t(e)] = std::exp(l[size_t(e)] - m);  // std::exp(float) is expf
        s64 += double(key[size_t(e)]);
      }
      const float s = float(s64);
      for (int64_t e = 0; e < E; ++e) key[size_t(e)] = key[size_t(e)] / s;
      sel = top_k_of(all, key, k);
      double sum64 = 0.0;
      for (int64_t j = 0; j < k; ++j) sum64 += double(key[size_t(sel[size_t(j)])]);
      const float sum = float(sum64);
      for (int64_t j = 0; j < k; ++j) {
        const float pj = key[size_t(sel[size_t(j)])];
        w[size_t(j)] = p.renormalize ? pj / sum : pj;
      }
      break;
    }
    case MoeRoutingMethod::kTopKSoftmax: {
      sel = top_k_of(all, l, k);
      const float m = l[size_t(sel[0])];
      double sum64 = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        w[size_t(j)] = std::exp(l[size_t(sel[size_t(j)])] - m);
        sum64 += double(w[size_t(j)]);
      }
      const float sum = float(sum64);
      for (int64_t j = 0; j < k; ++j) w[size_t(j)] = w[size_t(j)] / sum;
      break;
    }
    case MoeRoutingMethod::kDeepSeekV3: {
      std::vector<float> score(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e) {
        score[size_t(e)] = 1.0f / (1.0f + std::exp(-l[size_t(e)]));
        key[size_t(e)] = score[size_t(e)] + p.bias[e];
      }
      const int64_t G = p.n_group, gsize = E / G;
      std::vector<float> gscore(static_cast<size_t>(G));
      std::vector<int64_t> groups(static_cast<size_t>(G));
      for (int64_t g = 0; g < G; ++g) {
        groups[size_t(g)] = g;
        std::vector<int64_t> members(static_cast<size_t>(gsize));
        for (int64_t i = 0; i < gsize; ++i) members[size_t(i)] = g * gsize + i;
        const std::vector<int64_t> top2 = top_k_of(members, key, std::min<int64_t>(2, gsize));
        float gs = key[size_t(top2[0])];
        if (top2.size() > 1) gs = gs + key[size_t(top2[1])];
        gscore[size_t(g)] = gs;
      }
      const std::vector<int64_t> kept = top_k_of(groups, gscore, p.topk_group);
      std::vector<int64_t> candidates;
      for (int64_t g = 0; g < G; ++g) {
        if (std::find(kept.begin(), kept.end(), g) == kept.end()) continue;
        for (int64_t i = 0; i < gsize; ++i) candidates.push_back(g * gsize + i);
      }
      sel = top_k_of(candidates, key, k);
      double sum64 = 0.0;
      for (int64_t j = 0; j < k; ++j) sum64 += double(score[size_t(sel[size_t(j)])]);
      const float sum = float(sum64);
      for (int64_t j = 0; j < k; ++j) {
        const float sj = score[size_t(sel[size_t(j)])];
        w[size_t(j)] = (p.renormalize ? sj / sum : sj) * p.routed_scaling_factor;
      }
      break;
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    p.selected_experts[t * k + j] = int32_t(sel[size_t(j)]);
    p.final_scales[t * k + j] = w[size_t(j)];
  }
}

// ---- fused MoE --------------------------------------------------------------------------------------

bool valid_mode(MoeMode m) { return m == MoeMode::kW4A16 || m == MoeMode::kW4A4; }

float round_act(float v, DType t) {
  return t == DType::kBF16 ? format::bf16_to_float(format::float_to_bf16(v))
                           : format::fp16_to_float(format::float_to_fp16(v));
}

uint16_t act_bits(float v, DType t) { return t == DType::kBF16 ? format::float_to_bf16(v) : format::float_to_fp16(v); }

float act_value(uint16_t b, DType t) { return t == DType::kBF16 ? format::bf16_to_float(b) : format::fp16_to_float(b); }

// n values -> NVFP4 (kExact, global scale S) -> their decoded values e2m1 * sf, exactly as
// quantize_nvfp4 followed by dequantize without the global scale.
void quantize_decode_exact(const float* x, int64_t n, float S, double* out) {
  for (int64_t b = 0; b < n / 16; ++b) {
    const float* xb = x + b * 16;
    float amax = 0.0f;
    for (int i = 0; i < 16; ++i) amax = format::fmax_nan_ignoring(amax, format::abs_f(xb[i]));
    const format::BlockScale bs = format::nvfp4_block_scale(amax, S, QuantNumerics::kExact);
    const float sf = format::e4m3_to_float(bs.sf);
    for (int i = 0; i < 16; ++i) {
      const uint32_t code = format::nvfp4_encode_element(xb[i], bs, QuantNumerics::kExact);
      out[b * 16 + i] = double(format::e2m1_to_float(code) * sf);  // exact in FP32
    }
  }
}

// One row of an NVFP4 matrix: codes [k/2] and `k/16` scales (linear) -> k doubles, exactly.
void decode_row_linear(const uint8_t* codes, const uint8_t* scales, int64_t k, double* out) {
  for (int64_t b = 0; b < k / 16; ++b) {
    const float s = format::e4m3_to_float(scales[b]);
    for (int64_t i = b * 16; i < b * 16 + 16; i += 2) {
      const uint8_t byte = codes[i / 2];
      out[i] = double(format::e2m1_to_float(format::e2m1_low(byte)) * s);
      out[i + 1] = double(format::e2m1_to_float(format::e2m1_high(byte)) * s);
    }
  }
}

// One expanded row: token t, slot j, local expert le.
struct Pair {
  int64_t t, j, le;
};

// out[p][n] = r16(float(Σ_k a_p[k] · W[n, k]) * alpha), for all pairs p of each expert and all
// n in [0, N). a: [pairs, K] doubles; W: [E_local, N, K/2] codes + [E_local, N, K/16] linear scales.
// Items are (expert, 64-row chunk) so that each weight row is decoded once.
void grouped_gemm(const std::vector<std::vector<int64_t>>& by_expert, const std::vector<int64_t>& experts,
                  const std::vector<double>& a, int64_t N, int64_t K, const uint8_t* codes, const uint8_t* scales,
                  const float* alpha, DType act, std::vector<float>& out) {
  constexpr int64_t kChunk = 64, kRows = 4;
  const int64_t chunks = N / kChunk;  // N is a multiple of 64
  const int64_t items = int64_t(experts.size()) * chunks;
  detail::parallel_for(items, 1, [&](int64_t i0, int64_t i1) {
    std::vector<double> w(static_cast<size_t>(kRows * K));
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t le = experts[size_t(item / chunks)];
      const int64_t n_begin = (item % chunks) * kChunk;
      const std::vector<int64_t>& rows = by_expert[size_t(le)];
      const float al = alpha[le];
      for (int64_t n0 = n_begin; n0 < n_begin + kChunk; n0 += kRows) {
        for (int64_t r = 0; r < kRows; ++r) {
          const int64_t row = le * N + n0 + r;
          decode_row_linear(codes + row * (K / 2), scales + row * (K / 16), K, w.data() + r * K);
        }
        const double* w0 = w.data();
        const double* w1 = w0 + K;
        const double* w2 = w1 + K;
        const double* w3 = w2 + K;
        for (int64_t pidx : rows) {
          const double* x = a.data() + pidx * K;
          double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;  // four independent k-ordered sums
          for (int64_t kk = 0; kk < K; ++kk) {
            const double xv = x[kk];
            s0 += xv * w0[kk];
            s1 += xv * w1[kk];
            s2 += xv * w2[kk];
            s3 += xv * w3[kk];
          }
          float* o = out.data() + pidx * N + n0;
          o[0] = round_act(float(s0) * al, act);
          o[1] = round_act(float(s1) * al, act);
          o[2] = round_act(float(s2) * al, act);
          o[3] = round_act(float(s3) * al, act);
        }
      }
    }
  });
}

}  // namespace

Status moe_route(const MoeRoutingParams& p) {
  ArgCheck c("reference::moe_route");
  c.non_negative(p.num_tokens, "num_tokens").positive(p.num_experts, "num_experts").positive(p.top_k, "top_k");
  c.require(p.top_k <= p.num_experts, StatusCode::kInvalidArgument,
            "top_k (=" + num(p.top_k) + ") must be <= num_experts (=" + num(p.num_experts) + ")");
  c.require(valid_method(p.method), StatusCode::kInvalidArgument,
            "method " + detail::enum_value(int(p.method)) + " is not a MoeRoutingMethod");
  c.dtype_in(p.logits_dtype, {DType::kFP32, DType::kBF16}, "logits");
  c.size_fits(p.num_tokens, p.num_experts, 4, "logits").size_fits(p.num_tokens, p.top_k, 4, "selected_experts");
  if (p.num_tokens > 0) {
    c.not_null(p.logits, "logits").not_null(p.selected_experts, "selected_experts").not_null(p.final_scales,
                                                                                             "final_scales");
  }
  if (p.method == MoeRoutingMethod::kDeepSeekV3) {
    c.not_null(p.bias, "bias (e_score_correction_bias, required by kDeepSeekV3)");
    c.positive(p.n_group, "n_group");
    c.require(p.n_group <= 0 || p.num_experts % p.n_group == 0, StatusCode::kInvalidArgument,
              "num_experts (=" + num(p.num_experts) + ") must be a multiple of n_group (=" + num(p.n_group) + ")");
    c.require(p.topk_group >= 1 && p.topk_group <= p.n_group, StatusCode::kInvalidArgument,
              "topk_group (=" + num(p.topk_group) + ") must be in [1, n_group (=" + num(p.n_group) + ")]");
    if (c.ok()) {
      const int64_t available = p.topk_group * (p.num_experts / p.n_group);
      c.require(p.top_k <= available, StatusCode::kInvalidArgument,
                "top_k (=" + num(p.top_k) + ") must be <= topk_group * num_experts / n_group (=" + num(available) +
                    ", the experts of the kept groups)");
    }
  }
  FP4KIT_RETURN_IF_ERROR(c.status());
  if (p.num_tokens == 0) return Status::ok();

  const int64_t E = p.num_experts;
  const int64_t grain = std::max<int64_t>(1, 65536 / (E * std::max<int64_t>(1, p.top_k)));
  detail::parallel_for(p.num_tokens, grain, [&](int64_t t0, int64_t t1) {
    std::vector<float> l(static_cast<size_t>(E)), key(static_cast<size_t>(E));
    std::vector<int64_t> all(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) all[size_t(e)] = e;
    for (int64_t t = t0; t < t1; ++t) route_token(p, t, l, key, all);
  });
  return Status::ok();
}

Status fused_moe(const MoeRefParams& p) {
  ArgCheck c("reference::fused_moe");
  const int64_t T = p.num_tokens, H = p.hidden, I = p.inter, E = p.num_experts, k = p.top_k;
  c.non_negative(T, "num_tokens");
  c.positive(H, "hidden").multiple_of(H, 64, "hidden", "MoE tile size");
  c.positive(I, "inter").multiple_of(I, 64, "inter", "MoE tile size");
  c.positive(E, "num_experts").positive(k, "top_k");
  c.require(k <= E, StatusCode::kInvalidArgument,
            "top_k (=" + num(k) + ") must be <= num_experts (=" + num(E) + ")");
  c.positive(p.ep_size, "ep_size");
  c.require(p.ep_size <= 0 || E % p.ep_size == 0, StatusCode::kInvalidArgument,
            "num_experts (=" + num(E) + ") must be a multiple of ep_size (=" + num(p.ep_size) + ")");
  c.require(p.ep_rank >= 0 && p.ep_rank < p.ep_size, StatusCode::kInvalidArgument,
            "ep_rank (=" + num(p.ep_rank) + ") must be in [0, ep_size (=" + num(p.ep_size) + "))");
  c.require(valid_mode(p.mode), StatusCode::kInvalidArgument,
            "mode " + detail::enum_value(int(p.mode)) + " is not a MoeMode");
  c.dtype_in(p.act_dtype, {DType::kBF16, DType::kFP16}, "act");
  const bool w4a4 = p.mode == MoeMode::kW4A4;
  const bool fp4_input = p.input_dtype == DType::kE2M1x2;
  if (c.ok()) {
    c.require(p.input_dtype == p.act_dtype || (fp4_input && w4a4), StatusCode::kInvalidArgument,
              std::string("input dtype ") + dtype_name(p.input_dtype) + " not supported (expected act_dtype " +
                  dtype_name(p.act_dtype) + (w4a4 ? ", or e2m1x2 pre-quantized input)" : "; e2m1x2 needs kW4A4)"));
  }
  // 64-bit sizes of every buffer (E_local * 2I * H bytes is the largest weight buffer).
  const int64_t E_local = (p.ep_size > 0 && c.ok()) ? E / p.ep_size : 0;
  c.size_fits(T, H, 4, "input/output").size_fits(T, k, 4, "selected_experts");
  int64_t two_i = 0;  // 2 * I, computed only once it cannot overflow
  if (c.ok())
    c.require(fp4kit::detail::checked_mul(2, I, &two_i) && two_i <= INT64_MAX - H, StatusCode::kInvalidArgument,
              "2 * inter + hidden (inter = " + num(I) + ", hidden = " + num(H) + ") overflows 64-bit sizes");
  if (c.ok()) c.size_fits(T * k, two_i + H, 8, "expanded rows");
  if (c.ok()) c.size_fits(E_local, two_i, H, "fc1 weights").size_fits(E_local, H, I, "fc2 weights");
  if (T > 0) {
    c.not_null(p.input, "input");
    if (fp4_input) c.not_null(p.input_scales, "input_scales (required for e2m1x2 input)");
    c.not_null(p.selected_experts, "selected_experts").not_null(p.final_scales, "final_scales");
    c.not_null(p.output, "output");
  }
  c.not_null(p.fc1_codes, "fc1_codes").not_null(p.fc1_scales, "fc1_scales");
  c.not_null(p.fc2_codes, "fc2_codes").not_null(p.fc2_scales, "fc2_scales");
  c.not_null(p.fc1_alpha, "fc1_alpha").not_null(p.fc2_alpha, "fc2_alpha");
  if (w4a4 && !fp4_input) c.not_null(p.fc1_act_global, "fc1_act_global (required by kW4A4 with 16-bit input)");
  if (w4a4) c.not_null(p.fc2_act_global, "fc2_act_global (required by kW4A4)");
  if (c.ok() && T > 0) {
    for (int64_t i = 0; i < T * k; ++i) {
      const int32_t e = p.selected_experts[i];
      if (e < 0 || e >= E) {
        c.require(false, StatusCode::kInvalidArgument,
                  "selected_experts[" + num(i / k) + ", " + num(i % k) + "] (=" + num(e) +
                      ") is out of range [0, num_experts (=" + num(E) + "))");
        break;
      }
    }
  }
  FP4KIT_RETURN_IF_ERROR(c.status());
  if (T == 0) return Status::ok();

  const DType act = p.act_dtype;
  const int64_t first = p.ep_rank * E_local;

  // Expanded rows of local experts, grouped by expert (pairs in (t, j) order within an expert).
  std::vector<Pair> pairs;
  std::vector<int64_t> pair_of(static_cast<size_t>(T * k), -1);
  std::vector<std::vector<int64_t>> by_expert(static_cast<size_t>(E_local));
  std::vector<int64_t> experts;  // local experts with rows, ascending
  std::vector<double> x1, x2;
  std::vector<float> y1, y2;
  try {
    for (int64_t i = 0; i < T * k; ++i) {
      const int64_t le = int64_t(p.selected_experts[i]) - first;
      if (le < 0 || le >= E_local) continue;
      pair_of[size_t(i)] = int64_t(pairs.size());
      by_expert[size_t(le)].push_back(int64_t(pairs.size()));
      pairs.push_back({i / k, i % k, le});
    }
    for (int64_t le = 0; le < E_local; ++le) {
      if (!by_expert[size_t(le)].empty()) experts.push_back(le);
    }
    const size_t P = pairs.size();
    x1.resize(P * size_t(H));
    y1.resize(P * size_t(2 * I));
    x2.resize(P * size_t(I));
    y2.resize(P * size_t(H));
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInternal, "reference::fused_moe: cannot allocate the expanded rows (" +
                                             num(T * k) + " rows of " + num(2 * I + H) + " values)");
  }
  const int64_t P = int64_t(pairs.size());

  // FC1 inputs.
  const int64_t in_padded_cols = format::round_up(H / 16, 4);
  detail::parallel_for(P, std::max<int64_t>(1, 16384 / H), [&](int64_t p0, int64_t p1) {
    std::vector<float> row(static_cast<size_t>(H));
    for (int64_t pi = p0; pi < p1; ++pi) {
      const Pair& pr = pairs[size_t(pi)];
      double* x = x1.data() + pi * H;
      if (fp4_input) {
        const uint8_t* codes = static_cast<const uint8_t*>(p.input) + pr.t * (H / 2);
        for (int64_t b = 0; b < H / 16; ++b) {
          const float s = format::e4m3_to_float(p.input_scales[format::sf_offset_128x4(pr.t, b, in_padded_cols)]);
          for (int64_t i = b * 16; i < b * 16 + 16; i += 2) {
            const uint8_t byte = codes[i / 2];
            x[i] = double(format::e2m1_to_float(format::e2m1_low(byte)) * s);
            x[i + 1] = double(format::e2m1_to_float(format::e2m1_high(byte)) * s);
          }
        }
        continue;
      }
      const uint16_t* in = static_cast<const uint16_t*>(p.input) + pr.t * H;
      for (int64_t i = 0; i < H; ++i) row[size_t(i)] = act_value(in[i], act);
      if (w4a4) {
        quantize_decode_exact(row.data(), H, p.fc1_act_global[p.act_global_per_expert ? pr.le : 0], x);
      } else {
        for (int64_t i = 0; i < H; ++i) x[i] = double(row[size_t(i)]);
      }
    }
  });

  // FC1.
  grouped_gemm(by_expert, experts, x1, 2 * I, H, p.fc1_codes, p.fc1_scales, p.fc1_alpha, act, y1);

  // SwiGLU (+ W4A4 quantization of h).
  detail::parallel_for(P, std::max<int64_t>(1, 16384 / I), [&](int64_t p0, int64_t p1) {
    std::vector<float> h(static_cast<size_t>(I));
    for (int64_t pi = p0; pi < p1; ++pi) {
      const float* y = y1.data() + pi * 2 * I;
      for (int64_t i = 0; i < I; ++i) {
        const float up = y[i], gate = y[I + i];
        const float silu = gate / (1.0f + std::exp(-gate));
        h[size_t(i)] = round_act(silu * up, act);
      }
      double* x = x2.data() + pi * I;
      if (w4a4) {
        quantize_decode_exact(h.data(), I, p.fc2_act_global[p.act_global_per_expert ? pairs[size_t(pi)].le : 0], x);
      } else {
        for (int64_t i = 0; i < I; ++i) x[i] = double(h[size_t(i)]);
      }
    }
  });

  // FC2.
  grouped_gemm(by_expert, experts, x2, H, I, p.fc2_codes, p.fc2_scales, p.fc2_alpha, act, y2);

  // Finalize: each token sums its slots in j order in FP32.
  detail::parallel_for(T, std::max<int64_t>(1, 16384 / (H * k)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      uint16_t* out = static_cast<uint16_t*>(p.output) + t * H;
      for (int64_t n = 0; n < H; ++n) {
        float acc = 0.0f;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t pi = pair_of[size_t(t * k + j)];
          if (pi < 0) continue;
          const float term = p.final_scales[t * k + j] * y2[size_t(pi * H + n)];
          acc = acc + term;  // two roundings (x86-64 has no FMA unless built with -mfma/-march)
        }
        if (p.output_f32) p.output_f32[t * H + n] = acc;
        out[n] = act_bits(acc, act);
      }
    }
  });
  return Status::ok();
}

}  // namespace fp4kit::reference
