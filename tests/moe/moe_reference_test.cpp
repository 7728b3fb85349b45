// CPU reference of the fused MoE layer and of the routing helper (reference::fused_moe,
// reference::moe_route; fp4kit/moe.h):
//  * routing against hand-computed cases (all three methods, ties, renormalize on/off, groups);
//  * fused_moe against a naive straight-line implementation written here from the contract in
//    moe.h: operands decoded by the definitions of tests/reference/ref_test_util.h (E2M1 table,
//    E4M3 by formula, 128x4 input scales through the view definition), one (token, slot) at a time,
//    16-bit rounding by a nearest-value search; the W4A4 re-quantization uses the public reference
//    quantizer (tested on its own in tests/reference). Results must agree bit for bit;
//  * expert parallelism (ranks sum to the full layer; non-local tokens give exact zeros), T = 0,
//    determinism, and argument validation (code and message).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fp4kit/moe.h"
#include "fp4kit/reference.h"
#include "reference/ref_test_util.h"

namespace {

using namespace fp4kit;
using namespace reftest;

// ---- routing ------------------------------------------------------------------------------------------

struct RouteOut {
  std::vector<int32_t> sel;
  std::vector<float> w;
};

RouteOut route(MoeRoutingParams p, const std::vector<float>& logits, const float* bias = nullptr) {
  RouteOut o;
  o.sel.assign(size_t(p.num_tokens * p.top_k), -7);
  o.w.assign(size_t(p.num_tokens * p.top_k), -7.0f);
  p.logits = logits.data();
  p.logits_dtype = DType::kFP32;
  if (bias) p.bias = bias;
  p.selected_experts = o.sel.data();
  p.final_scales = o.w.data();
  const Status s = reference::moe_route(p);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return o;
}

// Σ in double, rounded once to FP32 (how the routing sums).
float dsum(std::initializer_list<float> v) {
  double s = 0.0;
  for (float x : v) s += double(x);
  return float(s);
}

MoeRoutingParams route_params(int64_t T, int64_t E, int64_t k, MoeRoutingMethod m, bool renormalize = true) {
  MoeRoutingParams p;
  p.num_tokens = T;
  p.num_experts = E;
  p.top_k = k;
  p.method = m;
  p.renormalize = renormalize;
  return p;
}

TEST(MoeRouteRef, SoftmaxTopKTiesAndRenormalize) {
  // Token 0: experts 1 and 3 tie at the top: the lower id comes first.
  // Token 1: all equal: ids 0, 1, 2.
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 0.5f, 0.5f, 0.5f, 0.5f};
  // Softmax as the contract writes it: m = max, x = expf(l - m), s = float(Σ x), p = x / s.
  const float x0[4] = {std::exp(-2.0f), 1.0f, std::exp(-1.0f), 1.0f};
  const float s0 = dsum({x0[0], x0[1], x0[2], x0[3]});
  const float p1 = 1.0f / s0;
  {
    const RouteOut o = route(route_params(2, 4, 2, MoeRoutingMethod::kSoftmaxTopK, true), logits);
    EXPECT_EQ(o.sel, (std::vector<int32_t>{1, 3, 0, 1}));
    EXPECT_EQ(o.w[0], p1 / (p1 + p1));
    EXPECT_EQ(o.w[0], 0.5f);
    EXPECT_EQ(o.w[1], 0.5f);
    EXPECT_EQ(o.w[2], 0.5f);
    EXPECT_EQ(o.w[3], 0.5f);
  }
  {
    const RouteOut o = route(route_params(2, 4, 3, MoeRoutingMethod::kSoftmaxTopK, false), logits);
    EXPECT_EQ(o.sel, (std::vector<int32_t>{1, 3, 2, 0, 1, 2}));
    EXPECT_EQ(o.w[0], p1);
    EXPECT_EQ(o.w[1], p1);
    EXPECT_EQ(o.w[2], x0[2] / s0);
    EXPECT_NEAR(o.w[0], std::exp(3.0) / (std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0)), 1e-7);
    for (int j = 3; j < 6; ++j) EXPECT_EQ(o.w[size_t(j)], 0.25f);
  }
  {
    const RouteOut o = route(route_params(2, 4, 3, MoeRoutingMethod::kSoftmaxTopK, true), logits);
    EXPECT_EQ(o.sel, (std::vector<int32_t>{1, 3, 2, 0, 1, 2}));
    const float sum = dsum({p1, p1, x0[2] / s0});
    EXPECT_EQ(o.w[0], p1 / sum);
    EXPECT_EQ(o.w[2], (x0[2] / s0) / sum);
    for (int j = 3; j < 6; ++j) EXPECT_EQ(o.w[size_t(j)], 0.25f / 0.75f);
  }
}

