// Fused MoE and routing on the GPU against the CPU reference (reference::fused_moe,
// reference::moe_route): W4A16 and W4A4 (16-bit and pre-quantized input), BF16 and FP16, expert
// parallelism, both permutation paths (fused single kernel and multi-kernel), poisoned outputs,
// bit-identical reruns, T = 0, bad expert ids, tokens with no local expert, CUDA graph capture, and
// prepack_moe_weights against per-expert prepack_weights; the per-entry small-batch path against the
// reference and the pipeline. Skips without an sm_90a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/device_buffer.h"
#include "common/gpu_test.h"
#include "common/sm_holder.cuh"
#include "format/float16.h"
#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "fp4kit/moe.h"
#include "fp4kit/reference.h"
#include "gemm/grouped.h"
#include "moe/fused_decode.h"
#include "moe/moe_path.h"
#include "moe/per_entry.h"  // per_entry_prestages

using namespace fp4kit;

namespace {

#define FP4_OK(x)                              \
  do {                                         \
    Status s_ = (x);                           \
    ASSERT_TRUE(s_.is_ok()) << s_.to_string(); \
  } while (0)

uint16_t to_bits(float f, DType t) { return t == DType::kBF16 ? format::float_to_bf16(f) : format::float_to_fp16(f); }
double to_double(uint16_t v, DType t) { return t == DType::kBF16 ? format::bf16_to_float(v) : format::fp16_to_float(v); }

std::vector<uint16_t> random_16bit(int64_t count, DType t, std::mt19937& rng, float sigma) {
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<uint16_t> v(static_cast<size_t>(count));
  for (auto& x : v) x = to_bits(nd(rng), t);
  return v;
}

struct Quantized {
  std::vector<uint8_t> codes, scales;
  float gs = 1.0f;
};

// reference quantize_nvfp4 (kExact) with the tensor's own encode global scale (or `gs` if > 0).
Quantized quantize_cpu(const uint16_t* x, DType t, int64_t rows, int64_t cols, ScaleLayout layout, float gs = 0.0f) {
  Quantized q;
  if (gs > 0.0f) {
    q.gs = gs;
  } else {
    GlobalScaleParams gp;
    gp.input = x;
    gp.input_dtype = t;
    gp.rows = rows;
    gp.cols = cols;
    gp.out_global_scale = &q.gs;
    EXPECT_TRUE(reference::compute_global_scale(gp).is_ok());
  }
  q.codes.resize(size_t(rows * cols / 2));
  q.scales.resize(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, layout, rows, cols)));
  Nvfp4QuantizeParams p;
  p.input = x;
  p.input_dtype = t;
  p.rows = rows;
  p.cols = cols;
  p.global_scale = &q.gs;
  p.out_codes = q.codes.data();
  p.out_codes_bytes = int64_t(q.codes.size());
  p.out_scales = q.scales.data();
  p.out_scales_bytes = int64_t(q.scales.size());
  p.scale_layout = layout;
  const Status s = reference::quantize_nvfp4(p);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return q;
}

std::vector<uint8_t> linear_to_128x4(const std::vector<uint8_t>& linear, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, rows, cols)));
  ScaleLayoutConvertParams c;
  c.input = linear.data();
  c.input_layout = ScaleLayout::kLinear;
  c.output = out.data();
  c.output_layout = ScaleLayout::kSwizzled128x4;
  c.rows = rows;
  c.sf_cols = cols / 16;
  c.input_bytes = int64_t(linear.size());
  c.output_bytes = int64_t(out.size());
  const Status s = reference::convert_scale_layout(c);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

// ---- a random MoE layer ----------------------------------------------------------------------------------
struct Config {
  int64_t T, H, I, E, k;
  int64_t ep_size = 1, ep_rank = 0;
  MoeMode mode = MoeMode::kW4A16;
  DType act = DType::kBF16;
  bool fp4_input = false;
  bool per_expert_globals = false;
  bool weights_128x4 = false;  // checkpoint scales given to prepack_moe_weights in the 128x4 layout
  int64_t max_tokens = 0;
  MoePath path = MoePath::kAuto;
  std::string name() const {
    return "T=" + std::to_string(T) + " H=" + std::to_string(H) + " I=" + std::to_string(I) + " E=" +
           std::to_string(E) + " k=" + std::to_string(k) + " ep=" + std::to_string(ep_rank) + "/" +
           std::to_string(ep_size) + (mode == MoeMode::kW4A4 ? " W4A4" : " W4A16") + " " + dtype_name(act) +
           (fp4_input ? " fp4-input" : "") + (per_expert_globals ? " per-expert-gs" : "") +
           (path == MoePath::kFusedDecode ? " fused-decode" : "");
  }
};

struct Layer {
  Config c;
  int64_t e_local = 0;
  std::vector<uint16_t> input16;                // [T, H]
  std::vector<uint8_t> in_codes, in_scales;     // fp4 input: [T, H/2], 128x4
  std::vector<int32_t> sel;                     // [T, k]
  std::vector<float> scales;                    // [T, k]
  std::vector<uint8_t> w1_codes, w1_scales;     // [E_local, 2I, H/2], linear [E_local, 2I, H/16]
  std::vector<uint8_t> w2_codes, w2_scales;     // [E_local, H, I/2], linear
  std::vector<float> alpha1, alpha2, a1_gs, a2_gs;
};

// k distinct experts per token, uniformly; weights positive, summing to 1.
void random_routing(Layer& L, std::mt19937& rng) {
  const Config& c = L.c;
  L.sel.resize(size_t(c.T * c.k));
  L.scales.resize(size_t(c.T * c.k));
  std::vector<int32_t> ids(size_t(c.E));
  std::uniform_real_distribution<float> u(0.1f, 1.0f);
  for (int64_t t = 0; t < c.T; ++t) {
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    float sum = 0.0f;
    for (int64_t j = 0; j < c.k; ++j) sum += (L.scales[size_t(t * c.k + j)] = u(rng));
    for (int64_t j = 0; j < c.k; ++j) {
      L.sel[size_t(t * c.k + j)] = ids[size_t(j)];
      L.scales[size_t(t * c.k + j)] /= sum;
    }
  }
}

Layer make_layer(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Layer L;
  L.c = c;
  L.e_local = c.E / c.ep_size;
  const int64_t H = c.H, I = c.I, EL = L.e_local;
  L.input16 = random_16bit(c.T * H, c.act, rng, 1.0f);
  float in_gs = 0.0f;
  if (c.fp4_input && c.T > 0) {
    Quantized q = quantize_cpu(L.input16.data(), c.act, c.T, H, ScaleLayout::kSwizzled128x4);
    L.in_codes = q.codes;
    L.in_scales = q.scales;
    in_gs = q.gs;
  }
  random_routing(L, rng);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  const int64_t n_globals = c.per_expert_globals ? EL : 1;
  for (int64_t i = 0; i < n_globals; ++i) {
    const float r1 = u(rng), r2 = u(rng);  // drawn either way: the weights do not depend on the mode
    L.a1_gs.push_back(c.fp4_input ? in_gs : 2688.0f / 5.0f * r1);  // |x| <~ 5
    L.a2_gs.push_back(2688.0f / 8.0f * r2);                        // |h| <~ 8
  }
  for (int64_t e = 0; e < EL; ++e) {
    const auto w1 = random_16bit(2 * I * H, DType::kBF16, rng, 1.0f / std::sqrt(float(H)));
    const auto w2 = random_16bit(H * I, DType::kBF16, rng, 1.0f / std::sqrt(float(I)));
    const Quantized q1 = quantize_cpu(w1.data(), DType::kBF16, 2 * I, H, ScaleLayout::kLinear);
    const Quantized q2 = quantize_cpu(w2.data(), DType::kBF16, H, I, ScaleLayout::kLinear);
    L.w1_codes.insert(L.w1_codes.end(), q1.codes.begin(), q1.codes.end());
    L.w1_scales.insert(L.w1_scales.end(), q1.scales.begin(), q1.scales.end());
    L.w2_codes.insert(L.w2_codes.end(), q2.codes.begin(), q2.codes.end());
    L.w2_scales.insert(L.w2_scales.end(), q2.scales.begin(), q2.scales.end());
    const bool w4a4 = c.mode == MoeMode::kW4A4;
    const float g1 = L.a1_gs[size_t(c.per_expert_globals ? e : 0)];
    const float g2 = L.a2_gs[size_t(c.per_expert_globals ? e : 0)];
    L.alpha1.push_back(w4a4 ? 1.0f / (g1 * q1.gs) : 1.0f / q1.gs);
    L.alpha2.push_back(w4a4 ? 1.0f / (g2 * q2.gs) : 1.0f / q2.gs);
  }
  return L;
}

struct RefOut {
  std::vector<uint16_t> out;
  std::vector<float> out_f32;
};