TEST(MoeRouteRef, TopKSoftmax) {
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 2.0f, 1.0f};
  for (bool renorm : {true, false}) {  // renormalize has no effect: the k weights always sum to 1
    const RouteOut o = route(route_params(1, 5, 3, MoeRoutingMethod::kTopKSoftmax, renorm), logits);
    EXPECT_EQ(o.sel, (std::vector<int32_t>{2, 3, 4}));
    const float e = std::exp(-1.0f);
    const float s = dsum({1.0f, 1.0f, e});
    EXPECT_EQ(o.w[0], 1.0f / s);
    EXPECT_EQ(o.w[1], 1.0f / s);
    EXPECT_EQ(o.w[2], e / s);
  }
  // k = 1: weight 1.
  const RouteOut o = route(route_params(1, 5, 1, MoeRoutingMethod::kTopKSoftmax), logits);
  EXPECT_EQ(o.sel[0], 2);
  EXPECT_EQ(o.w[0], 1.0f);
}

TEST(MoeRouteRef, Bf16LogitsMatchFp32) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const int64_t T = 9, E = 16, k = 4;
  std::vector<float> f(static_cast<size_t>(T * E));
  std::vector<uint16_t> b(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    b[i] = fp4kit::format::float_to_bf16(nd(rng));
    f[i] = bf16_value(b[i]);
  }
  std::vector<float> bias(size_t(E), 0.01f);
  for (MoeRoutingMethod m :
       {MoeRoutingMethod::kSoftmaxTopK, MoeRoutingMethod::kTopKSoftmax, MoeRoutingMethod::kDeepSeekV3}) {
    MoeRoutingParams p = route_params(T, E, k, m);
    p.n_group = 4;
    p.topk_group = 2;
    const RouteOut a = route(p, f, bias.data());
    std::vector<int32_t> sel(static_cast<size_t>(T * k));
    std::vector<float> w(static_cast<size_t>(T * k));
    p.logits = b.data();
    p.logits_dtype = DType::kBF16;
    p.bias = bias.data();
    p.selected_experts = sel.data();
    p.final_scales = w.data();
    ASSERT_TRUE(reference::moe_route(p).is_ok());
    EXPECT_EQ(a.sel, sel);
    EXPECT_EQ(a.w, w);
    // Descending weights (the softmax methods), distinct experts.
    for (int64_t t = 0; t < T; ++t) {
      if (m != MoeRoutingMethod::kDeepSeekV3) {
        for (int64_t j = 1; j < k; ++j) EXPECT_GE(w[size_t(t * k + j - 1)], w[size_t(t * k + j)]);
      }
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < j; ++i) EXPECT_NE(sel[size_t(t * k + i)], sel[size_t(t * k + j)]);
    }
  }
}

TEST(MoeRouteRef, DeepSeekV3Groups) {
  // E = 8 in 4 groups of 2; selection score = sigmoid(l) + bias.
  const std::vector<float> bias = {0.1f, 0.0f, 0.3f, -0.5f, 0.2f, 0.2f, 0.0f, 0.05f};
  // Token A: all logits 0 (score 0.5): sel = {.6, .5, .8, 0, .7, .7, .5, .55}; group scores
  //   {1.1, .8, 1.4, 1.05}: groups 2 and 0 are kept (expert 2, the best single sel, is dropped with
  //   its group); top-2 by sel over {0, 1, 4, 5}: 4 and 5 (tie -> lower id).
  // Token B: logits of experts 4, 5 = +1, -1: sel4 = sigmoid(1) + .2, sel5 = sigmoid(-1) + .2; group 2
  //   still wins (sum ~1.4), group 0 second; top-2: 4, then 0.
  // Token C: expert 1's logit 0.2 (score .5498 > .5, but sel .5498 < expert 0's .6); k = 4 picks
  //   4, 5, 0, 1 in selection order, so the last weight is the largest: the output is in selection
  //   (biased score) order, not in weight order.
  std::vector<float> logits(24, 0.0f);
  logits[8 + 4] = 1.0f;
  logits[8 + 5] = -1.0f;
  logits[16 + 1] = 0.2f;
  const float half = 1.0f / (1.0f + std::exp(-0.0f));
  const float s_p1 = 1.0f / (1.0f + std::exp(-1.0f)), s_m1 = 1.0f / (1.0f + std::exp(1.0f));
  const float s_c1 = 1.0f / (1.0f + std::exp(-0.2f));
  ASSERT_EQ(half, 0.5f);
  {
    MoeRoutingParams p = route_params(2, 8, 2, MoeRoutingMethod::kDeepSeekV3, true);
    p.n_group = 4;
    p.topk_group = 2;
    p.routed_scaling_factor = 2.5f;
    const std::vector<float> ab(logits.begin(), logits.begin() + 16);
    const RouteOut o = route(p, ab, bias.data());
    EXPECT_EQ(o.sel, (std::vector<int32_t>{4, 5, 4, 0}));
    EXPECT_EQ(o.w[0], 1.25f);
    EXPECT_EQ(o.w[1], 1.25f);
    const float den = dsum({s_p1, 0.5f});
    EXPECT_EQ(o.w[2], (s_p1 / den) * 2.5f);
    EXPECT_EQ(o.w[3], (0.5f / den) * 2.5f);
    p.renormalize = false;
    const RouteOut u = route(p, ab, bias.data());
    EXPECT_EQ(u.sel, o.sel);
    EXPECT_EQ(u.w[0], 1.25f);
    EXPECT_EQ(u.w[2], s_p1 * 2.5f);
    EXPECT_EQ(u.w[3], 0.5f * 2.5f);
  }
  {
    MoeRoutingParams p = route_params(3, 8, 4, MoeRoutingMethod::kDeepSeekV3, true);
    p.n_group = 4;
    p.topk_group = 2;
    const RouteOut o = route(p, logits, bias.data());
    EXPECT_EQ(o.sel, (std::vector<int32_t>{4, 5, 0, 1, 4, 0, 1, 5, 4, 5, 0, 1}));
    for (int j = 0; j < 4; ++j) EXPECT_EQ(o.w[size_t(j)], 0.25f);
    const float den_b = dsum({s_p1, 0.5f, 0.5f, s_m1});
    EXPECT_EQ(o.w[4], s_p1 / den_b);
    EXPECT_EQ(o.w[5], 0.5f / den_b);
    EXPECT_EQ(o.w[7], s_m1 / den_b);
    const float den_c = dsum({0.5f, 0.5f, 0.5f, s_c1});
    EXPECT_EQ(o.w[8], 0.5f / den_c);
    EXPECT_EQ(o.w[11], s_c1 / den_c);
    EXPECT_GT(o.w[11], o.w[8]);
  }
  {
    // n_group = 1 (plain sigmoid top-k with bias), no renormalization.
    MoeRoutingParams p = route_params(1, 8, 3, MoeRoutingMethod::kDeepSeekV3, false);
    const std::vector<float> a(logits.begin(), logits.begin() + 8);
    const RouteOut o = route(p, a, bias.data());
    EXPECT_EQ(o.sel, (std::vector<int32_t>{2, 4, 5}));  // sel .8, .7, .7
    EXPECT_EQ(o.w, (std::vector<float>{0.5f, 0.5f, 0.5f}));
  }
  {
    // Equal group scores: the lower group wins. Groups {0,1} and {2,3} both sum to 1.0 + bias 0.
    MoeRoutingParams p = route_params(1, 4, 1, MoeRoutingMethod::kDeepSeekV3, true);
    p.n_group = 2;
    p.topk_group = 1;
    const std::vector<float> zero_bias(4, 0.0f);
    const RouteOut o = route(p, std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}, zero_bias.data());
    EXPECT_EQ(o.sel, (std::vector<int32_t>{0}));
    EXPECT_EQ(o.w, (std::vector<float>{1.0f}));
    // A higher score in group 1 moves the pick there.
    const RouteOut o2 = route(p, std::vector<float>{0.0f, 0.0f, 0.0f, 0.1f}, zero_bias.data());
    EXPECT_EQ(o2.sel, (std::vector<int32_t>{3}));
  }
}