RefOut reference_run(const Layer& L, const std::vector<int32_t>& sel) {
  const Config& c = L.c;
  RefOut r;
  r.out.assign(size_t(c.T * c.H), 0xffff);
  r.out_f32.assign(size_t(c.T * c.H), NAN);
  reference::MoeRefParams p;
  p.num_tokens = c.T;
  p.hidden = c.H;
  p.inter = c.I;
  p.num_experts = c.E;
  p.top_k = c.k;
  p.ep_size = c.ep_size;
  p.ep_rank = c.ep_rank;
  p.mode = c.mode;
  p.act_dtype = c.act;
  p.input_dtype = c.fp4_input ? DType::kE2M1x2 : c.act;
  p.input = c.fp4_input ? static_cast<const void*>(L.in_codes.data()) : L.input16.data();
  p.input_scales = c.fp4_input ? L.in_scales.data() : nullptr;
  p.selected_experts = sel.data();
  p.final_scales = L.scales.data();
  p.fc1_codes = L.w1_codes.data();
  p.fc1_scales = L.w1_scales.data();
  p.fc2_codes = L.w2_codes.data();
  p.fc2_scales = L.w2_scales.data();
  p.fc1_alpha = L.alpha1.data();
  p.fc2_alpha = L.alpha2.data();
  p.fc1_act_global = L.a1_gs.data();
  p.fc2_act_global = L.a2_gs.data();
  p.act_global_per_expert = c.per_expert_globals;
  p.output = r.out.data();
  p.output_f32 = r.out_f32.data();
  const Status s = reference::fused_moe(p);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return r;
}

// Device copy of a layer: prepacked weights, inputs, routing, scalars, output, workspace.
struct DeviceLayer {
  const Layer& L;
  DeviceBuffer<uint8_t> w1, w2;
  DeviceBuffer<uint16_t> input16;
  DeviceBuffer<uint8_t> in_codes, in_scales;
  DeviceBuffer<int32_t> sel;
  DeviceBuffer<float> scales, alpha1, alpha2, a1_gs, a2_gs;
  DeviceBuffer<uint16_t> out;
  MoeParams p;

  static int64_t w1_bytes(const Layer& L) { return moe_prepacked_weight_bytes(L.e_local, 2 * L.c.I, L.c.H); }
  static int64_t w2_bytes(const Layer& L) { return moe_prepacked_weight_bytes(L.e_local, L.c.H, L.c.I); }

  explicit DeviceLayer(const Layer& layer)
      : L(layer),
        w1(size_t(w1_bytes(layer))),
        w2(size_t(w2_bytes(layer))),
        input16(layer.input16.size()),
        in_codes(layer.in_codes.size()),
        in_scales(layer.in_scales.size()),
        sel(layer.sel.size()),
        scales(layer.scales.size()),
        alpha1(layer.alpha1.size()),
        alpha2(layer.alpha2.size()),
        a1_gs(layer.a1_gs.size()),
        a2_gs(layer.a2_gs.size()),
        out(size_t(layer.c.T * layer.c.H)) {
    const Config& c = L.c;
    prepack(L.w1_codes, L.w1_scales, 2 * c.I, c.H, w1.ptr, w1_bytes(L));
    prepack(L.w2_codes, L.w2_scales, c.H, c.I, w2.ptr, w2_bytes(L));
    if (!L.input16.empty()) input16.upload(L.input16);
    if (!L.in_codes.empty()) in_codes.upload(L.in_codes);
    if (!L.in_scales.empty()) in_scales.upload(L.in_scales);
    if (!L.sel.empty()) sel.upload(L.sel);
    if (!L.scales.empty()) scales.upload(L.scales);
    alpha1.upload(L.alpha1);
    alpha2.upload(L.alpha2);
    a1_gs.upload(L.a1_gs);
    a2_gs.upload(L.a2_gs);

    p.num_tokens = c.T;
    p.path = c.path;
    p.max_tokens = c.max_tokens;
    p.hidden = c.H;
    p.inter = c.I;
    p.num_experts = c.E;
    p.top_k = c.k;
    p.ep_size = c.ep_size;
    p.ep_rank = c.ep_rank;
    p.mode = c.mode;
    p.act_dtype = c.act;
    p.input_dtype = c.fp4_input ? DType::kE2M1x2 : c.act;
    p.input = c.fp4_input ? static_cast<const void*>(in_codes.ptr) : input16.ptr;
    p.input_scales = c.fp4_input ? in_scales.ptr : nullptr;
    p.selected_experts = sel.ptr;
    p.final_scales = scales.ptr;
    p.fc1_weights = w1.ptr;
    p.fc1_weights_bytes = w1_bytes(L);
    p.fc2_weights = w2.ptr;
    p.fc2_weights_bytes = w2_bytes(L);
    p.fc1_alpha = alpha1.ptr;
    p.fc2_alpha = alpha2.ptr;
    p.fc1_act_global = a1_gs.ptr;
    p.fc2_act_global = a2_gs.ptr;
    p.act_global_per_expert = c.per_expert_globals;
    p.output = out.ptr;
  }

  // Checkpoint codes + linear scales of all local experts -> prepack_moe_weights (scales optionally
  // converted to 128x4 per expert first).
  void prepack(const std::vector<uint8_t>& codes, const std::vector<uint8_t>& scales_linear, int64_t n, int64_t k,
               void* out_ptr, int64_t out_bytes) {
    std::vector<uint8_t> scales = scales_linear;
    ScaleLayout layout = ScaleLayout::kLinear;
    if (L.c.weights_128x4) {
      layout = ScaleLayout::kSwizzled128x4;
      scales.clear();
      const size_t per = size_t(n * k / 16);
      for (int64_t e = 0; e < L.e_local; ++e) {
        const std::vector<uint8_t> lin(scales_linear.begin() + e * per, scales_linear.begin() + (e + 1) * per);
        const std::vector<uint8_t> sw = linear_to_128x4(lin, n, k);
        scales.insert(scales.end(), sw.begin(), sw.end());
      }
    }
    DeviceBuffer<uint8_t> dc(codes.size()), ds(scales.size());
    dc.upload(codes);
    ds.upload(scales);
    MoeWeightPrepackParams pp;
    pp.experts = L.e_local;
    pp.n = n;
    pp.k = k;
    pp.codes = dc.ptr;
    pp.scales = ds.ptr;
    pp.scale_layout = layout;
    pp.out = out_ptr;
    pp.out_bytes = out_bytes;
    const Status s = prepack_moe_weights(pp, nullptr);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
};

struct Compare {
  double rel = 0;
  int64_t nonfinite = 0;
};

Compare compare(const std::vector<uint16_t>& got, const RefOut& ref, DType t) {
  Compare r;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = to_double(got[i], t);
    if (!std::isfinite(g)) ++r.nonfinite;
    const double d = g - double(ref.out_f32[i]);
    num += d * d;
    den += double(ref.out_f32[i]) * double(ref.out_f32[i]);
  }
  r.rel = std::sqrt(num / std::max(den, 1e-300));
  return r;
}

// Tokens none of whose experts is local must be exact (+0) zeros.
void expect_zero_rows(const Layer& L, const std::vector<int32_t>& sel, const std::vector<uint16_t>& got) {
  const Config& c = L.c;
  const int64_t first = c.ep_rank * L.e_local;
  for (int64_t t = 0; t < c.T; ++t) {
    bool any_local = false;
    for (int64_t j = 0; j < c.k; ++j) {
      const int64_t e = sel[size_t(t * c.k + j)];
      any_local |= e >= first && e < first + L.e_local;
    }
    if (any_local) continue;
    for (int64_t h = 0; h < c.H; ++h) ASSERT_EQ(got[size_t(t * c.H + h)], 0) << "token " << t << " col " << h;
  }
}

// Runs the layer twice (poisoned output each time): matches the reference, bit-identical reruns.
void run_case(const Config& c, uint32_t seed) {
  SCOPED_TRACE(c.name() + " seed " + std::to_string(seed));
  const Layer L = make_layer(c, seed);
  const RefOut ref = reference_run(L, L.sel);
  DeviceLayer D(L);
  const size_t ws_bytes = moe_workspace_bytes(D.p);
  DeviceBuffer<uint8_t> ws(ws_bytes);
  std::vector<uint16_t> first;
  for (int rep = 0; rep < 2; ++rep) {
    D.out.poison();
    ws.poison();  // the pipeline must not depend on the workspace's previous contents
    FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> got = D.out.download();
    if (rep == 0) {
      const Compare r = compare(got, ref, c.act);
      EXPECT_EQ(r.nonfinite, 0);
      EXPECT_LE(r.rel, 5e-3);
      expect_zero_rows(L, L.sel, got);
      first = got;
    } else {
      EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * 2), 0) << "not bit-identical run to run";
    }
  }
}

}  // namespace

TEST(MoeGpu, W4A16MatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 1000;
  for (DType act : {DType::kBF16, DType::kFP16}) {
    for (int64_t T : {1, 3, 17, 100}) {
      run_case({T, 128, 128, 8, 2, 1, 0, MoeMode::kW4A16, act}, seed++);
      run_case({T, 256, 192, 16, 4, 2, 1, MoeMode::kW4A16, act}, seed++);
      if (HasFailure()) return;
    }
  }
}

TEST(MoeGpu, W4A4MatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 2000;
  for (int64_t T : {1, 3, 17, 100}) {
    Config a{T, 128, 128, 8, 2, 1, 0, MoeMode::kW4A4, DType::kBF16};
    run_case(a, seed++);
    Config b{T, 256, 192, 16, 4, 2, 0, MoeMode::kW4A4, DType::kFP16};
    b.per_expert_globals = true;
    run_case(b, seed++);
    Config f{T, 256, 128, 16, 4, 2, 1, MoeMode::kW4A4, DType::kBF16};  // pre-quantized input
    f.fp4_input = true;
    run_case(f, seed++);
    Config g{T, 128, 192, 8, 2, 1, 0, MoeMode::kW4A4, DType::kFP16};
    g.fp4_input = true;
    g.per_expert_globals = true;
    run_case(g, seed++);
    if (HasFailure()) return;
  }
}