TEST(MoeRouteRef, EmptyBatchAndErrors) {
  MoeRoutingParams p = route_params(0, 8, 2, MoeRoutingMethod::kSoftmaxTopK);
  EXPECT_TRUE(reference::moe_route(p).is_ok());  // T = 0: no pointers needed, nothing written

  std::vector<float> logits(16, 0.0f), bias(8, 0.0f), w(4, -1.0f);
  std::vector<int32_t> sel(4, -1);
  auto valid = [&](MoeRoutingMethod m) {
    MoeRoutingParams q = route_params(2, 8, 2, m);
    q.logits = logits.data();
    q.selected_experts = sel.data();
    q.final_scales = w.data();
    q.bias = bias.data();
    q.n_group = 4;
    q.topk_group = 2;
    return q;
  };
  auto expect_bad = [&](const MoeRoutingParams& q, const std::string& what) {
    const Status s = reference::moe_route(q);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_EQ(s.message().rfind("reference::moe_route: ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(what), std::string::npos) << "expected '" << what << "' in: " << s.message();
    for (int32_t v : sel) EXPECT_EQ(v, -1);
    for (float v : w) EXPECT_EQ(v, -1.0f);
  };
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.top_k = 9; expect_bad(q, "top_k (=9) must be <= num_experts (=8)"); }
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.top_k = 0; expect_bad(q, "top_k (=0) must be positive"); }
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.num_tokens = -1; expect_bad(q, "num_tokens (=-1) must not be negative"); }
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.logits = nullptr; expect_bad(q, "logits is null"); }
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.final_scales = nullptr; expect_bad(q, "final_scales is null"); }
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.logits_dtype = DType::kFP16; expect_bad(q, "logits dtype fp16 not supported"); }
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.method = MoeRoutingMethod(7); expect_bad(q, "is not a MoeRoutingMethod"); }
  { auto q = valid(MoeRoutingMethod::kDeepSeekV3); q.bias = nullptr; expect_bad(q, "bias (e_score_correction_bias, required by kDeepSeekV3) is null"); }
  { auto q = valid(MoeRoutingMethod::kDeepSeekV3); q.n_group = 3; expect_bad(q, "num_experts (=8) must be a multiple of n_group (=3)"); }
  { auto q = valid(MoeRoutingMethod::kDeepSeekV3); q.topk_group = 5; expect_bad(q, "topk_group (=5) must be in [1, n_group (=4)]"); }
  { auto q = valid(MoeRoutingMethod::kDeepSeekV3); q.topk_group = 1; q.top_k = 3; expect_bad(q, "top_k (=3) must be <= topk_group * num_experts / n_group (=2"); }
  // The same parameters are fine for the softmax methods (groups are ignored there).
  { auto q = valid(MoeRoutingMethod::kSoftmaxTopK); q.topk_group = 1; q.top_k = 3; q.n_group = 3; q.bias = nullptr;
    std::vector<int32_t> s3(6); std::vector<float> w3(6); q.selected_experts = s3.data(); q.final_scales = w3.data();
    EXPECT_TRUE(reference::moe_route(q).is_ok()); }
}

// ---- fused MoE: problems and the naive implementation ------------------------------------------------

struct Problem {
  int64_t T = 0, H = 0, I = 0, E = 0, k = 0;
  MoeMode mode = MoeMode::kW4A16;
  DType act = DType::kBF16;
  DType input_dtype = DType::kBF16;
  bool per_expert = false;
  std::vector<uint16_t> in16;                                  // [T, H]
  std::vector<uint8_t> in_codes, in_lin_scales, in_scales128;  // pre-quantized input
  std::vector<int32_t> sel;                                    // [T, k]
  std::vector<float> fs;                                       // [T, k]
  std::vector<uint8_t> w1c, w1s, w2c, w2s;                     // all E experts, linear scales
  std::vector<float> a1, a2, g1, g2;                           // [E] (g: [E] or [1])

  bool bf16() const { return act == DType::kBF16; }
  float dec16(uint16_t b) const { return bf16() ? bf16_value(b) : fp16_value(b); }
  uint16_t enc16(float v) const { return nearest_16bit(double(v), bf16()); }
  float r16(float v) const { return dec16(enc16(v)); }

  // Reference parameters for rank `rank` of `size`: local weights are a slice of the global ones.
  reference::MoeRefParams params(int64_t size, int64_t rank, void* out, float* out_f32) const {
    const int64_t El = E / size, first = rank * El;
    reference::MoeRefParams p;
    p.num_tokens = T;
    p.hidden = H;
    p.inter = I;
    p.num_experts = E;
    p.top_k = k;
    p.ep_size = size;
    p.ep_rank = rank;
    p.mode = mode;
    p.act_dtype = act;
    p.input_dtype = input_dtype;
    p.input = input_dtype == DType::kE2M1x2 ? static_cast<const void*>(in_codes.data()) : in16.data();
    p.input_scales = input_dtype == DType::kE2M1x2 ? in_scales128.data() : nullptr;
    p.selected_experts = sel.data();
    p.final_scales = fs.data();
    p.fc1_codes = w1c.data() + first * 2 * I * H / 2;
    p.fc1_scales = w1s.data() + first * 2 * I * H / 16;
    p.fc2_codes = w2c.data() + first * H * I / 2;
    p.fc2_scales = w2s.data() + first * H * I / 16;
    p.fc1_alpha = a1.data() + first;
    p.fc2_alpha = a2.data() + first;
    p.fc1_act_global = g1.data() + (per_expert ? first : 0);
    p.fc2_act_global = g2.data() + (per_expert ? first : 0);
    p.act_global_per_expert = per_expert;
    p.output = out;
    p.output_f32 = out_f32;
    return p;
  }
};

// values -> kExact NVFP4 with global scale gs (the public reference quantizer, linear scales) ->
// decoded e2m1 * sf values (without 1/gs).
std::vector<double> quantize_decode(const std::vector<float>& v, float gs) {
  const int64_t n = int64_t(v.size());
  std::vector<uint8_t> codes(size_t(n / 2)), scales(size_t(n / 16));
  Nvfp4QuantizeParams q;
  q.input = v.data();
  q.input_dtype = DType::kFP32;
  q.rows = 1;
  q.cols = n;
  q.global_scale = &gs;
  q.numerics = QuantNumerics::kExact;
  q.out_codes = codes.data();
  q.out_codes_bytes = int64_t(codes.size());
  q.out_scales = scales.data();
  q.out_scales_bytes = int64_t(scales.size());
  q.scale_layout = ScaleLayout::kLinear;
  EXPECT_TRUE(reference::quantize_nvfp4(q).is_ok());
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) out[size_t(c)] = nvfp4_value(codes, scales, n, 0, c);
  return out;
}

// W row n of expert e ([rows, cols] per expert), decoded by the definition.
double weight(const std::vector<uint8_t>& codes, const std::vector<uint8_t>& scales, int64_t e, int64_t rows,
              int64_t cols, int64_t n, int64_t c) {
  return nvfp4_value(codes, scales, cols, e * rows + n, c);
}

struct Result {
  std::vector<uint16_t> out;
  std::vector<float> out_f32;
};