// The per-entry W4A4 staging kernel (per_entry_stage_x_kernel: the FC1 input computed once per row
// before kernel A) runs only past kPrestageMinWork, which the shapes above do not reach: 16-bit input
// (quantized), NVFP4 input (decoded), per-expert global scales (a row per entry), and expert slices
// (T = 2 with 8 experts) reading the staged rows.
TEST(MoeGpu, PerEntryPrestagedInput) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 2500;
  for (int64_t T : {1, 2}) {
    Config c{T, 2560, 512, 8, 8, 1, 0, MoeMode::kW4A4, DType::kBF16};
    c.path = MoePath::kPerEntry;
    ASSERT_TRUE(moe_impl::per_entry_prestages(c.T, c.k, c.I, c.H));
    run_case(c, seed++);
    Config q = c;
    q.fp4_input = true;
    q.act = DType::kFP16;
    run_case(q, seed++);
    Config e = c;
    e.per_expert_globals = true;
    run_case(e, seed++);
    if (HasFailure()) return;
  }
}

// Weights handed to prepack_moe_weights with 128x4 scales; a workspace sized for more tokens.
TEST(MoeGpu, SwizzledWeightScalesAndLargerWorkspace) {
  FP4KIT_REQUIRE_SM90A();
  Config c{17, 256, 192, 16, 4, 2, 1, MoeMode::kW4A16, DType::kBF16};
  c.weights_128x4 = true;
  c.max_tokens = 1000;
  run_case(c, 3000);
  c.mode = MoeMode::kW4A4;
  c.max_tokens = 5000;  // the workspace now also covers the multi-kernel permutation
  run_case(c, 3001);
}

// The multi-kernel permutation: more than 4096 expanded rows, more than 512 local experts, several
// chunks; and the fused kernel at its limit.
TEST(MoeGpu, PermutationPaths) {
  FP4KIT_REQUIRE_SM90A();
  run_case({512, 128, 64, 16, 8, 1, 0, MoeMode::kW4A16, DType::kBF16}, 4000);   // 4096 rows: fused
  run_case({600, 128, 64, 16, 8, 1, 0, MoeMode::kW4A16, DType::kBF16}, 4001);   // 4800 rows: 2 chunks
  run_case({1100, 64, 64, 64, 8, 2, 1, MoeMode::kW4A4, DType::kFP16}, 4002);    // 8800 rows: 3 chunks
  // W4A4 on the multi-kernel path: one activation global scale quantizes each token once and the
  // gather copies (launch_quantize_rows); per-expert scales quantize each entry in the gather.
  run_case({1100, 192, 64, 16, 4, 1, 0, MoeMode::kW4A4, DType::kBF16}, 4005);
  run_case({1100, 192, 64, 16, 4, 1, 0, MoeMode::kW4A4, DType::kBF16, false, true}, 4006);
  Config many{8, 64, 64, 1026, 2, 1, 0, MoeMode::kW4A16, DType::kBF16};  // E_local > 512 (kAuto: per-entry)
  many.path = MoePath::kPipeline;
  run_case(many, 4003);
  run_case({300, 64, 64, 2048, 8, 1, 0, MoeMode::kW4A16, DType::kFP16}, 4004);  // E_local 2048: 8-warp chunks, 2 of them
}

namespace {
// Runs c with a process-wide override (`set`: moe_impl's set_*_override) forced off and on: both
// runs match the CPU reference and each other bit for bit.
void expect_forced_bit_identical(const Config& c, uint32_t seed, int (*set)(int), const char* what) {
  const Layer L = make_layer(c, seed);
  const RefOut ref = reference_run(L, L.sel);
  DeviceLayer D(L);
  const size_t ws_bytes = moe_workspace_bytes(D.p);
  DeviceBuffer<uint8_t> ws(ws_bytes);
  std::vector<uint16_t> out[2];
  for (int forced : {0, 1}) {
    set(forced);
    D.out.poison();
    ws.poison();
    FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    out[forced] = D.out.download();
    const Compare r = compare(out[forced], ref, c.act);
    EXPECT_EQ(r.nonfinite, 0) << "forced " << forced;
    EXPECT_LE(r.rel, 5e-3) << "forced " << forced;
  }
  EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * 2), 0) << what;
}

// expect_forced_bit_identical over `cases` (seeds seed, seed + 1, ...), stopping at the first failure;
// the override is back at its value from before (an FP4KIT_* variable's, or the rule) afterwards.
void expect_cases_forced_bit_identical(const std::vector<Config>& cases, uint32_t seed, int (*set)(int),
                                       const char* what) {
  struct Restore {
    int (*set)(int);
    int previous;
    ~Restore() { set(previous); }
  } restore{set, set(-1)};
  for (const Config& c : cases) {
    SCOPED_TRACE(c.name());
    expect_forced_bit_identical(c, seed++, set, what);
    if (::testing::Test::HasFailure()) return;
  }
}

std::vector<Config> on_path(std::vector<Config> cases, MoePath path) {
  for (Config& c : cases) c.path = path;
  return cases;
}
}  // namespace

// The per-entry path's kernel A asking L2 for kernel B's FC2 rows, with kernel B walking the tokens
// last to first (moe_impl::per_entry_fc2_prefetch_entries; forced on every entry here), changes no
// bits: expert slices (repeated experts at T = 3), expert parallelism with W4A4, and H < 4096, where
// the rule alone would not prefetch.
TEST(MoeGpu, PerEntryFc2PrefetchBitIdentical) {
  FP4KIT_REQUIRE_SM90A();
  expect_cases_forced_bit_identical(on_path({{3, 4096, 256, 16, 8, 1, 0, MoeMode::kW4A16, DType::kBF16},
                                             {2, 1344, 128, 64, 4, 2, 1, MoeMode::kW4A4, DType::kFP16},
                                             {3, 2048, 512, 64, 8, 1, 0, MoeMode::kW4A4, DType::kBF16}},
                                            MoePath::kPerEntry),
                                    4400, moe_impl::set_fc2_l2_prefetch_override,
                                    "kernel A's FC2 prefetch changed the output");
}

// The per-entry path's kernel B with 4 or 8 row tiles per CTA (moe_impl::per_entry_fc2_row_tiles; forced
// to the most that divide H / 16 here: 8, or 4 at H = 1088, against the two-tile rule, which takes 1 or 2)
// changes no bits: rows of 4 chunks (I = 256: 1, 2 or 4 load groups per unit), of 12 with K split over
// the warps (few local slots), W4A4 in both dtypes, and expert parallelism (tokens with few or no local
// slots).
TEST(MoeGpu, PerEntryFc2WideCtasBitIdentical) {
  FP4KIT_REQUIRE_SM90A();
  expect_cases_forced_bit_identical(
      on_path({{4, 2048, 256, 64, 8, 1, 0, MoeMode::kW4A16, DType::kBF16},
               {3, 1088, 256, 32, 8, 1, 0, MoeMode::kW4A4, DType::kFP16},
               {2, 1536, 768, 16, 2, 1, 0, MoeMode::kW4A4, DType::kBF16},
               {4, 1024, 256, 64, 4, 4, 3, MoeMode::kW4A16, DType::kFP16}},  // expert parallel: 16 local experts
              MoePath::kPerEntry),
      4500, moe_impl::set_fc2_wide_ctas_override, "kernel B with 4 or 8 row tiles per CTA changed the output");
}

// W4A4's elementwise round trips (SwiGLU's requantization, the multi-kernel path's per-token
// quantization and its per-expert-scale gather) with one thread per 16-element block — what large batches take
// (moe_impl::quant_thread_per_block) — give the same bits as with four lanes per block; both
// forced here on shapes that the rule alone would keep on four lanes. One activation global scale
// (quantize_rows) and per-expert scales (the gather quantizes each entry, SwiGLU reads each row's).
TEST(MoeGpu, W4A4ThreadPerBlockRoundTripsBitIdentical) {
  FP4KIT_REQUIRE_SM90A();
  std::vector<Config> cases;
  for (bool per_expert : {false, true})
    for (DType act : {DType::kBF16, DType::kFP16})
      cases.push_back(Config{1100, 192, 64, 16, 4, 1, 0, MoeMode::kW4A4, act, false, per_expert});
  expect_cases_forced_bit_identical(cases, 4200, moe_impl::set_quant_thread_per_block_override,
                                    "one thread per block differs from four lanes per block");
}

// The pipeline's FC1 reading its token rows in place (moe_impl::fc1_row_gather_enabled: one TMA row
// box per row, no gather kernel) against the gathered copy: the same bits. More than 4096 rows (the
// multi-kernel permutation) and 175..215 rows per expert with 2I >= 256 (FC1 on the 256x128 tile,
// the one that gathers; 113..160 rows take the 160-token tile since session 36); W4A16 in both dtypes, W4A4 with one activation global (tokens quantized
// once, read in place) and per expert (gathered either way), and expert parallelism.
TEST(MoeGpu, Fc1RowGatherBitIdenticalToGatheredCopy) {
  const std::vector<Config> cases = {
      {1400, 192, 128, 32, 4, 1, 0, MoeMode::kW4A16, DType::kBF16},
      {1400, 192, 128, 32, 4, 1, 0, MoeMode::kW4A16, DType::kFP16},
      {1030, 256, 128, 24, 5, 1, 0, MoeMode::kW4A4, DType::kBF16},
      {1400, 192, 128, 64, 4, 2, 1, MoeMode::kW4A16, DType::kBF16},  // expert parallel: local rows only
      {1400, 192, 128, 32, 4, 1, 0, MoeMode::kW4A4, DType::kFP16, false, true},
  };
  // The shapes must keep FC1 on the gathering tile as fused_moe's heuristic picks it (no tuning cache
  // in the tests): checked before the GPU skip, so that a heuristic change that moves them shows in
  // CI too (session 36's 160-token tile took the first shapes of this test off the 256x128 tile).
  for (const Config& c : cases) {
    SCOPED_TRACE(c.name());
    gemm_impl::GroupedGemmParams g;
    g.groups = c.E / c.ep_size;
    g.max_rows = c.T * c.k;
    g.max_group_rows = c.T;
    g.n = 2 * c.I;
    g.k = c.H;
    const gemm_impl::GroupedTactic* t =
        gemm_impl::grouped_gemm_tactic(gemm_impl::grouped_gemm_default_tactic(g, /*rich=*/false));
    ASSERT_TRUE(t != nullptr && t->block_n == 256) << "FC1 would not run the 256x128 tile";
    ASSERT_TRUE(moe_impl::fc1_row_gather_pays(g.n, (g.max_rows + g.groups - 1) / g.groups));
  }
  FP4KIT_REQUIRE_SM90A();
  expect_cases_forced_bit_identical(cases, 4300, moe_impl::set_fc1_row_gather_override,
                                    "FC1 reading rows in place differs from the gathered copy");
}

// Hundreds of experts with tens to hundreds of rows each: the grouped wgmma tiles (several
// 32-group rounds of its on-device tile prefix) rather than the decode family.
TEST(MoeGpu, ManyExpertsLargeBatch) {
  FP4KIT_REQUIRE_SM90A();
  run_case({512, 128, 64, 256, 8, 1, 0, MoeMode::kW4A16, DType::kBF16}, 4100);   // 16 rows / expert
  run_case({4096, 128, 64, 256, 8, 1, 0, MoeMode::kW4A16, DType::kBF16}, 4101);  // 128 rows / expert
  // 128 rows per expert: FC1 on the 128x144 tile (n = 2I = 256), FC2 on 128x128 (n = H < 256); W4A4
  // copies the per-token quantized rows.
  run_case({2048, 128, 128, 64, 4, 1, 0, MoeMode::kW4A16, DType::kFP16}, 4102);
  run_case({2048, 192, 128, 64, 4, 1, 0, MoeMode::kW4A4, DType::kBF16}, 4103);
  // 550 rows per expert: 128x256 tiles; W4A4 with per-expert activation scales (the gather
  // quantizes every entry).
  run_case({1100, 128, 64, 8, 4, 1, 0, MoeMode::kW4A16, DType::kBF16}, 4104);
  run_case({1100, 128, 64, 8, 4, 1, 0, MoeMode::kW4A4, DType::kFP16, false, true}, 4105);
}