// The contract of moe.h, one (token, slot) at a time.
Result naive(const Problem& pb, int64_t size = 1, int64_t rank = 0) {
  const int64_t T = pb.T, H = pb.H, I = pb.I, k = pb.k, El = pb.E / size, first = rank * El;
  const bool w4a4 = pb.mode == MoeMode::kW4A4;
  Result r;
  r.out.resize(size_t(T * H));
  r.out_f32.resize(size_t(T * H));
  const std::vector<int64_t> in_pos =
      pb.input_dtype == DType::kE2M1x2 ? view_positions(T, H / 16, ScaleLayout::kSwizzled128x4) : std::vector<int64_t>();
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> acc(size_t(H), 0.0f);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = pb.sel[size_t(t * k + j)];
      if (e < first || e >= first + El) continue;
      const int64_t gi = pb.per_expert ? e : 0;
      // FC1 input.
      std::vector<double> x(static_cast<size_t>(H));
      if (pb.input_dtype == DType::kE2M1x2) {
        for (int64_t c = 0; c < H; ++c) {
          const uint8_t byte = pb.in_codes[size_t(t * H / 2 + c / 2)];
          const double sf = e4m3_value(pb.in_scales128[size_t(in_pos[size_t(t * (H / 16) + c / 16)])]);
          x[size_t(c)] = e2m1_value(c % 2 == 0 ? (byte & 15u) : (byte >> 4)) * sf;
        }
      } else {
        std::vector<float> v(static_cast<size_t>(H));
        for (int64_t c = 0; c < H; ++c) v[size_t(c)] = pb.dec16(pb.in16[size_t(t * H + c)]);
        if (w4a4) x = quantize_decode(v, pb.g1[size_t(gi)]);
        else for (int64_t c = 0; c < H; ++c) x[size_t(c)] = v[size_t(c)];
      }
      // FC1, SwiGLU.
      std::vector<float> y(static_cast<size_t>(2 * I));
      for (int64_t n = 0; n < 2 * I; ++n) {
        double s = 0.0;
        for (int64_t c = 0; c < H; ++c) s += x[size_t(c)] * weight(pb.w1c, pb.w1s, e, 2 * I, H, n, c);
        y[size_t(n)] = pb.r16(float(s) * pb.a1[size_t(e)]);
      }
      std::vector<float> h(static_cast<size_t>(I));
      for (int64_t i = 0; i < I; ++i) {
        const float up = y[size_t(i)], gate = y[size_t(I + i)];
        h[size_t(i)] = pb.r16((gate / (1.0f + std::exp(-gate))) * up);
      }
      std::vector<double> x2(static_cast<size_t>(I));
      if (w4a4) x2 = quantize_decode(h, pb.g2[size_t(gi)]);
      else for (int64_t i = 0; i < I; ++i) x2[size_t(i)] = h[size_t(i)];
      // FC2, finalize.
      for (int64_t n = 0; n < H; ++n) {
        double s = 0.0;
        for (int64_t i = 0; i < I; ++i) s += x2[size_t(i)] * weight(pb.w2c, pb.w2s, e, H, I, n, i);
        const float z = pb.r16(float(s) * pb.a2[size_t(e)]);
        const float term = pb.fs[size_t(t * k + j)] * z;
        acc[size_t(n)] = acc[size_t(n)] + term;
      }
    }
    for (int64_t n = 0; n < H; ++n) {
      r.out_f32[size_t(t * H + n)] = acc[size_t(n)];
      r.out[size_t(t * H + n)] = pb.enc16(acc[size_t(n)]);
    }
  }
  return r;
}

Result run_ref(const Problem& pb, int64_t size = 1, int64_t rank = 0) {
  Result r;
  r.out.assign(size_t(pb.T * pb.H), 0xDEAD);
  r.out_f32.assign(size_t(pb.T * pb.H), -123.0f);
  const Status s = reference::fused_moe(pb.params(size, rank, r.out.data(), r.out_f32.data()));
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return r;
}