TEST(MoeGpu, EmptyBatch) {
  FP4KIT_REQUIRE_SM90A();
  Config c{4, 128, 128, 8, 2, 1, 0, MoeMode::kW4A16, DType::kBF16};
  const Layer L = make_layer(c, 5000);
  DeviceLayer D(L);
  D.out.poison();
  MoeParams p = D.p;
  p.num_tokens = 0;
  FP4_OK(fused_moe(p, nullptr, 0, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (uint16_t v : D.out.download()) ASSERT_EQ(v, 0xffff);  // nothing written
}

namespace {

// Tokens whose experts are all on the other rank get exact zeros; the others match the reference;
// a batch with no local expert at all is all zeros.
void non_local_tokens_give_zeros(const Config& c) {
  Layer L = make_layer(c, 6000);
  // Tokens 0, 4 and 8 only use experts of rank 1 (ids 4..7); token 1 one local, one not.
  for (int64_t t : {0, 4, 8}) {
    L.sel[size_t(t * 2)] = 5;
    L.sel[size_t(t * 2 + 1)] = 7;
  }
  L.sel[2] = 1;
  L.sel[3] = 6;
  const RefOut ref = reference_run(L, L.sel);
  DeviceLayer D(L);
  const size_t ws_bytes = moe_workspace_bytes(D.p);
  DeviceBuffer<uint8_t> ws(ws_bytes);
  D.out.poison();
  FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint16_t> got = D.out.download();
  expect_zero_rows(L, L.sel, got);
  for (int64_t h = 0; h < c.H; ++h) EXPECT_EQ(got[size_t(4 * c.H + h)], 0);
  const Compare r = compare(got, ref, c.act);
  EXPECT_EQ(r.nonfinite, 0);
  EXPECT_LE(r.rel, 5e-3);

  // Every token non-local: all zeros.
  for (auto& e : L.sel) e = 4 + (e % 4);
  DeviceLayer D2(L);
  D2.out.poison();
  FP4_OK(fused_moe(D2.p, ws.ptr, ws_bytes, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (uint16_t v : D2.out.download()) ASSERT_EQ(v, 0);
}

}  // namespace

// Every path (kAuto takes the pipeline here); on the fused-decode path no local expert at all means
// no unit to run, and the kernel writes the zeros itself.
TEST(MoeGpu, NonLocalTokensGiveZeros) {
  FP4KIT_REQUIRE_SM90A();
  for (MoePath path : {MoePath::kAuto, MoePath::kFusedDecode}) {
    SCOPED_TRACE(path == MoePath::kAuto ? "auto" : "fused-decode");
    Config c{9, 128, 128, 8, 2, 2, 0, MoeMode::kW4A16, DType::kBF16};
    c.path = path;
    non_local_tokens_give_zeros(c);
    if (HasFailure()) return;
  }
}

TEST(MoeGpu, InvalidExpertIds) {
  FP4KIT_REQUIRE_SM90A();
  // ep_size 2, rank 0: local experts 0..3; an invalid id must behave as a non-local one.
  for (int32_t bad : {8, -1, 1 << 30}) {
    // fused and multi-kernel permutation; the fused-decode path (its kernel after the check)
    for (int variant : {0, 1, 2}) {
      const bool large = variant == 1;
      SCOPED_TRACE("bad id " + std::to_string(bad) + (large ? " multi-kernel" : variant == 2 ? " fused-decode" : " fused"));
      Config c{large ? 2100 : 5, 128, 64, 8, 2, 2, 0, MoeMode::kW4A16, DType::kBF16};
      if (variant == 2) c.path = MoePath::kFusedDecode;
      Layer L = make_layer(c, 7000 + (large ? 1 : 0));
      std::vector<int32_t> sel_ref = L.sel;
      const size_t at = size_t(c.T * c.k - 3);  // (T-2, 1)
      L.sel[at] = bad;
      sel_ref[at] = 4 + (L.sel[at - 1] == 4 ? 1 : 0);  // a non-local expert the token does not use
      DeviceLayer D(L);
      const size_t ws_bytes = moe_workspace_bytes(D.p);
      DeviceBuffer<uint8_t> ws(ws_bytes);

      D.out.poison();
      D.p.check_expert_ids = true;
      const Status s = fused_moe(D.p, ws.ptr, ws_bytes, nullptr);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
      EXPECT_NE(s.message().find("fused_moe: selected_experts holds an expert id outside [0, E)"), std::string::npos)
          << s.message();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (uint16_t v : D.out.download()) ASSERT_EQ(v, 0xffff);  // output untouched

      D.p.check_expert_ids = false;
      FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<uint16_t> got = D.out.download();
      const RefOut ref = reference_run(L, sel_ref);
      const Compare r = compare(got, ref, c.act);
      EXPECT_EQ(r.nonfinite, 0);
      EXPECT_LE(r.rel, 5e-3);

      // A valid batch after a bad one: the flag is cleared.
      D.p.check_expert_ids = true;
      D.sel.upload(sel_ref);
      FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      if (HasFailure()) return;
    }
  }
}

// A token may repeat an expert as long as no expert gets more than T rows (the grouped GEMMs'
// max_group_rows); beyond that the permutation flags it and check_expert_ids reports it.
TEST(MoeGpu, RepeatedExperts) {
  FP4KIT_REQUIRE_SM90A();
  for (bool large : {false, true}) {
    SCOPED_TRACE(large ? "multi-kernel" : "fused");
    Config c{large ? 2100 : 3, 128, 64, 8, 2, 1, 0, MoeMode::kW4A16, DType::kBF16};
    Layer L = make_layer(c, 7500 + (large ? 1 : 0));
    // Token 0 selects expert 3 twice; the others avoid 3: expert 3 gets 2 <= T rows.
    for (int64_t t = 1; t < c.T; ++t)
      for (int64_t j = 0; j < c.k; ++j)
        if (L.sel[size_t(t * c.k + j)] == 3) L.sel[size_t(t * c.k + j)] = L.sel[size_t(t * c.k + 1 - j)] == 4 ? 5 : 4;
    L.sel[0] = L.sel[1] = 3;
    const RefOut ref = reference_run(L, L.sel);
    DeviceLayer D(L);
    const size_t ws_bytes = moe_workspace_bytes(D.p);
    DeviceBuffer<uint8_t> ws(ws_bytes);
    D.out.poison();
    FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Compare r = compare(D.out.download(), ref, c.act);
    EXPECT_EQ(r.nonfinite, 0);
    EXPECT_LE(r.rel, 5e-3);

    // Every token selects expert 3 twice: 2T rows.
    for (auto& e : L.sel) e = 3;
    D.sel.upload(L.sel);
    D.out.poison();
    const Status s = fused_moe(D.p, ws.ptr, ws_bytes, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find("selects the same expert twice"), std::string::npos) << s.message();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (uint16_t v : D.out.download()) ASSERT_EQ(v, 0xffff);
  }
}

namespace {

// The layer (c.path) captured in a CUDA graph: replays are bit-identical to a direct call, which
// matches the reference; check_expert_ids (a synchronization) is refused while capturing.
void expect_graph_replays_bit_identical(const Config& c, uint32_t seed) {
  SCOPED_TRACE(c.name());
  const Layer L = make_layer(c, seed);
  DeviceLayer D(L);
  const size_t ws_bytes = moe_workspace_bytes(D.p);
  DeviceBuffer<uint8_t> ws(ws_bytes);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);

  D.p.check_expert_ids = false;
  D.out.poison();
  FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, stream));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const std::vector<uint16_t> direct = D.out.download();
  EXPECT_LE(compare(direct, reference_run(L, L.sel), c.act).rel, 5e-3);

  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  MoeParams checked = D.p;
  checked.check_expert_ids = true;
  const Status refused = fused_moe(checked, ws.ptr, ws_bytes, stream);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.to_string();
  const Status captured = fused_moe(D.p, ws.ptr, ws_bytes, stream);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int rep = 0; rep < 3; ++rep) {
    D.out.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<uint16_t> got = D.out.download();
    EXPECT_EQ(std::memcmp(direct.data(), got.data(), got.size() * 2), 0) << "replay " << rep;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace

TEST(MoeGpu, GraphCaptureReplaysBitIdentical) {
  FP4KIT_REQUIRE_SM90A();
  for (int64_t T : {1, 700})
    expect_graph_replays_bit_identical({T, 256, 128, 16, 8, 1, 0, MoeMode::kW4A4, DType::kBF16}, 8000 + uint32_t(T));
}

namespace {

// The producer of a layer's inputs, as a router or the previous layer would be: lets its dependents
// launch at once, then, after ~20 us, writes the routing ids and the hidden states (words) that the
// layer must read. A layer whose first kernels read them before waiting for this grid sees the
// wrong ids and zero inputs left by the copies before it.
__global__ void delayed_producer_kernel(const int32_t* sel_src, int32_t* sel, int sel_n, const uint32_t* x_src,
                                        uint32_t* x, int x_n) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const long long t0 = clock64();
  while (clock64() - t0 < 40000) __nanosleep(1000);
  for (int i = threadIdx.x; i < sel_n; i += blockDim.x) sel[i] = sel_src[i];
  for (int i = threadIdx.x; i < x_n; i += blockDim.x) x[i] = x_src[i];
}

// MoeParams::enable_pdl: two layers (different weights, routing and inputs) sharing one workspace,
// called back to back A, B, A, B with programmatic dependent launch, directly in a stream and
// captured in a graph, each behind a delayed producer of its routing and input (above) that
// triggers at once. Each call's first kernel may start while the previous call still reads the
// shared workspace and while its producer still writes: the outputs must equal the calls made one
// at a time without PDL, bit for bit.
void expect_pdl_back_to_back_bit_identical(Config c, uint32_t seed) {
  SCOPED_TRACE(c.name() + " pdl");
  const Layer La = make_layer(c, seed), Lb = make_layer(c, seed + 1);
  DeviceLayer Da(La), Db(Lb);
  const size_t ws_bytes = std::max(moe_workspace_bytes(Da.p), moe_workspace_bytes(Db.p));
  DeviceBuffer<uint8_t> ws(ws_bytes);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  Da.p.check_expert_ids = Db.p.check_expert_ids = false;

  std::vector<uint16_t> want[2];
  DeviceLayer* layers[2] = {&Da, &Db};
  for (int i = 0; i < 2; ++i) {
    layers[i]->out.poison();
    FP4_OK(fused_moe(layers[i]->p, ws.ptr, ws_bytes, stream));
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    want[i] = layers[i]->out.download();
  }
  EXPECT_LE(compare(want[0], reference_run(La, La.sel), c.act).rel, 5e-3);

  // Per layer: the right routing and input (sources of the producer) and a wrong routing (a valid id
  // shifted by one expert) that is copied in before the producer runs; the input is zeroed.
  ASSERT_TRUE(!c.fp4_input);
  struct Inputs {
    DeviceBuffer<int32_t> sel, wrong_sel;
    DeviceBuffer<uint16_t> x;
    explicit Inputs(const Layer& L) : sel(L.sel.size()), wrong_sel(L.sel.size()), x(L.input16.size()) {
      sel.upload(L.sel);
      std::vector<int32_t> wrong = L.sel;
      for (int32_t& e : wrong) e = int32_t((e + 1) % L.c.E);
      wrong_sel.upload(wrong);
      x.upload(L.input16);
    }
  };
  Inputs ia(La), ib(Lb);
  MoeParams pa = Da.p, pb = Db.p;
  pa.enable_pdl = pb.enable_pdl = true;
  auto call = [&](DeviceLayer& D, Inputs& in, const MoeParams& p) {
    ASSERT_EQ(cudaMemcpyAsync(D.sel.ptr, in.wrong_sel.ptr, D.sel.count * 4, cudaMemcpyDeviceToDevice, stream),
              cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(D.input16.ptr, 0, D.input16.count * 2, stream), cudaSuccess);
    delayed_producer_kernel<<<1, 256, 0, stream>>>(in.sel.ptr, D.sel.ptr, int(D.sel.count),
                                                   reinterpret_cast<const uint32_t*>(in.x.ptr),
                                                   reinterpret_cast<uint32_t*>(D.input16.ptr), int(D.input16.count / 2));
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    FP4_OK(fused_moe(p, ws.ptr, ws_bytes, stream));
  };
  auto four_calls = [&]() {
    for (int rep = 0; rep < 2; ++rep) {
      call(Da, ia, pa);
      call(Db, ib, pb);
    }
  };
  auto expect_outputs = [&](const char* what) {
    EXPECT_EQ(std::memcmp(want[0].data(), Da.out.download().data(), want[0].size() * 2), 0) << what << ": A";
    EXPECT_EQ(std::memcmp(want[1].data(), Db.out.download().data(), want[1].size() * 2), 0) << what << ": B";
  };
  Da.out.poison();
  Db.out.poison();
  four_calls();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_outputs("stream");

  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  four_calls();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int rep = 0; rep < 3; ++rep) {
    Da.out.poison();
    Db.out.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    expect_outputs("graph");
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace

// Every path's first kernel: per-entry (T = 1; W4A4 with the staging kernel first), fused-decode,
// and the pipeline with the fused permutation.
TEST(MoeGpu, PdlBackToBackLayersBitIdentical) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 16000;
  for (MoePath path : {MoePath::kPerEntry, MoePath::kFusedDecode, MoePath::kPipeline})
    for (MoeMode mode : {MoeMode::kW4A16, MoeMode::kW4A4}) {
      Config c{path == MoePath::kPerEntry ? 1 : 12, 512, 256, 32, 8, 1, 0, mode, DType::kBF16};
      c.path = path;
      expect_pdl_back_to_back_bit_identical(c, seed += 2);
    }
  // W4A4 per-entry with the FC1-input staging kernel first (entries x I/16 x H >= 640 Ki).
  Config big{2, 2048, 512, 64, 8, 1, 0, MoeMode::kW4A4, DType::kBF16};
  big.path = MoePath::kPerEntry;
  expect_pdl_back_to_back_bit_identical(big, 16100);
}

TEST(MoeGpu, PrepackMatchesPerExpertPrepack) {
  FP4KIT_REQUIRE_SM90A();
  std::mt19937 rng(9000);
  const int64_t experts = 5, n = 200, k = 144;  // ragged n, k not a multiple of 64
  for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kSwizzled128x4}) {
    std::vector<uint8_t> codes, scales;
    for (int64_t e = 0; e < experts; ++e) {
      const auto w = random_16bit(n * k, DType::kBF16, rng, 0.1f);
      const Quantized q = quantize_cpu(w.data(), DType::kBF16, n, k, layout);
      codes.insert(codes.end(), q.codes.begin(), q.codes.end());
      scales.insert(scales.end(), q.scales.begin(), q.scales.end());
    }
    const int64_t per_scales = scale_buffer_bytes(BlockFormat::kNVFP4, layout, n, k);
    ASSERT_EQ(int64_t(scales.size()), experts * per_scales);
    DeviceBuffer<uint8_t> dc(codes.size()), ds(scales.size());
    dc.upload(codes);
    ds.upload(scales);
    const int64_t bytes = moe_prepacked_weight_bytes(experts, n, k);
    const int64_t one = prepacked_weight_bytes(n, k);
    DeviceBuffer<uint8_t> all(static_cast<size_t>(bytes)), each(static_cast<size_t>(bytes));
    all.poison();
    each.poison();
    MoeWeightPrepackParams mp;
    mp.experts = experts;
    mp.n = n;
    mp.k = k;
    mp.codes = dc.ptr;
    mp.scales = ds.ptr;
    mp.scale_layout = layout;
    mp.out = all.ptr;
    mp.out_bytes = bytes;
    FP4_OK(prepack_moe_weights(mp, nullptr));
    for (int64_t e = 0; e < experts; ++e) {
      WeightPrepackParams wp;
      wp.n = n;
      wp.k = k;
      wp.codes = dc.ptr + e * n * k / 2;
      wp.scales = ds.ptr + e * per_scales;
      wp.scale_layout = layout;
      wp.out = each.ptr + e * one;
      wp.out_bytes = one;
      FP4_OK(prepack_weights(wp, nullptr));
    }
    EXPECT_TRUE(all.download() == each.download()) << scale_layout_name(layout);

    // A NaN block scale in the last expert is reported.
    std::vector<uint8_t> bad = scales;
    bad[bad.size() - 1] = 0x7f;
    if (layout == ScaleLayout::kSwizzled128x4) bad[size_t((experts - 1) * per_scales)] = 0x7f;  // a real row
    ds.upload(bad);
    const Status s = prepack_moe_weights(mp, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  }
}

// ---- the fused-decode path (src/moe/fused_decode.cu) ---------------------------------------------------------------
namespace {
Config fused_decode(Config c) {
  c.path = MoePath::kFusedDecode;
  return c;
}
}  // namespace

// One persistent kernel for FC1 + SwiGLU, FC2 and finalize after the permutation. Shapes cover the
// kernel's branches: K = H of 2, 4 and 8 chunks (one pair, two pairs, the pipelined loop); FC2's
// K = I of 2, 3 (an odd last chunk) and 4 chunks; experts with more than 8 rows (several token tiles
// per unit: T = 40 over 8 experts); an expert-parallel slice; FC1 units split along K into 2 parts
// (H = 1024) and 4 parts (H = 2048: few experts x I/16 units), whose experts with more than 8 rows
// (T = 40) fall back to one part; FC2 units of 64 rows (I <= 256) and of 32 rows (I = 320).
TEST(MoeGpu, FusedDecodeMatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 9500;
  const int sms = device_info().sm_count;
  for (DType act : {DType::kBF16, DType::kFP16}) {
    for (int64_t T : {1, 3, 17, 40}) {
      run_case(fused_decode({T, 128, 128, 8, 2, 1, 0, MoeMode::kW4A16, act}), seed++);
      run_case(fused_decode({T, 256, 192, 16, 4, 2, 1, MoeMode::kW4A16, act}), seed++);
      run_case(fused_decode({T, 512, 256, 64, 8, 1, 0, MoeMode::kW4A16, act}), seed++);
      EXPECT_EQ(moe_impl::fused_decode_fc1_parts(T, 4, 2048, 128, 16, sms), 4);
      run_case(fused_decode({T, 2048, 128, 16, 4, 1, 0, MoeMode::kW4A16, act}), seed++);
      EXPECT_EQ(moe_impl::fused_decode_fc1_parts(T, 4, 1024, 192, 8, sms), 2);
      run_case(fused_decode({T, 1024, 192, 16, 4, 2, 1, MoeMode::kW4A16, act}), seed++);
      EXPECT_EQ(moe_impl::fused_decode_fc2_blocks(320), 1);
      run_case(fused_decode({T, 384, 320, 16, 4, 1, 0, MoeMode::kW4A16, act}), seed++);
      if (HasFailure()) return;
    }
  }
}

// W4A4: the FC1 epilogue quantizes h over 16-row blocks spread across 8 lanes (one or per-expert
// activation global scales), 16-bit and pre-quantized inputs; FC1 in 4 parts; 32-row FC2 units. One
// global scale with a 16-bit input, and a pre-quantized input, take the permutation's token rows
// (GatherArgs::token_rows: BF16 and FP16, H > 2I and H < 2I) except with k = 1 (x does not fit
// behind h in gemm_out: the gather of quantized rows).
TEST(MoeGpu, FusedDecodeW4A4MatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 9600;
  for (int64_t T : {1, 5, 40}) {
    run_case(fused_decode({T, 256, 256, 16, 4, 1, 0, MoeMode::kW4A4, DType::kBF16}), seed++);
    run_case(fused_decode({T, 256, 192, 16, 4, 2, 0, MoeMode::kW4A4, DType::kFP16, false, true}), seed++);
    run_case(fused_decode({T, 256, 128, 16, 4, 2, 1, MoeMode::kW4A4, DType::kBF16, true}), seed++);
    run_case(fused_decode({T, 2048, 128, 16, 4, 1, 0, MoeMode::kW4A4, DType::kFP16, false, true}), seed++);
    run_case(fused_decode({T, 256, 512, 16, 4, 1, 0, MoeMode::kW4A4, DType::kBF16}), seed++);
    run_case(fused_decode({T, 512, 128, 16, 2, 1, 0, MoeMode::kW4A4, DType::kFP16}), seed++);
    run_case(fused_decode({T, 256, 192, 8, 1, 1, 0, MoeMode::kW4A4, DType::kBF16}), seed++);
    run_case(fused_decode({T, 2048, 128, 16, 4, 1, 0, MoeMode::kW4A4, DType::kFP16, true}), seed++);
    if (HasFailure()) return;
  }
}

// Graph replay: the permutation clears the kernel's counters on every call.
TEST(MoeGpu, FusedDecodeGraphReplaysBitIdentical) {
  FP4KIT_REQUIRE_SM90A();
  for (MoeMode mode : {MoeMode::kW4A16, MoeMode::kW4A4}) {
    Config c{12, 512, 256, 32, 8, 1, 0, mode, DType::kBF16};
    c.path = MoePath::kFusedDecode;
    expect_graph_replays_bit_identical(c, 9800 + uint32_t(mode));
  }
}

// All but 4 SMs are held by a kernel in another stream that lets go only once the layer has finished
// (tests/common/sm_holder.cuh). The fused-decode kernel's grid is a full wave for the whole GPU, so
// most of its CTAs cannot start: it must finish on the 4 SMs left, which it can only if no running
// warp waits for work held by a CTA that has not started (docs/MOE.md "Fused-decode path"). A hang
// shows as the holder's 3 s timeout. The output must equal the unobstructed run's, bit for bit.
TEST(MoeGpu, FusedDecodeFinishesOnTheSmsLeftFree) {
  FP4KIT_REQUIRE_SM90A();
  for (MoeMode mode : {MoeMode::kW4A16, MoeMode::kW4A4}) {
    Config c{16, 2048, 128, 64, 8, 1, 0, mode, DType::kBF16};
    c.path = MoePath::kFusedDecode;
    SCOPED_TRACE(c.name());
    const Layer L = make_layer(c, 9900 + uint32_t(mode));
    DeviceLayer D(L);
    D.p.check_expert_ids = false;
    const size_t ws_bytes = moe_workspace_bytes(D.p);
    DeviceBuffer<uint8_t> ws(ws_bytes);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    D.out.poison();
    FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, stream));
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<uint16_t> alone = D.out.download();
    EXPECT_LE(compare(alone, reference_run(L, L.sel), c.act).rel, 5e-3);

    sm_holder::SmHolder holder;
    ASSERT_TRUE(holder.hold(4)) << "the holder did not occupy its SMs";
    // (poison on the layer's stream: a legacy-stream memset is not ordered with a non-blocking stream)
    ASSERT_EQ(cudaMemsetAsync(D.out.ptr, 0xff, D.out.count * 2, stream), cudaSuccess);
    FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, stream));
    holder.release_after(stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_FALSE(holder.timed_out()) << "the layer waited for SMs held until it finished (deadlock)";
    const std::vector<uint16_t> got = D.out.download();
    EXPECT_EQ(std::memcmp(alone.data(), got.data(), got.size() * 2), 0) << "not bit-identical to the run alone";
    cudaStreamDestroy(stream);
  }
}

// ---- the per-entry small-batch path (src/moe/per_entry.cu) -------------------------------------------------------
namespace {

const char* path_name(MoePath p) {
  return p == MoePath::kPerEntry ? "per-entry" : p == MoePath::kPipeline ? "pipeline" : "auto";
}

// `base` restricted to its first T tokens with the 16-bit activations re-drawn in `act` (the
// weights, drawn in BF16, do not depend on the activation dtype; W4A16 alphas likewise).
Layer derive_layer(const Layer& base, int64_t T, DType act, uint32_t seed) {
  Layer L = base;
  L.c.T = T;
  L.c.act = act;
  std::mt19937 rng(seed);
  L.input16 = random_16bit(T * L.c.H, act, rng, 1.0f);
  L.sel.resize(size_t(T * L.c.k));
  L.scales.resize(size_t(T * L.c.k));
  return L;
}

// Expert parallelism (ep_size 2): token 1 (if any) gets only experts of the other rank (its output
// must be +0), and slot k-1 of token 0 an invalid id `bad` (treated as not routed). Returns the
// routing the reference sees: the invalid id replaced by a non-local expert token 0 does not use.
std::vector<int32_t> add_nonlocal_and_invalid(Layer& L, int32_t bad) {
  const Config& c = L.c;
  const int64_t other = (c.ep_rank + 1) % c.ep_size;
  const int64_t first_other = other * L.e_local;
  if (c.T >= 2)
    for (int64_t j = 0; j < c.k; ++j) L.sel[size_t(c.k + j)] = int32_t(first_other + j);
  std::vector<int32_t> sel_ref = L.sel;
  int32_t unused = int32_t(first_other);
  auto used = [&](int32_t e) {
    for (int64_t j = 0; j < c.k; ++j)
      if (L.sel[size_t(j)] == e) return true;
    return false;
  };
  while (used(unused)) ++unused;
  L.sel[size_t(c.k - 1)] = bad;
  sel_ref[size_t(c.k - 1)] = unused;
  return sel_ref;
}

// fused_moe with `path` forced, twice on a poisoned output and workspace: the reference tolerance,
// exact zeros for tokens without a local expert, bit-identical reruns. Returns the output.
std::vector<uint16_t> run_forced(DeviceLayer& D, const Layer& L, const std::vector<int32_t>& sel_ref,
                                 const RefOut& ref, MoePath path) {
  SCOPED_TRACE(std::string("path ") + path_name(path));
  MoeParams p = D.p;
  p.path = path;
  p.check_expert_ids = false;  // the routing may hold an invalid id on purpose
  const size_t ws_bytes = moe_workspace_bytes(p);
  EXPECT_GT(ws_bytes, 0u);
  DeviceBuffer<uint8_t> ws(ws_bytes);
  std::vector<uint16_t> first;
  for (int rep = 0; rep < 2; ++rep) {
    D.out.poison();
    ws.poison();
    const Status s = fused_moe(p, ws.ptr, ws_bytes, nullptr);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> got = D.out.download();
    if (rep == 0) {
      const Compare r = compare(got, ref, L.c.act);
      EXPECT_EQ(r.nonfinite, 0);
      EXPECT_LE(r.rel, 5e-3);
      expect_zero_rows(L, sel_ref, got);
      first = got;
    } else {
      EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * 2), 0) << "not bit-identical run to run";
    }
  }
  return first;
}