// Random NVFP4 weights (uniform codes, E4M3 scales in [0.25, 2]), N(0,1) activations, random distinct
// experts per token (a few tokens repeat an expert in two slots: allowed, each slot counts), random
// positive final scales. alpha keeps every intermediate O(1).
Problem make_problem(uint32_t seed, int64_t T, int64_t H, int64_t I, int64_t E, int64_t k, MoeMode mode, DType act,
                     bool fp4_input = false, bool per_expert = false) {
  std::mt19937 rng(seed);
  Problem pb;
  pb.T = T;
  pb.H = H;
  pb.I = I;
  pb.E = E;
  pb.k = k;
  pb.mode = mode;
  pb.act = act;
  pb.input_dtype = fp4_input ? DType::kE2M1x2 : act;
  pb.per_expert = per_expert;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), sfc(0x28, 0x40);
  std::uniform_real_distribution<float> ud(0.1f, 1.0f);
  pb.in16.resize(size_t(T * H));
  std::vector<float> in_vals(static_cast<size_t>(T * H));
  for (size_t i = 0; i < pb.in16.size(); ++i) {
    pb.in16[i] = pb.enc16(nd(rng));
    in_vals[i] = pb.dec16(pb.in16[i]);
  }
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> ids(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) ids[size_t(e)] = int32_t(e);
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int64_t j = 0; j < k; ++j) {
      pb.sel.push_back(ids[size_t(j)]);
      pb.fs.push_back(ud(rng));
    }
    if (t % 7 == 3 && k >= 2) pb.sel[size_t(t * k + 1)] = pb.sel[size_t(t * k)];  // duplicate slot
  }
  auto fill_w = [&](std::vector<uint8_t>& c, std::vector<uint8_t>& s, int64_t rows, int64_t cols) {
    c.resize(size_t(E * rows * cols / 2));
    s.resize(size_t(E * rows * cols / 16));
    for (auto& b : c) b = uint8_t(byte(rng));
    for (auto& b : s) b = uint8_t(sfc(rng));
  };
  fill_w(pb.w1c, pb.w1s, 2 * I, H);
  fill_w(pb.w2c, pb.w2s, H, I);
  const int64_t ng = per_expert ? E : 1;
  std::uniform_real_distribution<float> gd(200.0f, 1000.0f);
  for (int64_t g = 0; g < ng; ++g) {
    pb.g1.push_back(gd(rng));
    pb.g2.push_back(gd(rng));
  }
  const float in_gs = 700.0f;
  for (int64_t e = 0; e < E; ++e) {
    const float g1 = pb.g1[size_t(per_expert ? e : 0)], g2 = pb.g2[size_t(per_expert ? e : 0)];
    float b1 = 0.2f / std::sqrt(float(H)) * ud(rng), b2 = 0.3f / std::sqrt(float(I)) * ud(rng);
    if (mode == MoeMode::kW4A4) {
      b1 /= fp4_input ? in_gs : g1;
      b2 /= g2;
    }
    pb.a1.push_back(b1);
    pb.a2.push_back(b2);
  }
  if (fp4_input) {
    pb.in_codes.resize(size_t(T * H / 2));
    pb.in_lin_scales.resize(size_t(T * H / 16));
    Nvfp4QuantizeParams q;
    q.input = in_vals.data();
    q.input_dtype = DType::kFP32;
    q.rows = T;
    q.cols = H;
    q.global_scale = &in_gs;
    q.out_codes = pb.in_codes.data();
    q.out_codes_bytes = int64_t(pb.in_codes.size());
    q.out_scales = pb.in_lin_scales.data();
    q.out_scales_bytes = int64_t(pb.in_lin_scales.size());
    q.scale_layout = ScaleLayout::kLinear;
    EXPECT_TRUE(reference::quantize_nvfp4(q).is_ok());
    pb.in_scales128 = swizzle_by_view(pb.in_lin_scales, T, H / 16, ScaleLayout::kSwizzled128x4);
  }
  return pb;
}

void expect_same(const Result& a, const Result& b, const std::string& what, double min_nonzero = 0.9) {
  ASSERT_EQ(a.out.size(), b.out.size());
  int64_t diff = 0, nonzero = 0;
  for (size_t i = 0; i < a.out.size(); ++i) {
    if (a.out[i] != b.out[i] || bits_of(a.out_f32[i]) != bits_of(b.out_f32[i])) {
      if (diff++ < 5)
        ADD_FAILURE() << what << ": element " << i << ": " << a.out_f32[i] << " (0x" << std::hex << a.out[i]
                      << ") vs " << std::dec << b.out_f32[i] << " (0x" << std::hex << b.out[i] << std::dec << ")";
    }
    if (b.out_f32[i] != 0.0f) ++nonzero;
  }
  EXPECT_EQ(diff, 0) << what;
  EXPECT_GE(double(nonzero), min_nonzero * double(a.out.size())) << what << ": the problem should produce non-zero outputs";
}

struct Case {
  const char* name;
  MoeMode mode;
  DType act;
  bool fp4_input, per_expert;
};

const Case kCases[] = {
    {"w4a16.bf16", MoeMode::kW4A16, DType::kBF16, false, false},
    {"w4a16.fp16", MoeMode::kW4A16, DType::kFP16, false, false},
    {"w4a4.bf16", MoeMode::kW4A4, DType::kBF16, false, false},
    {"w4a4.fp16", MoeMode::kW4A4, DType::kFP16, false, false},
    {"w4a4.bf16.per_expert_gs", MoeMode::kW4A4, DType::kBF16, false, true},
    {"w4a4.fp16.prequantized", MoeMode::kW4A4, DType::kFP16, true, false},
    {"w4a4.bf16.prequantized.per_expert_gs", MoeMode::kW4A4, DType::kBF16, true, true},
};

TEST(MoeFusedRef, MatchesNaiveBitExact) {
  uint32_t seed = 100;
  for (const Case& c : kCases) {
    // Small: several tokens per expert; and a shape with H != I, more experts than tokens.
    for (int shape = 0; shape < 2; ++shape) {
      const Problem pb = shape == 0 ? make_problem(++seed, 13, 64, 64, 4, 2, c.mode, c.act, c.fp4_input, c.per_expert)
                                    : make_problem(++seed, 6, 128, 192, 8, 3, c.mode, c.act, c.fp4_input, c.per_expert);
      expect_same(run_ref(pb), naive(pb), std::string(c.name) + " shape " + std::to_string(shape));
    }
  }
}