// Both paths against the reference and each other (the GEMM summation orders differ, so the two
// need not be bit-equal; both are within the reference tolerance).
void run_both_paths(const Layer& L, const std::vector<int32_t>& sel_ref) {
  SCOPED_TRACE(L.c.name());
  const RefOut ref = reference_run(L, sel_ref);
  DeviceLayer D(L);
  const std::vector<uint16_t> per_entry = run_forced(D, L, sel_ref, ref, MoePath::kPerEntry);
  const std::vector<uint16_t> pipeline = run_forced(D, L, sel_ref, ref, MoePath::kPipeline);
  double num = 0, den = 0;
  for (size_t i = 0; i < per_entry.size(); ++i) {
    const double a = to_double(per_entry[i], L.c.act), b = to_double(pipeline[i], L.c.act);
    num += (a - b) * (a - b);
    den += b * b;
  }
  EXPECT_LE(std::sqrt(num / std::max(den, 1e-300)), 1e-2) << "per-entry vs pipeline";
}

}  // namespace

// W4A16, BF16 and FP16, T = 1..3, both paths forced: a small ragged shape and a Qwen-like one
// (H = 2048, I = 512, k = 8), with and without expert parallelism; under ep_size 2 one token has no
// local expert (zeros) and one slot an invalid id.
TEST(MoeGpu, PerEntryMatchesReferenceAndPipeline) {
  FP4KIT_REQUIRE_SM90A();
  struct Shape {
    int64_t H, I, E, k, ep_size, ep_rank;
  };
  uint32_t seed = 11000;
  // (H = 1344: 21 chunks over kernel A's 8 warps, so some warps run a full 2-chunk group and a
  // remainder; k = 32: kernel B's one-warp slot table full. Kernel A rolls where its grid fits one
  // wave of 2 CTAs per SM (H = 192 at every T here), and up to two waves with H >= 4096 (H = 4096, T = 3: 384
  // CTAs); kernel B rolls single row tiles where I <= 768 and H/16 x T CTAs fit a wave, else it takes
  // plain groups, two row tiles per CTA where one tile per CTA would pass 2 per SM (H = 2048, T = 3;
  // H = 4096, T >= 2; I = 832 at T = 3).)
  for (const Shape& s : {Shape{192, 128, 16, 4, 1, 0}, Shape{192, 128, 16, 4, 2, 1}, Shape{2048, 512, 64, 8, 2, 0},
                         Shape{1344, 128, 64, 32, 1, 0}, Shape{2048, 832, 16, 4, 1, 0}, Shape{4096, 256, 16, 8, 1, 0}}) {
    // Weights once per shape (the large one is 32 local experts of 3M weights).
    const Layer base = make_layer({3, s.H, s.I, s.E, s.k, s.ep_size, s.ep_rank, MoeMode::kW4A16, DType::kBF16}, seed++);
    for (DType act : {DType::kBF16, DType::kFP16}) {
      for (int64_t T : {1, 2, 3}) {
        Layer L = derive_layer(base, T, act, seed++);  // routing: base's first T tokens
        std::vector<int32_t> sel_ref = L.sel;
        if (s.ep_size > 1) sel_ref = add_nonlocal_and_invalid(L, T == 2 ? -1 : int32_t(s.E));
        run_both_paths(L, sel_ref);
        if (HasFailure()) return;
      }
    }
  }
}

// W4A4 (16-bit input quantized with fc1_act_global, pre-quantized NVFP4 input, per-expert act
// globals) through the per-entry path.
TEST(MoeGpu, PerEntryW4A4MatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 12000;
  for (int64_t T : {1, 2, 3}) {
    Config a{T, 128, 128, 8, 2, 1, 0, MoeMode::kW4A4, DType::kBF16};
    Config b{T, 256, 192, 16, 4, 2, 0, MoeMode::kW4A4, DType::kFP16};
    b.per_expert_globals = true;
    Config f{T, 256, 128, 16, 4, 2, 1, MoeMode::kW4A4, DType::kBF16};
    f.fp4_input = true;
    Config g{T, 128, 192, 8, 2, 1, 0, MoeMode::kW4A4, DType::kFP16};
    g.fp4_input = true;
    g.per_expert_globals = true;
    // H >= 4096: the FC1 input is precomputed once per token / entry (per_entry_stage_x_kernel).
    Config h{T, 4096, 64, 8, 2, 1, 0, MoeMode::kW4A4, DType::kBF16};
    Config i{T, 4096, 64, 8, 2, 2, 1, MoeMode::kW4A4, DType::kFP16};
    i.per_expert_globals = true;
    Config j{T, 4096, 64, 8, 2, 1, 0, MoeMode::kW4A4, DType::kBF16};
    j.fp4_input = true;
    for (const Config& c : {a, b, f, g, h, i, j}) {
      const Layer L = make_layer(c, seed++);
      run_both_paths(L, L.sel);
      if (HasFailure()) return;
    }
  }
}

// Kernel A's expert slices (per_entry_fc1_group): few experts chosen by many tokens, so one CTA
// computes several entries of its expert, and an expert with more entries than a slice holds is
// split over CTAs (E = 2, k = 2, T = 6, H = 4096: every expert has 6 entries, slices of 4 and 2);
// W4A16 and W4A4, with expert parallelism, against the reference, the pipeline and run to run.
TEST(MoeGpu, PerEntryExpertSlicesMatchReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 12500;
  Config a{6, 4096, 64, 2, 2, 1, 0, MoeMode::kW4A16, DType::kBF16};
  Config b{6, 4096, 64, 2, 2, 1, 0, MoeMode::kW4A4, DType::kFP16};
  Config c{5, 2048, 128, 8, 2, 1, 0, MoeMode::kW4A16, DType::kFP16};  // slices of up to 5 tokens
  Config d{7, 1024, 192, 4, 2, 2, 1, MoeMode::kW4A4, DType::kBF16};   // 2 local experts, 8-token slices
  d.per_expert_globals = true;
  Config e{4, 2048, 64, 4, 2, 1, 0, MoeMode::kW4A4, DType::kBF16};
  e.fp4_input = true;
  for (const Config& cfg : {a, b, c, d, e}) {
    const Layer L = make_layer(cfg, seed++);
    run_both_paths(L, L.sel);
    if (HasFailure()) return;
  }
}