TEST(MoeFusedRef, W4A4DiffersFromW4A16OnlyByQuantization) {
  // Sanity of the magnitudes: W4A4 (activations re-quantized to NVFP4) stays within NVFP4 noise of W4A16.
  Problem a = make_problem(7, 16, 128, 128, 4, 2, MoeMode::kW4A16, DType::kBF16);
  Problem b = make_problem(7, 16, 128, 128, 4, 2, MoeMode::kW4A4, DType::kBF16);
  for (int64_t e = 0; e < 4; ++e) {  // same effective scales: W4A4 alpha = W4A16 alpha / gs
    b.a1[size_t(e)] = a.a1[size_t(e)] / b.g1[0];
    b.a2[size_t(e)] = a.a2[size_t(e)] / b.g2[0];
  }
  const Result ra = run_ref(a), rb = run_ref(b);
  double num = 0, den = 0;
  for (size_t i = 0; i < ra.out_f32.size(); ++i) {
    num += std::pow(double(ra.out_f32[i]) - rb.out_f32[i], 2);
    den += std::pow(double(ra.out_f32[i]), 2);
  }
  const double rel = std::sqrt(num / den);
  EXPECT_GT(den, 0.0);
  EXPECT_GT(rel, 1e-3);  // the quantization does something
  EXPECT_LT(rel, 0.3);   // ... of the size NVFP4 noise has (two re-quantizations)
}

TEST(MoeFusedRef, ExpertParallelRanksSumToFullLayer) {
  for (const Case& c : kCases) {
    Problem pb = make_problem(31, 12, 64, 128, 8, 3, c.mode, c.act, c.fp4_input, c.per_expert);
    // Token 0: only rank-0 experts (0..3); token 1: only rank-1 experts (4..7).
    pb.sel[0] = 0, pb.sel[1] = 3, pb.sel[2] = 1;
    pb.sel[3] = 7, pb.sel[4] = 4, pb.sel[5] = 6;
    const Result full = run_ref(pb), r0 = run_ref(pb, 2, 0), r1 = run_ref(pb, 2, 1);
    expect_same(r0, naive(pb, 2, 0), std::string(c.name) + " rank 0", 0.3);
    const int64_t H = pb.H;
    for (int64_t n = 0; n < H; ++n) {
      // Token 0 on rank 0 is the full result, bit for bit; on rank 1 exactly zero. Token 1 vice versa.
      EXPECT_EQ(r0.out[size_t(n)], full.out[size_t(n)]);
      EXPECT_EQ(r1.out[size_t(n)], 0u);
      EXPECT_EQ(bits_of(r1.out_f32[size_t(n)]), 0u);
      EXPECT_EQ(r1.out[size_t(H + n)], full.out[size_t(H + n)]);
      EXPECT_EQ(r0.out[size_t(H + n)], 0u);
      EXPECT_EQ(bits_of(r0.out_f32[size_t(H + n)]), 0u);
    }
    // Every token: rank 0 + rank 1 = full, up to the FP32 rounding of the split sum.
    double num = 0, den = 0, amax = 0;
    for (float v : full.out_f32) amax = std::max(amax, std::fabs(double(v)));
    for (size_t i = 0; i < full.out_f32.size(); ++i) {
      const double d = double(r0.out_f32[i]) + double(r1.out_f32[i]) - double(full.out_f32[i]);
      EXPECT_LE(std::fabs(d), 1e-6 * amax) << c.name << " " << i;
      num += d * d;
      den += double(full.out_f32[i]) * full.out_f32[i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-6) << c.name;
  }
}

TEST(MoeFusedRef, NonLocalTokensGiveExactZeros) {
  Problem pb = make_problem(3, 4, 64, 64, 4, 2, MoeMode::kW4A16, DType::kBF16);
  for (auto& e : pb.sel) e = 3;  // every slot on expert 3, rank 1 of 2
  Result r;
  r.out.assign(size_t(pb.T * pb.H), 0xDEAD);
  r.out_f32.assign(size_t(pb.T * pb.H), -1.0f);
  ASSERT_TRUE(reference::fused_moe(pb.params(2, 0, r.out.data(), r.out_f32.data())).is_ok());
  for (size_t i = 0; i < r.out.size(); ++i) {
    ASSERT_EQ(r.out[i], 0u);
    ASSERT_EQ(bits_of(r.out_f32[i]), 0u);
  }
  // output_f32 is optional.
  ASSERT_TRUE(reference::fused_moe(pb.params(2, 1, r.out.data(), nullptr)).is_ok());
  EXPECT_EQ(r.out, naive(pb, 2, 1).out);
}

TEST(MoeFusedRef, DeterministicAndEmptyBatch) {
  const Problem pb = make_problem(9, 40, 128, 64, 8, 4, MoeMode::kW4A4, DType::kBF16);
  const Result a = run_ref(pb), b = run_ref(pb);
  EXPECT_EQ(a.out, b.out);

  Problem empty = pb;
  empty.T = 0;
  std::vector<uint16_t> out(16, 0xBEEF);
  std::vector<float> out_f32(16, -5.0f);
  EXPECT_TRUE(reference::fused_moe(empty.params(1, 0, out.data(), out_f32.data())).is_ok());
  for (uint16_t v : out) EXPECT_EQ(v, 0xBEEF);
  for (float v : out_f32) EXPECT_EQ(v, -5.0f);
  // T = 0 needs no per-token buffers.
  reference::MoeRefParams p = empty.params(1, 0, nullptr, nullptr);
  p.input = nullptr;
  p.selected_experts = nullptr;
  p.final_scales = nullptr;
  EXPECT_TRUE(reference::fused_moe(p).is_ok());
}

// ---- fused MoE: argument validation ------------------------------------------------------------------

TEST(MoeFusedRef, BadArguments) {
  Problem pb = make_problem(2, 4, 64, 64, 4, 2, MoeMode::kW4A4, DType::kBF16);
  std::vector<uint16_t> out(size_t(pb.T * pb.H), 0xEEEE);
  auto valid = [&] { return pb.params(1, 0, out.data(), nullptr); };
  ASSERT_TRUE(reference::fused_moe(valid()).is_ok());
  std::fill(out.begin(), out.end(), uint16_t(0xEEEE));
  auto expect_bad = [&](const reference::MoeRefParams& p, const std::string& what) {
    const Status s = reference::fused_moe(p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_EQ(s.message().rfind("reference::fused_moe: ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(what), std::string::npos) << "expected '" << what << "' in: " << s.message();
    for (uint16_t v : out) ASSERT_EQ(v, 0xEEEE) << "a rejected call wrote the output";
  };
  using P = reference::MoeRefParams;
  auto with = [&](void (*f)(P&)) { P p = valid(); f(p); return p; };
  expect_bad(with([](P& p) { p.hidden = 96; }), "hidden (=96) must be a multiple of 64");
  expect_bad(with([](P& p) { p.inter = 0; }), "inter (=0) must be positive");
  expect_bad(with([](P& p) { p.inter = 80; }), "inter (=80) must be a multiple of 64");
  expect_bad(with([](P& p) { p.inter = int64_t(1) << 62; }),
             "2 * inter + hidden (inter = 4611686018427387904, hidden = 64) overflows 64-bit sizes");
  expect_bad(with([](P& p) { p.num_tokens = -2; }), "num_tokens (=-2) must not be negative");
  expect_bad(with([](P& p) { p.top_k = 5; }), "top_k (=5) must be <= num_experts (=4)");
  expect_bad(with([](P& p) { p.top_k = 0; }), "top_k (=0) must be positive");
  expect_bad(with([](P& p) { p.ep_size = 3; }), "num_experts (=4) must be a multiple of ep_size (=3)");
  expect_bad(with([](P& p) { p.ep_size = 2; p.ep_rank = 2; }), "ep_rank (=2) must be in [0, ep_size (=2))");
  expect_bad(with([](P& p) { p.ep_rank = -1; }), "ep_rank (=-1) must be in [0, ep_size (=1))");
  expect_bad(with([](P& p) { p.mode = MoeMode(3); }), "is not a MoeMode");
  expect_bad(with([](P& p) { p.act_dtype = DType::kFP32; }), "act dtype fp32 not supported");
  expect_bad(with([](P& p) { p.input_dtype = DType::kFP16; }), "input dtype fp16 not supported");
  expect_bad(with([](P& p) { p.mode = MoeMode::kW4A16; p.input_dtype = DType::kE2M1x2; }),
             "input dtype e2m1x2 not supported (expected act_dtype bf16; e2m1x2 needs kW4A4)");
  expect_bad(with([](P& p) { p.input_dtype = DType::kE2M1x2; }), "input_scales (required for e2m1x2 input) is null");
  expect_bad(with([](P& p) { p.input = nullptr; }), "input is null");
  expect_bad(with([](P& p) { p.selected_experts = nullptr; }), "selected_experts is null");
  expect_bad(with([](P& p) { p.final_scales = nullptr; }), "final_scales is null");
  expect_bad(with([](P& p) { p.output = nullptr; }), "output is null");
  expect_bad(with([](P& p) { p.fc1_codes = nullptr; }), "fc1_codes is null");
  expect_bad(with([](P& p) { p.fc2_scales = nullptr; }), "fc2_scales is null");
  expect_bad(with([](P& p) { p.fc2_alpha = nullptr; }), "fc2_alpha is null");
  expect_bad(with([](P& p) { p.fc1_act_global = nullptr; }), "fc1_act_global (required by kW4A4 with 16-bit input) is null");
  expect_bad(with([](P& p) { p.fc2_act_global = nullptr; }), "fc2_act_global (required by kW4A4) is null");
  // Expert ids out of range, both ends.
  std::vector<int32_t> sel = pb.sel;
  sel[3] = 4;
  { P p = valid(); p.selected_experts = sel.data(); expect_bad(p, "selected_experts[1, 1] (=4) is out of range [0, num_experts (=4))"); }
  sel[3] = 0;
  sel[6] = -1;
  { P p = valid(); p.selected_experts = sel.data(); expect_bad(p, "selected_experts[3, 0] (=-1) is out of range"); }
  // W4A16 needs no act globals.
  { P p = valid(); p.mode = MoeMode::kW4A16; p.fc1_act_global = p.fc2_act_global = nullptr;
    EXPECT_TRUE(reference::fused_moe(p).is_ok()); }
}

}  // namespace