// check_expert_ids on the per-entry path: a bad id is reported before the output is written; a
// token may repeat an expert (up to T rows per expert), beyond that it is reported as by the
// pipeline; ids are re-checked on every call.
TEST(MoeGpu, PerEntryChecksExpertIds) {
  FP4KIT_REQUIRE_SM90A();
  Config c{3, 128, 64, 8, 2, 2, 0, MoeMode::kW4A16, DType::kBF16};
  Layer L = make_layer(c, 13000);
  const std::vector<int32_t> good = L.sel;
  DeviceLayer D(L);
  D.p.path = MoePath::kPerEntry;
  D.p.check_expert_ids = true;
  const size_t ws_bytes = moe_workspace_bytes(D.p);
  DeviceBuffer<uint8_t> ws(ws_bytes);

  std::vector<int32_t> bad = good;
  bad[3] = 8;
  D.sel.upload(bad);
  D.out.poison();
  const Status s = fused_moe(D.p, ws.ptr, ws_bytes, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("fused_moe: selected_experts holds an expert id outside [0, E)"), std::string::npos)
      << s.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (uint16_t v : D.out.download()) ASSERT_EQ(v, 0xffff);  // output untouched

  // Token 0 repeats local expert 1 (2 rows <= T): fine, and computed as two slots.
  std::vector<int32_t> rep = good;
  for (int64_t t = 1; t < c.T; ++t)
    for (int64_t j = 0; j < c.k; ++j)
      if (rep[size_t(t * c.k + j)] == 1) rep[size_t(t * c.k + j)] = rep[size_t(t * c.k + 1 - j)] == 6 ? 7 : 6;
  rep[0] = rep[1] = 1;
  D.sel.upload(rep);
  D.out.poison();
  FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  L.sel = rep;
  const Compare r = compare(D.out.download(), reference_run(L, rep), c.act);
  EXPECT_EQ(r.nonfinite, 0);
  EXPECT_LE(r.rel, 5e-3);

  // Every slot expert 1: 2T rows.
  std::vector<int32_t> over(good.size(), 1);
  D.sel.upload(over);
  D.out.poison();
  const Status s2 = fused_moe(D.p, ws.ptr, ws_bytes, nullptr);
  EXPECT_EQ(s2.code(), StatusCode::kInvalidArgument) << s2.to_string();
  EXPECT_NE(s2.message().find("selects the same expert twice"), std::string::npos) << s2.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (uint16_t v : D.out.download()) ASSERT_EQ(v, 0xffff);

  // A valid batch again.
  D.sel.upload(good);
  FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// The per-entry path's two kernels (the second launched with programmatic dependent launch)
// captured in a CUDA graph, several layer calls back to back: replays are bit-identical to direct
// calls. kAuto at T = 1 and 2 picks the per-entry path here (T = 2: 16 entries, 1.07 rows per expert).
TEST(MoeGpu, PerEntryGraphReplaysBitIdentical) {
  FP4KIT_REQUIRE_SM90A();
  for (int64_t T : {1, 2}) {
    Config c{T, 256, 128, 64, 8, 1, 0, MoeMode::kW4A16, DType::kBF16};
    const Layer L = make_layer(c, 14000 + uint32_t(T));
    const RefOut ref = reference_run(L, L.sel);
    DeviceLayer D(L);
    D.p.check_expert_ids = false;
    ASSERT_EQ(moe_impl::resolve_moe_path(D.p.path, c.T, c.k, c.H, c.I, c.E, c.mode == MoeMode::kW4A4,
                                         device_info().sm_count),
              MoePath::kPerEntry);
    const size_t ws_bytes = moe_workspace_bytes(D.p);
    DeviceBuffer<uint8_t> ws(ws_bytes);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    D.out.poison();
    FP4_OK(fused_moe(D.p, ws.ptr, ws_bytes, stream));
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<uint16_t> direct = D.out.download();
    const Compare r = compare(direct, ref, c.act);
    EXPECT_EQ(r.nonfinite, 0);
    EXPECT_LE(r.rel, 5e-3);

    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    std::string capture_error;
    for (int i = 0; i < 4; ++i) {
      const Status s = fused_moe(D.p, ws.ptr, ws_bytes, stream);
      if (!s.is_ok() && capture_error.empty()) capture_error = s.to_string();
    }
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    ASSERT_TRUE(capture_error.empty()) << capture_error;
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int rep = 0; rep < 3; ++rep) {
      D.out.poison();
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      const std::vector<uint16_t> got = D.out.download();
      EXPECT_EQ(std::memcmp(direct.data(), got.data(), got.size() * 2), 0) << "T=" << T << " replay " << rep;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

// ---- routing ---------------------------------------------------------------------------------------------------
namespace {

struct RouteCase {
  int64_t T, E, k;
  MoeRoutingMethod method;
  DType logits_dtype = DType::kFP32;
  bool renormalize = true;
  int64_t n_group = 1, topk_group = 1;
  float scaling = 1.0f;
  bool ties = false;  // logits drawn from {0, 1, 2}
};

void run_route(const RouteCase& c, uint32_t seed) {
  SCOPED_TRACE("T=" + std::to_string(c.T) + " E=" + std::to_string(c.E) + " k=" + std::to_string(c.k) + " method=" +
               std::to_string(int(c.method)) + " " + dtype_name(c.logits_dtype) + (c.renormalize ? " renorm" : "") +
               " groups=" + std::to_string(c.n_group) + "/" + std::to_string(c.topk_group) + (c.ties ? " ties" : ""));
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::uniform_int_distribution<int> small(0, 2);
  std::vector<float> f32(size_t(c.T * c.E));
  std::vector<uint16_t> b16(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    const float v = c.ties ? float(small(rng)) : nd(rng);
    b16[i] = format::float_to_bf16(v);
    f32[i] = c.logits_dtype == DType::kBF16 ? format::bf16_to_float(b16[i]) : v;
  }
  std::vector<float> bias(size_t(c.E));
  for (auto& b : bias) b = c.ties ? 0.0f : 0.1f * nd(rng);

  MoeRoutingParams p;
  p.num_tokens = c.T;
  p.num_experts = c.E;
  p.top_k = c.k;
  p.method = c.method;
  p.logits_dtype = c.logits_dtype;
  p.n_group = c.n_group;
  p.topk_group = c.topk_group;
  p.routed_scaling_factor = c.scaling;
  p.renormalize = c.renormalize;

  std::vector<int32_t> ref_ids(size_t(c.T * c.k), -7);
  std::vector<float> ref_w(size_t(c.T * c.k), NAN);
  MoeRoutingParams rp = p;
  rp.logits = c.logits_dtype == DType::kBF16 ? static_cast<const void*>(b16.data()) : f32.data();
  rp.bias = bias.data();
  rp.selected_experts = ref_ids.data();
  rp.final_scales = ref_w.data();
  const Status rs = reference::moe_route(rp);
  ASSERT_TRUE(rs.is_ok()) << rs.to_string();

  DeviceBuffer<float> dl32(f32.size()), dbias(bias.size());
  DeviceBuffer<uint16_t> dl16(b16.size());
  dl32.upload(f32);
  dl16.upload(b16);
  dbias.upload(bias);
  DeviceBuffer<int32_t> ids(ref_ids.size());
  DeviceBuffer<float> w(ref_w.size());
  ids.poison();
  w.poison();
  p.logits = c.logits_dtype == DType::kBF16 ? static_cast<const void*>(dl16.ptr) : dl32.ptr;
  p.bias = dbias.ptr;
  p.selected_experts = ids.ptr;
  p.final_scales = w.ptr;
  FP4_OK(moe_route(p, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int32_t> got_ids = ids.download();
  const std::vector<float> got_w = w.download();
  for (size_t i = 0; i < got_ids.size(); ++i) {
    ASSERT_EQ(got_ids[i], ref_ids[i]) << "token " << i / size_t(c.k) << " slot " << i % size_t(c.k);
    ASSERT_LE(std::fabs(double(got_w[i]) - double(ref_w[i])), 1e-6 * std::fabs(double(ref_w[i])) + 1e-30)
        << "token " << i / size_t(c.k) << " slot " << i % size_t(c.k) << " gpu " << got_w[i] << " ref " << ref_w[i];
  }
  // Bit-identical rerun.
  FP4_OK(moe_route(p, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(ids.download() == got_ids);
  const std::vector<float> again = w.download();
  EXPECT_EQ(std::memcmp(again.data(), got_w.data(), again.size() * 4), 0);
}

}  // namespace

TEST(MoeRouteGpu, SoftmaxMethodsMatchReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 100;
  for (MoeRoutingMethod m : {MoeRoutingMethod::kSoftmaxTopK, MoeRoutingMethod::kTopKSoftmax}) {
    for (auto [E, k] : {std::pair<int64_t, int64_t>{8, 2}, {8, 8}, {60, 4}, {128, 8}, {256, 8}, {512, 16}, {512, 1}}) {
      for (DType dt : {DType::kFP32, DType::kBF16}) {
        for (bool renorm : {true, false}) {
          run_route({37, E, k, m, dt, renorm}, seed++);
          if (HasFailure()) return;
        }
      }
      RouteCase ties{37, E, k, m};
      ties.ties = true;
      run_route(ties, seed++);
      if (HasFailure()) return;
    }
  }
  run_route({0, 64, 4, MoeRoutingMethod::kSoftmaxTopK}, seed++);  // empty batch
  run_route({2000, 256, 8, MoeRoutingMethod::kSoftmaxTopK}, seed++);
}

TEST(MoeRouteGpu, DeepSeekV3MatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = 200;
  struct G {
    int64_t E, k, n_group, topk_group;
  };
  for (G g : {G{256, 8, 8, 4}, G{64, 6, 8, 3}, G{64, 4, 64, 4}, G{16, 4, 1, 1}, G{512, 16, 16, 2}, G{96, 3, 3, 3}}) {
    for (DType dt : {DType::kFP32, DType::kBF16}) {
      for (bool renorm : {true, false}) {
        RouteCase c{37, g.E, g.k, MoeRoutingMethod::kDeepSeekV3, dt, renorm, g.n_group, g.topk_group, 2.5f};
        run_route(c, seed++);
        if (HasFailure()) return;
      }
    }
    RouteCase ties{37, g.E, g.k, MoeRoutingMethod::kDeepSeekV3, DType::kFP32, true, g.n_group, g.topk_group, 1.0f};
    ties.ties = true;
    run_route(ties, seed++);
    if (HasFailure()) return;
  }
}
