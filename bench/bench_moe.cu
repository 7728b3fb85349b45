// bench/bench_moe.cu — `fp4kit bench moe` (see bench_moe.h and docs/MOE.md, section "Benchmark").
//
// Per preset (H, E, k, I): the E experts' NVFP4 weights are generated on the device in the
// checkpoint layout (uniform random E2M1 codes, E4M3 block scales in [0.25, 2], linear scales) from
// a counter-based hash, a chunk of experts at a time, and prepacked with prepack_moe_weights; the
// checkpoint copies are dropped (the CPU reference regenerates the experts it needs from the same
// hash). Per-expert alphas and the activation global scales are host-chosen so that every
// intermediate stays O(1). Per point (T, routing): R routing tables drawn on the host (R copies so
// that the experts the timed calls touch exceed 2x L2; call i uses table i mod R), BF16 hidden states
// N(0, 1), then for each mode a CPU-reference check (small T), eager timing and, with --graph,
// CUDA-graph replay; and the cuBLASLt BF16 baselines (one GEMM pair per active expert; dense GEMMs
// of the same total size for T >= 4096).
#include "bench_moe.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cublaslt_baseline.h"
#include "gemm/grouped.h"  // grouped_gemm_tactic_count: range of --fc1/--fc2-tactic
#include "moe/moe_path.h"    // resolve_moe_path: the note column
#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "fp4kit/moe.h"
#include "fp4kit/quantize.h"
#include "fp4kit/status.h"
#include "fp4kit/types.h"

namespace fp4kit::bench {

// ---- presets, T sweeps, options --------------------------------------------------------------------

std::vector<int64_t> default_moe_bench_t() { return {1, 2, 4, 8, 16, 64, 256, 1024, 4096, 16384}; }
std::vector<int64_t> quick_moe_bench_t() { return {1, 16, 4096}; }

std::string moe_bench_usage() {
  return R"(fp4kit bench moe [options]

The NVFP4 fused MoE layer (fp4kit::fused_moe: permute, FC1 + SwiGLU, FC2, finalize) in W4A16 and W4A4
on MoE model shapes, against cuBLASLt BF16 in the same process: one GEMM pair per active expert
(FC1 [rows_e, H] x [2I, H]^T, FC2 [rows_e, I] x [H, I]^T; SwiGLU and permutation not counted) and,
for T >= 4096, the dense GEMMs of the same total size. Small-T points are checked against the CPU
reference of the whole layer (reference::fused_moe). Details: docs/MOE.md.

  --preset LIST        deepseek-v3, fi-256, fi-32, qwen3-30b-a3b, qwen3.6-35b-a3b, mixtral-8x7b,
                       all, or HxExKxI (e.g. 2048x64x4x512); comma-separated (default: all)
  --t LIST             token counts: "1,16,256" or ranges "1:16384:x4"
                       (default 1,2,4,8,16,64,256,1024,4096,16384)
  --quick              T in {1, 16, 4096} (unless --t is given)
  --mode MODE          w4a16 | w4a4 | both (default both)
  --routing R          uniform | skewed | both (default uniform): uniform draws k distinct experts
                       per token uniformly; skewed draws them with Zipf popularity 1/rank^S
  --zipf S             the skew exponent (default 1.2)
  --graph              also time CUDA-graph replay (graph_us)
  --pdl                MoeParams::enable_pdl on the timed calls (back-to-back layers overlap their
                       launch gaps; the graph_us of a model's stream of layers)
  --fp4-input          W4A4 takes the hidden states pre-quantized to NVFP4 (input_dtype kE2M1x2,
                       128x4 scales; quantize_nvfp4 with the FC1 activation global scale) instead
                       of quantizing the BF16 ones itself
  --no-baseline        skip the cuBLASLt BF16 rows
  --no-check           skip the CPU-reference checks
  --check-max-t N      check the points with T <= N (default 16)
  --no-reduced-check   skip the large-T check of each preset's reduced variant (H<=512, I<=256)
  --max-rel-err X      check threshold (default 5e-3)
  --csv | --markdown   table format on stdout (default: aligned text)
  --output FILE        also write the report to FILE (CSV if it ends in .csv, else markdown)
  --warmup N           untimed calls before timing (default 5)
  --warmup-ms X        then untimed calls for X ms more before the timed ones (default 0): long
                       compute-bound calls run at the power cap, whose clock takes ~100 ms to settle
  --reps N             timed calls (default adaptive: --target-ms per measurement, 10..1000 calls)
  --target-ms X        adaptive timing budget (default 200)
  --seed N             random data seed
  --fc1-tactic ID      grouped GEMM tactic of FC1 (gemm/grouped.h ids; -1 = the tuning cache's entry
                       (fp4kit tune --moe) or the heuristic, default)
  --fc2-tactic ID      the same for FC2 (both tactics apply to the pipeline path only)
  --path P             auto | pipeline | per-entry | fused-decode (default auto): fused_moe's path
                       (MoeParams::path); auto takes the per-entry path (2 kernels, no permutation) or
                       the fused-decode path (permutation + 1 kernel) for small batches
                       (src/moe/moe_path.h), where --fc1-tactic / --fc2-tactic do not apply; rows that
                       ran them say "per-entry" or "fused-decode" in the note column
  --verbose            memory plan, rotation counts, cuBLASLt choices
  --help
Exit code: 0 all points ran and passed, 1 a point failed or could not run, 2 could not start.
)";
}

namespace {

// `fp4kit bench moe`'s own options; parse_bench_args reads those it shares with `bench gemm`.
bool read_moe_option(MoeBenchOptions& o, OptionReader& r, const std::string& a) {
  std::string& err = r.error;
  std::string s;
  int64_t iv = 0;
  if (a == "--preset" || a == "--presets") {
    if (r.value(&s)) parse_moe_bench_presets(s, &o.presets, &err);
  } else if (a == "--t") {
    if (r.value(&s)) parse_count_list(s, "--t", &o.t_values, &err);
  } else if (a == "--mode") {
    read_mode_value(r, &o.mode);
  } else if (a == "--routing") {
    if (!r.value(&s)) return true;
    if (s == "uniform") o.routing = MoeBenchRouting::kUniform;
    else if (s == "skewed") o.routing = MoeBenchRouting::kSkewed;
    else if (s == "both") o.routing = MoeBenchRouting::kBoth;
    else err = "--routing: '" + s + "' (uniform, skewed or both)";
  } else if (a == "--zipf") {
    r.value_positive(&o.zipf_s);
  } else if (a == "--check-max-t") {
    if (r.value_count(&iv, 0)) o.check_max_t = iv;
  } else if (a == "--no-reduced-check") {
    o.reduced_check = false;
  } else if (a == "--pdl") {
    o.pdl = true;
  } else if (a == "--fp4-input") {
    o.fp4_input = true;
  } else if (a == "--fc1-tactic" || a == "--fc2-tactic") {
    // -1 (heuristic) or a grouped tactic id; fused_moe reports ids it cannot run.
    if (r.value(&s)) {
      const bool neg = s == "-1";
      if (!neg && (!parse_count(s, &iv) || iv >= gemm_impl::grouped_gemm_tactic_count())) {
        err = a + ": bad value '" + s + "' (-1 or 0.." + std::to_string(gemm_impl::grouped_gemm_tactic_count() - 1) +
              ")";
      } else {
        (a == "--fc1-tactic" ? o.fc1_tactic : o.fc2_tactic) = neg ? -1 : int(iv);
      }
    }
  } else if (a == "--path") {
    if (!r.value(&s)) return true;
    if (s == "auto") o.path = MoePath::kAuto;
    else if (s == "pipeline") o.path = MoePath::kPipeline;
    else if (s == "per-entry") o.path = MoePath::kPerEntry;
    else if (s == "fused-decode") o.path = MoePath::kFusedDecode;
    else err = "--path: '" + s + "' (auto, pipeline, per-entry or fused-decode)";
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool parse_moe_bench_args(const std::vector<std::string>& args, MoeBenchOptions* options, std::string* error,
                          bool* help) {
  return parse_bench_args(args, options, error, help, read_moe_option);
}

// ---- the benchmark ---------------------------------------------------------------------------------
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kNvfp4Bytes = 0.5625;     // bytes per NVFP4 weight element: E2M1 + one E4M3 per 16
constexpr int kScaleLo = 0x28, kScaleHi = 0x40;  // E4M3 block scales of the weights: 0.25 .. 2.0
constexpr int kMaxRoutingSets = 16;
constexpr int64_t kLargeActiveBytes = int64_t(64) << 20;  // the issue's "active weights > 64 MB"
constexpr int64_t kReducedH = 512, kReducedI = 256, kReducedMaxT = 4096;

#define MB_CUDA(expr, what) FP4KIT_RETURN_IF_ERROR(::fp4kit::bench::cuda_result(int(expr), (what)))

// ---- deterministic weight bytes ----
__host__ __device__ inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Byte `index` of a stream: uniform over [lo, lo + span).
__global__ void fill_bytes_kernel(uint8_t* dst, int64_t count, uint64_t seed, int64_t base, int lo, int span) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = mix64(seed * 0x2545f4914f6cdd1dull + uint64_t(base + i));
    dst[i] = uint8_t(lo + int((h >> 32) % uint64_t(span)));
  }
}

Status fill_bytes(uint8_t* dst, int64_t count, uint64_t seed, int64_t base, int lo, int hi, cudaStream_t stream) {
  if (count <= 0) return Status::ok();
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((count + threads - 1) / threads, 65536);
  fill_bytes_kernel<<<unsigned(blocks), threads, 0, stream>>>(dst, count, seed, base, lo, hi - lo + 1);
  return cuda_result(int(cudaGetLastError()), "fill_bytes kernel");
}

enum class Impl { kCublasExperts, kCublasDense, kW4A16, kW4A4 };

const char* impl_name(Impl i) {
  switch (i) {
    case Impl::kCublasExperts: return "cublas.bf16.experts";
    case Impl::kCublasDense: return "cublas.bf16.dense";
    case Impl::kW4A16: return "fp4kit.w4a16";
    case Impl::kW4A4: return "fp4kit.w4a4";
  }
  return "?";
}

bool is_fp4kit(Impl i) { return i == Impl::kW4A16 || i == Impl::kW4A4; }

// One implementation at one point.
struct Row {
  std::string preset;
  int64_t h = 0, e = 0, k = 0, inter = 0, t = 0;
  std::string routing;
  Impl impl = Impl::kW4A16;
  bool reduced = false;     // the reduced-size check variant (no timing)
  double us = kNaN, graph_us = kNaN;
  int sets = 1;             // routing tables rotated over
  double n_active = kNaN;   // distinct experts per call (mean over the tables)
  double weight_bytes = kNaN;  // active weight bytes per call (mean; NVFP4 or BF16)
  double flops = 0;
  double rel_err = kNaN;
  bool checked = false, check_ok = true;
  std::string error, note;
  // The time the derived columns use: graph replay when measured (cuBLASLt rows always), else eager.
  double best_us() const { return !std::isnan(graph_us) ? graph_us : us; }
};

// The NVFP4 experts of one layer, prepacked, and their scalars.
struct Layer {
  int64_t h = 0, e = 0, k = 0, inter = 0;
  uint64_t seed = 0;
  GpuBuffer w1p, w2p;
  int64_t w1p_bytes = 0, w2p_bytes = 0;
  std::vector<float> alpha1[2], alpha2[2];  // host, per mode (0 = W4A16, 1 = W4A4), [E]
  GpuBuffer d_alpha1[2], d_alpha2[2];
  float gs1 = 1.0f, gs2 = 1.0f;  // W4A4 activation encode global scales (one each)
  GpuBuffer d_gs1, d_gs2;
  double expert_bytes() const { return (2.0 * inter * h + double(h) * inter) * kNvfp4Bytes; }
  // Hash streams of the checkpoint bytes.
  uint64_t stream_seed(int which) const { return seed * 8 + uint64_t(which); }  // 0 c1, 1 s1, 2 c2, 3 s2
};

// One routing table of a point.
struct RoutingSet {
  std::vector<int32_t> sel;  // [T, k]
  std::vector<float> fs;     // [T, k]
  std::vector<int64_t> rows; // [E] rows per expert
  int64_t n_active = 0;
  GpuBuffer d_sel, d_fs;
};

// Host copy of some experts' checkpoint weights (for the CPU reference).
struct HostExperts {
  std::vector<uint8_t> c1, s1, c2, s2;
};

class MoeBench final : public BenchDriver {
 public:
  explicit MoeBench(const MoeBenchOptions& o)
      : BenchDriver("fp4kit bench moe", {o.warmup, o.reps, o.target_ms, o.min_reps, o.max_reps, o.warmup_ms}), opt_(o) {}
  int run();

 private:
  Status build_layer(const MoeBenchPreset& pr, uint64_t seed, Layer* L);
  Status gen_checkpoint(const Layer& L, int fc, int64_t e0, int64_t ne, uint8_t* codes, uint8_t* scales);
  Status gather_experts(const Layer& L, const std::vector<int64_t>& experts, HostExperts* out);
  void make_routing(const Layer& L, int64_t T, bool skewed, uint64_t seed, RoutingSet* s);
  Status upload_routing(RoutingSet* s);
  Status ensure(GpuBuffer& b, size_t bytes, const char* what);
  MoeParams moe_params(const Layer& L, int mode, int64_t T, const RoutingSet& s, const void* x, void* out) const;
  Status check_point(const Layer& L, int mode, int64_t T, const RoutingSet& s, const void* x, Row* row);
  Status quantize_input(const Layer& L, int64_t rows);
  Status run_fp4kit(const Layer& L, int mode, int64_t T, std::vector<RoutingSet>& sets, Row* row);
  Status setup_baseline(const Layer& L, int64_t max_t);
  Status run_cublas_experts(const Layer& L, int64_t T, std::vector<RoutingSet>& sets, Row* row);
  Status run_cublas_dense(const Layer& L, int64_t T, Row* row);
  Status run_preset(const MoeBenchPreset& pr, const std::vector<int64_t>& ts);
  Status run_reduced_check(const MoeBenchPreset& pr, int64_t T);
  Status time_graph(const CallFn& fn, int batch, double eager_us, double* median_us);
  void release_baseline();
  void print_report() override;
  std::vector<int> modes() const;
  std::vector<bool> routings() const;

  MoeBenchOptions opt_;
  CublasLtGemm lt_;
  // Per preset (freed between presets).
  GpuBuffer x_, out_, ws_;
  GpuBuffer x4_, x4s_;                         // --fp4-input: x_ as NVFP4 codes [T, H/2] and 128x4 scales
  GpuBuffer scratch_c_, scratch_s_;            // checkpoint generation
  GpuBuffer bf16_w_;                           // baseline: n_bf16_sets_ x (W1 [2I, H], W2 [H, I])
  int64_t n_bf16_sets_ = 0;
  GpuBuffer xp_, y1_, hp_, y2_;                // baseline activations [T*k, H|2I|I|H]
  std::string baseline_note_;
  std::vector<Row> rows_;
};

std::vector<int> MoeBench::modes() const {
  std::vector<int> m;
  if (opt_.mode != MoeBenchMode::kW4A4) m.push_back(0);
  if (opt_.mode != MoeBenchMode::kW4A16) m.push_back(1);
  return m;
}

std::vector<bool> MoeBench::routings() const {
  std::vector<bool> r;
  if (opt_.routing != MoeBenchRouting::kSkewed) r.push_back(false);
  if (opt_.routing != MoeBenchRouting::kUniform) r.push_back(true);
  return r;
}

void MoeBench::release_baseline() {
  bf16_w_.release();
  xp_.release();
  y1_.release();
  hp_.release();
  y2_.release();
  n_bf16_sets_ = 0;
}

Status MoeBench::ensure(GpuBuffer& b, size_t bytes, const char* what) {
  if (b.data() && b.bytes() >= bytes) return Status::ok();
  return b.alloc(std::max<size_t>(bytes, 256), what);
}

// Graph replay of `batch` calls; replays adapted to target_ms from an estimate of one call.
Status MoeBench::time_graph(const CallFn& fn, int batch, double eager_us, double* median_us) {
  TimingOptions o;
  o.graph = true;
  o.graph_batch = std::max(1, batch);
  o.warmup = 2;
  const double per_replay = (std::isnan(eager_us) || eager_us <= 0 ? 100.0 : eager_us) * o.graph_batch;
  o.iterations = opt_.reps > 0 ? std::max(5, opt_.reps / o.graph_batch)
                               : int(std::clamp<double>(opt_.target_ms * 1000.0 / per_replay, 5.0, 200.0));
  Timing g;
  FP4KIT_RETURN_IF_ERROR(time_calls(fn, stream_, o, &g));
  *median_us = g.median_us;
  return Status::ok();
}

// ---- weights -----------------------------------------------------------------------------------------

// Experts [e0, e0 + ne) of FC1 (fc = 1: [2I, H]) or FC2 (fc = 2: [H, I]) in the checkpoint layout.
Status MoeBench::gen_checkpoint(const Layer& L, int fc, int64_t e0, int64_t ne, uint8_t* codes, uint8_t* scales) {
  const int64_t n = fc == 1 ? 2 * L.inter : L.h, kk = fc == 1 ? L.h : L.inter;
  const int64_t cb = n * kk / 2, sb = n * kk / 16;  // per expert
  FP4KIT_RETURN_IF_ERROR(fill_bytes(codes, ne * cb, L.stream_seed(fc == 1 ? 0 : 2), e0 * cb, 0, 255, stream_));
  return fill_bytes(scales, ne * sb, L.stream_seed(fc == 1 ? 1 : 3), e0 * sb, kScaleLo, kScaleHi, stream_);
}

Status MoeBench::build_layer(const MoeBenchPreset& pr, uint64_t seed, Layer* L) {
  L->h = pr.hidden;
  L->e = pr.experts;
  L->k = pr.top_k;
  L->inter = pr.inter;
  L->seed = seed;
  const int64_t H = L->h, I = L->inter, E = L->e;
  L->w1p_bytes = moe_prepacked_weight_bytes(E, 2 * I, H);
  L->w2p_bytes = moe_prepacked_weight_bytes(E, H, I);
  if (L->w1p_bytes <= 0 || L->w2p_bytes <= 0) {
    return Status(StatusCode::kInvalidArgument, "moe_prepacked_weight_bytes returned 0 for this preset");
  }
  FP4KIT_RETURN_IF_ERROR(L->w1p.alloc(size_t(L->w1p_bytes), "FC1 prepacked weights"));
  FP4KIT_RETURN_IF_ERROR(L->w2p.alloc(size_t(L->w2p_bytes), "FC2 prepacked weights"));
  // Checkpoint layout a chunk of experts at a time (about 512 MB), prepacked into place: expert e
  // of a moe_prepacked buffer starts at e * prepacked_weight_bytes(n, k).
  const int64_t ckpt_per_expert = std::max(2 * I * H, H * I) / 2;
  const int64_t chunk = std::clamp<int64_t>((int64_t(512) << 20) / ckpt_per_expert, 1, E);
  FP4KIT_RETURN_IF_ERROR(ensure(scratch_c_, size_t(chunk * ckpt_per_expert), "checkpoint codes scratch"));
  FP4KIT_RETURN_IF_ERROR(ensure(scratch_s_, size_t(chunk * ckpt_per_expert / 8), "checkpoint scales scratch"));
  for (int fc = 1; fc <= 2; ++fc) {
    const int64_t n = fc == 1 ? 2 * I : H, kk = fc == 1 ? H : I;
    const int64_t per = prepacked_weight_bytes(n, kk);
    uint8_t* base = (fc == 1 ? L->w1p : L->w2p).as<uint8_t>();
    for (int64_t e0 = 0; e0 < E; e0 += chunk) {
      const int64_t ne = std::min(chunk, E - e0);
      FP4KIT_RETURN_IF_ERROR(gen_checkpoint(*L, fc, e0, ne, scratch_c_.as<uint8_t>(), scratch_s_.as<uint8_t>()));
      MoeWeightPrepackParams pp;
      pp.experts = ne;
      pp.n = n;
      pp.k = kk;
      pp.codes = scratch_c_.as<uint8_t>();
      pp.scales = scratch_s_.as<uint8_t>();
      pp.scale_layout = ScaleLayout::kLinear;
      pp.out = base + e0 * per;
      pp.out_bytes = moe_prepacked_weight_bytes(ne, n, kk);
      FP4KIT_RETURN_IF_ERROR(prepack_moe_weights(pp, stream_));
    }
  }
  // Scalars. A weight of this generator has amax 12 (6 * 2.0), so a checkpoint's encode scale would
  // be gs_w ~ 2688 / 12 = 224; each expert gets gs_w = 224 * U(0.8, 1.25) and alpha = 1 / gs_w
  // (W4A16) or 1 / (gs_a * gs_w) (W4A4) with gs1 = 2688 / 5 (N(0, 1) hidden states) and gs2 = 2688 / 8
  // (the SwiGLU output). Values beyond the assumed amax saturate the block scale, as in a real
  // checkpoint; the reference does exactly the same.
  L->gs1 = 2688.0f / 5.0f;
  L->gs2 = 2688.0f / 8.0f;
  std::mt19937_64 rng(seed ^ 0xa1fa);
  std::uniform_real_distribution<float> ud(0.8f, 1.25f);
  for (int m = 0; m < 2; ++m) {
    L->alpha1[m].resize(size_t(E));
    L->alpha2[m].resize(size_t(E));
  }
  for (int64_t e = 0; e < E; ++e) {
    const float g1 = 224.0f * ud(rng), g2 = 224.0f * ud(rng);
    L->alpha1[0][size_t(e)] = 1.0f / g1;
    L->alpha2[0][size_t(e)] = 1.0f / g2;
    L->alpha1[1][size_t(e)] = 1.0f / (L->gs1 * g1);
    L->alpha2[1][size_t(e)] = 1.0f / (L->gs2 * g2);
  }
  for (int m = 0; m < 2; ++m) {
    FP4KIT_RETURN_IF_ERROR(L->d_alpha1[m].alloc(size_t(E) * 4, "fc1_alpha"));
    FP4KIT_RETURN_IF_ERROR(L->d_alpha2[m].alloc(size_t(E) * 4, "fc2_alpha"));
    // On stream_ (see upload_routing: a plain cudaMemcpy is not ordered with the non-blocking stream_).
    MB_CUDA(cudaMemcpyAsync(L->d_alpha1[m].data(), L->alpha1[m].data(), size_t(E) * 4, cudaMemcpyHostToDevice, stream_),
            "alpha1");
    MB_CUDA(cudaMemcpyAsync(L->d_alpha2[m].data(), L->alpha2[m].data(), size_t(E) * 4, cudaMemcpyHostToDevice, stream_),
            "alpha2");
  }
  FP4KIT_RETURN_IF_ERROR(L->d_gs1.alloc(4, "fc1_act_global"));
  FP4KIT_RETURN_IF_ERROR(L->d_gs2.alloc(4, "fc2_act_global"));
  MB_CUDA(cudaMemcpyAsync(L->d_gs1.data(), &L->gs1, 4, cudaMemcpyHostToDevice, stream_), "fc1_act_global");
  MB_CUDA(cudaMemcpyAsync(L->d_gs2.data(), &L->gs2, 4, cudaMemcpyHostToDevice, stream_), "fc2_act_global");
  MB_CUDA(cudaStreamSynchronize(stream_), "weight setup");
  return Status::ok();
}

// The checkpoint bytes of `experts` (in that order), regenerated on the device and copied back.
Status MoeBench::gather_experts(const Layer& L, const std::vector<int64_t>& experts, HostExperts* out) {
  const int64_t H = L.h, I = L.inter, n_e = int64_t(experts.size());
  const int64_t c1 = 2 * I * H / 2, s1 = 2 * I * H / 16, c2 = H * I / 2, s2 = H * I / 16;
  out->c1.resize(size_t(n_e * c1));
  out->s1.resize(size_t(n_e * s1));
  out->c2.resize(size_t(n_e * c2));
  out->s2.resize(size_t(n_e * s2));
  FP4KIT_RETURN_IF_ERROR(ensure(scratch_c_, size_t(std::max(c1, c2)), "checkpoint codes scratch"));
  FP4KIT_RETURN_IF_ERROR(ensure(scratch_s_, size_t(std::max(s1, s2)), "checkpoint scales scratch"));
  for (int64_t i = 0; i < n_e; ++i) {
    const int64_t e = experts[size_t(i)];
    FP4KIT_RETURN_IF_ERROR(gen_checkpoint(L, 1, e, 1, scratch_c_.as<uint8_t>(), scratch_s_.as<uint8_t>()));
    MB_CUDA(cudaMemcpyAsync(out->c1.data() + i * c1, scratch_c_.data(), size_t(c1), cudaMemcpyDeviceToHost, stream_), "copy");
    MB_CUDA(cudaMemcpyAsync(out->s1.data() + i * s1, scratch_s_.data(), size_t(s1), cudaMemcpyDeviceToHost, stream_), "copy");
    FP4KIT_RETURN_IF_ERROR(gen_checkpoint(L, 2, e, 1, scratch_c_.as<uint8_t>(), scratch_s_.as<uint8_t>()));
    MB_CUDA(cudaMemcpyAsync(out->c2.data() + i * c2, scratch_c_.data(), size_t(c2), cudaMemcpyDeviceToHost, stream_), "copy");
    MB_CUDA(cudaMemcpyAsync(out->s2.data() + i * s2, scratch_s_.data(), size_t(s2), cudaMemcpyDeviceToHost, stream_), "copy");
    MB_CUDA(cudaStreamSynchronize(stream_), "gather experts");
  }
  return Status::ok();
}

// ---- routing -------------------------------------------------------------------------------------------

// k distinct experts per token. Uniform: partial Fisher-Yates. Skewed: Zipf popularity 1/rank^s over
// a random ranking of the experts (each table its own ranking, so that different tables have
// different hot experts, like different layers), k distinct experts by Gumbel top-k (= sampling
// without replacement proportionally to popularity). Final scales: U(0.05, 1), normalized to sum 1.
void MoeBench::make_routing(const Layer& L, int64_t T, bool skewed, uint64_t seed, RoutingSet* s) {
  const int64_t E = L.e, k = L.k;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(1e-12, 1.0);
  std::uniform_real_distribution<float> uw(0.05f, 1.0f);
  s->sel.assign(size_t(T * k), 0);
  s->fs.assign(size_t(T * k), 0.0f);
  s->rows.assign(size_t(E), 0);
  std::vector<int32_t> ids(static_cast<size_t>(E));
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<double> logw(static_cast<size_t>(E), 0.0);
  if (skewed) {
    std::vector<int32_t> rank(ids);
    std::shuffle(rank.begin(), rank.end(), rng);
    for (int64_t r = 0; r < E; ++r) logw[size_t(rank[size_t(r)])] = -opt_.zipf_s * std::log(double(r + 1));
  }
  std::vector<std::pair<double, int32_t>> keys(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    if (!skewed) {
      for (int64_t j = 0; j < k; ++j) {
        std::uniform_int_distribution<int64_t> pick(j, E - 1);
        std::swap(ids[size_t(j)], ids[size_t(pick(rng))]);
        s->sel[size_t(t * k + j)] = ids[size_t(j)];
      }
    } else {
      for (int64_t e = 0; e < E; ++e) keys[size_t(e)] = {logw[size_t(e)] - std::log(-std::log(u01(rng))), int32_t(e)};
      std::partial_sort(keys.begin(), keys.begin() + k, keys.end(),
                        [](const auto& a, const auto& b) { return a.first > b.first; });
      for (int64_t j = 0; j < k; ++j) s->sel[size_t(t * k + j)] = keys[size_t(j)].second;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) sum += (s->fs[size_t(t * k + j)] = uw(rng));
    for (int64_t j = 0; j < k; ++j) s->fs[size_t(t * k + j)] /= sum;
  }
  for (int32_t e : s->sel) ++s->rows[size_t(e)];
  s->n_active = 0;
  for (int64_t r : s->rows) s->n_active += r > 0;
}

Status MoeBench::upload_routing(RoutingSet* s) {
  FP4KIT_RETURN_IF_ERROR(s->d_sel.alloc(s->sel.size() * 4, "selected_experts"));
  FP4KIT_RETURN_IF_ERROR(s->d_fs.alloc(s->fs.size() * 4, "final_scales"));
  // The copies go on stream_, the stream every kernel of the bench runs on, and are waited for. A
  // plain cudaMemcpy runs on the legacy default stream, which stream_ (cudaStreamNonBlocking) is NOT
  // ordered after, and for a pageable source above 64 KB it returns once the bytes are staged, before
  // the DMA has landed: a fused_moe launched right after could read the table's previous contents
  // (the reduced check uploads one table, 128 KB at E = 256, k = 8, T = 4096, and checks it at once).
  MB_CUDA(cudaMemcpyAsync(s->d_sel.data(), s->sel.data(), s->sel.size() * 4, cudaMemcpyHostToDevice, stream_),
          "selected_experts");
  MB_CUDA(cudaMemcpyAsync(s->d_fs.data(), s->fs.data(), s->fs.size() * 4, cudaMemcpyHostToDevice, stream_),
          "final_scales");
  MB_CUDA(cudaStreamSynchronize(stream_), "routing upload");
  return Status::ok();
}

// ---- fp4kit ----------------------------------------------------------------------------------------------

MoeParams MoeBench::moe_params(const Layer& L, int mode, int64_t T, const RoutingSet& s, const void* x,
                               void* out) const {
  MoeParams p;
  p.num_tokens = T;
  p.max_tokens = 0;
  p.hidden = L.h;
  p.inter = L.inter;
  p.num_experts = L.e;
  p.top_k = L.k;
  p.mode = mode == 0 ? MoeMode::kW4A16 : MoeMode::kW4A4;
  p.act_dtype = DType::kBF16;
  p.input_dtype = DType::kBF16;
  p.input = x;
  p.selected_experts = s.d_sel.as<int32_t>();
  p.final_scales = s.d_fs.as<float>();
  p.fc1_weights = L.w1p.data();
  p.fc1_weights_bytes = L.w1p_bytes;
  p.fc2_weights = L.w2p.data();
  p.fc2_weights_bytes = L.w2p_bytes;
  p.fc1_alpha = L.d_alpha1[mode].as<float>();
  p.fc2_alpha = L.d_alpha2[mode].as<float>();
  p.fc1_act_global = L.d_gs1.as<float>();
  p.fc2_act_global = L.d_gs2.as<float>();
  if (opt_.fp4_input && mode == 1) {  // x_'s NVFP4 copy (quantize_input), quantized with gs1 as well
    p.input_dtype = DType::kE2M1x2;
    p.input = x4_.data();
    p.input_scales = x4s_.as<uint8_t>();
  }
  p.output = out;
  p.check_expert_ids = false;
  p.enable_pdl = opt_.pdl;
  p.fc1_tactic = opt_.fc1_tactic;
  p.fc2_tactic = opt_.fc2_tactic;
  p.path = opt_.path;
  return p;
}

// --fp4-input: x_ [rows, H] quantized to NVFP4 (kExact, 128x4 scales) with the layer's FC1 activation
// global scale gs1, so that alpha1 = 1 / (gs1 * gs_w) holds for it as for the in-kernel quantization.
// A 128x4 buffer of `rows` rows starts with that of any fewer rows: T <= rows use its prefix.
Status MoeBench::quantize_input(const Layer& L, int64_t rows) {
  if (!opt_.fp4_input || rows <= 0) return Status::ok();
  const int64_t H = L.h;
  const int64_t sbytes = scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, rows, H);
  FP4KIT_RETURN_IF_ERROR(x4_.alloc(size_t(rows * H / 2), "NVFP4 hidden states"));
  FP4KIT_RETURN_IF_ERROR(x4s_.alloc(size_t(sbytes), "NVFP4 hidden-state scales"));
  Nvfp4QuantizeParams q;
  q.input = x_.data();
  q.input_dtype = DType::kBF16;
  q.rows = rows;
  q.cols = H;
  q.global_scale = L.d_gs1.as<float>();
  q.numerics = QuantNumerics::kExact;
  q.out_codes = x4_.data();
  q.out_codes_bytes = rows * H / 2;
  q.out_scales = x4s_.data();
  q.out_scales_bytes = sbytes;
  q.scale_layout = ScaleLayout::kSwizzled128x4;
  FP4KIT_RETURN_IF_ERROR(quantize_nvfp4(q, stream_));
  MB_CUDA(cudaStreamSynchronize(stream_), "quantize the hidden states");
  return Status::ok();
}

// One call on a poisoned output (with the expert-id check), then the CPU reference on the same data:
// the active experts only (a compact problem of n_active experts, ids remapped), host copies of the
// hidden states, routing and scalars. rel_err = ||out - ref||_F / ||ref||_F in double.
Status MoeBench::check_point(const Layer& L, int mode, int64_t T, const RoutingSet& s, const void* x, Row* row) {
  const int64_t H = L.h, k = L.k;
  MoeParams p = moe_params(L, mode, T, s, x, out_.data());
  p.check_expert_ids = true;
  MB_CUDA(cudaMemsetAsync(out_.data(), 0xFF, size_t(T * H * 2), stream_), "poison output");
  FP4KIT_RETURN_IF_ERROR(fused_moe(p, ws_.data(), ws_.bytes(), stream_));
  std::vector<uint16_t> out(static_cast<size_t>(T * H)), in(static_cast<size_t>(T * H));
  MB_CUDA(cudaMemcpyAsync(out.data(), out_.data(), out.size() * 2, cudaMemcpyDeviceToHost, stream_), "copy output");
  MB_CUDA(cudaMemcpyAsync(in.data(), x, in.size() * 2, cudaMemcpyDeviceToHost, stream_), "copy input");
  const bool fp4_in = p.input_dtype == DType::kE2M1x2;
  std::vector<uint8_t> in4, in4s;
  if (fp4_in) {
    in4.resize(size_t(T * H / 2));
    in4s.resize(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, T, H)));
    MB_CUDA(cudaMemcpyAsync(in4.data(), p.input, in4.size(), cudaMemcpyDeviceToHost, stream_), "copy NVFP4 input");
    MB_CUDA(cudaMemcpyAsync(in4s.data(), p.input_scales, in4s.size(), cudaMemcpyDeviceToHost, stream_),
            "copy NVFP4 input scales");
  }
  MB_CUDA(cudaStreamSynchronize(stream_), "check call");

  std::vector<int64_t> active;
  std::vector<int32_t> compact(static_cast<size_t>(L.e), -1);
  for (int64_t e = 0; e < L.e; ++e) {
    if (s.rows[size_t(e)] > 0) {
      compact[size_t(e)] = int32_t(active.size());
      active.push_back(e);
    }
  }
  HostExperts hw;
  FP4KIT_RETURN_IF_ERROR(gather_experts(L, active, &hw));
  std::vector<int32_t> sel(s.sel.size());
  for (size_t i = 0; i < sel.size(); ++i) sel[i] = compact[size_t(s.sel[i])];
  std::vector<float> a1, a2;
  for (int64_t e : active) {
    a1.push_back(L.alpha1[mode][size_t(e)]);
    a2.push_back(L.alpha2[mode][size_t(e)]);
  }
  std::vector<uint16_t> ref(static_cast<size_t>(T * H));
  reference::MoeRefParams r;
  r.num_tokens = T;
  r.hidden = H;
  r.inter = L.inter;
  r.num_experts = int64_t(active.size());
  r.top_k = k;
  r.mode = p.mode;
  r.act_dtype = DType::kBF16;
  r.input_dtype = fp4_in ? DType::kE2M1x2 : DType::kBF16;
  r.input = fp4_in ? static_cast<const void*>(in4.data()) : in.data();
  r.input_scales = fp4_in ? in4s.data() : nullptr;
  r.selected_experts = sel.data();
  r.final_scales = s.fs.data();
  r.fc1_codes = hw.c1.data();
  r.fc1_scales = hw.s1.data();
  r.fc2_codes = hw.c2.data();
  r.fc2_scales = hw.s2.data();
  r.fc1_alpha = a1.data();
  r.fc2_alpha = a2.data();
  r.fc1_act_global = &L.gs1;
  r.fc2_act_global = &L.gs2;
  r.output = ref.data();
  FP4KIT_RETURN_IF_ERROR(reference::fused_moe(r));

  auto bf16 = [](uint16_t b) {
    const uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return double(f);
  };
  double num = 0, den = 0;
  int64_t nonfinite = 0, ref_nonfinite = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double o = bf16(out[i]), rf = bf16(ref[i]);
    if (!std::isfinite(o)) ++nonfinite;
    if (!std::isfinite(rf)) ++ref_nonfinite;
    if (!std::isfinite(o) || !std::isfinite(rf)) continue;
    num += (o - rf) * (o - rf);
    den += rf * rf;
  }
  row->checked = true;
  row->rel_err = nonfinite ? kNaN : (den > 0 ? std::sqrt(num / den) : kNaN);
  row->check_ok = nonfinite == 0 && ref_nonfinite == 0 && den > 0 && row->rel_err <= opt_.max_rel_err;
  if (!row->check_ok) {
    ++failures_;
    progress("!!! CHECK FAILED: %s %s T=%lld %s: rel_err=%s (limit %g), non-finite outputs %lld, non-finite "
             "reference %lld, |ref|=%g\n",
             row->preset.c_str(), impl_name(row->impl), (long long)T, row->routing.c_str(), fmt_sci(row->rel_err).c_str(),
             opt_.max_rel_err, (long long)nonfinite, (long long)ref_nonfinite, std::sqrt(den));
  }
  return Status::ok();
}

Status MoeBench::run_fp4kit(const Layer& L, int mode, int64_t T, std::vector<RoutingSet>& sets, Row* row) {
  std::vector<MoeParams> params;
  for (const RoutingSet& s : sets) params.push_back(moe_params(L, mode, T, s, x_.data(), out_.data()));
  const size_t ws = moe_workspace_bytes(params[0]);
  FP4KIT_RETURN_IF_ERROR(ensure(ws_, ws, "fused_moe workspace"));
  const MoePath path = moe_impl::resolve_moe_path(opt_.path, T, L.k, L.h, L.inter, L.e, mode == 1,
                                                  device_info().sm_count);
  if (path == MoePath::kPerEntry) row->note += "per-entry; ";
  if (path == MoePath::kFusedDecode) row->note += "fused-decode; ";
  if (params[0].input_dtype == DType::kE2M1x2) row->note += "fp4 input; ";
  if (opt_.check && T <= opt_.check_max_t) {
    FP4KIT_RETURN_IF_ERROR(check_point(L, mode, T, sets[0], x_.data(), row));
  } else {
    FP4KIT_RETURN_IF_ERROR(fused_moe(params[0], ws_.data(), ws_.bytes(), stream_));
    MB_CUDA(cudaStreamSynchronize(stream_), "first call");
  }
  void* wsp = ws_.data();
  const size_t wsb = ws_.bytes();
  auto fn = [&](int i) { return fused_moe(params[size_t(i) % params.size()], wsp, wsb, stream_); };
  FP4KIT_RETURN_IF_ERROR(time_eager(fn, &row->us));
  if (opt_.graph) {
    const Status g = time_graph(fn, std::max<int>(int(params.size()), 10), row->us, &row->graph_us);
    if (!g.is_ok()) {
      progress("  graph timing of %s %s T=%lld failed: %s\n", row->preset.c_str(), impl_name(row->impl), (long long)T,
               g.to_string().c_str());
      row->note += "graph failed; ";
      ++failures_;
      if (cudaStreamSynchronize(stream_) != cudaSuccess) sticky_error_ = true;
    }
  }
  return Status::ok();
}

// ---- cuBLASLt BF16 baselines ----------------------------------------------------------------------

// BF16 expert weights (random N(0, 0.02), generated on the device): as many of the E sets as fit in
// the free memory less a 4 GB reserve; expert e uses set e mod n_sets (with fewer sets than experts,
// experts share weights: the baseline then reads fewer distinct bytes than a real layer, which
// favors it). Plus the permuted activation buffers for the largest T.
Status MoeBench::setup_baseline(const Layer& L, int64_t max_t) {
  const int64_t H = L.h, I = L.inter, rows = max_t * L.k;
  baseline_note_.clear();
  FP4KIT_RETURN_IF_ERROR(xp_.alloc(size_t(rows * H * 2), "baseline X"));
  FP4KIT_RETURN_IF_ERROR(y1_.alloc(size_t(rows * 2 * I * 2), "baseline Y1"));
  FP4KIT_RETURN_IF_ERROR(hp_.alloc(size_t(rows * I * 2), "baseline H"));
  FP4KIT_RETURN_IF_ERROR(y2_.alloc(size_t(rows * H * 2), "baseline Y2"));
  FP4KIT_RETURN_IF_ERROR(fill_random(xp_.data(), DType::kBF16, rows * H, opt_.seed ^ 0xb1, Distribution::kNormal, 1.0f, stream_));
  FP4KIT_RETURN_IF_ERROR(fill_random(hp_.data(), DType::kBF16, rows * I, opt_.seed ^ 0xb2, Distribution::kNormal, 1.0f, stream_));
  size_t free_b = 0, total_b = 0;
  MB_CUDA(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  const int64_t per_set = 3 * I * H * 2;
  const int64_t reserve = int64_t(4) << 30;
  const int64_t fit = (int64_t(free_b) - reserve) / per_set;
  n_bf16_sets_ = std::min<int64_t>(L.e, std::max<int64_t>(fit, 0));
  if (n_bf16_sets_ < 1) {
    baseline_note_ = "no memory for BF16 expert weights";
    return Status(StatusCode::kBufferTooSmall, "cuBLASLt baseline: " + baseline_note_);
  }
  FP4KIT_RETURN_IF_ERROR(bf16_w_.alloc(size_t(n_bf16_sets_ * per_set), "BF16 expert weights"));
  FP4KIT_RETURN_IF_ERROR(fill_random(bf16_w_.data(), DType::kBF16, n_bf16_sets_ * per_set / 2, opt_.seed ^ 0xb3,
                                     Distribution::kNormal, 0.02f, stream_));
  if (n_bf16_sets_ < L.e) {
    baseline_note_ = strprintf("BF16 weights: %lld of %lld expert sets fit (expert e uses set e mod %lld)",
                               (long long)n_bf16_sets_, (long long)L.e, (long long)n_bf16_sets_);
  }
  MB_CUDA(cudaStreamSynchronize(stream_), "baseline setup");
  if (opt_.verbose) {
    progress("  baseline: %lld BF16 expert sets (%.2f GB), activations for %lld rows, free %.1f GB of %.1f GB\n",
             (long long)n_bf16_sets_, double(n_bf16_sets_ * per_set) / 1e9, (long long)rows, double(free_b) / 1e9,
             double(total_b) / 1e9);
  }
  return Status::ok();
}

// One GEMM pair per active expert; expert e's rows are rows [off_e, off_e + rows_e) of the permuted
// buffers (experts in ascending order). Timed by CUDA-graph replay (its 2 * n_active launches would
// otherwise measure host launch cost); tuned (best of cuBLASLt's heuristic candidates, per M) first.
Status MoeBench::run_cublas_experts(const Layer& L, int64_t T, std::vector<RoutingSet>& sets, Row* row) {
  const int64_t H = L.h, I = L.inter;
  const uint16_t* w = bf16_w_.as<uint16_t>();
  const int64_t per_set = 3 * I * H;  // elements
  std::vector<std::vector<CublasLtGemmArgs>> calls(sets.size());
  for (size_t si = 0; si < sets.size(); ++si) {
    int64_t off = 0;
    for (int64_t e = 0; e < L.e; ++e) {
      const int64_t r = sets[si].rows[size_t(e)];
      if (r == 0) continue;
      const uint16_t* w1 = w + (e % n_bf16_sets_) * per_set;
      const uint16_t* w2 = w1 + 2 * I * H;
      CublasLtGemmArgs a;
      a.precision = CublasLtPrecision::kBF16;
      a.m = r;
      a.n = 2 * I;
      a.k = H;
      a.x = xp_.as<uint16_t>() + off * H;
      a.w = w1;
      a.y = y1_.as<uint16_t>() + off * 2 * I;
      calls[si].push_back(a);
      CublasLtGemmArgs b = a;
      b.n = H;
      b.k = I;
      b.x = hp_.as<uint16_t>() + off * I;
      b.w = w2;
      b.y = y2_.as<uint16_t>() + off * H;
      calls[si].push_back(b);
      off += r;
    }
  }
  auto fn = [&](int i) -> Status {
    for (const CublasLtGemmArgs& a : calls[size_t(i) % calls.size()]) FP4KIT_RETURN_IF_ERROR(lt_.run(a, stream_));
    return Status::ok();
  };
  for (size_t si = 0; si < calls.size(); ++si) FP4KIT_RETURN_IF_ERROR(fn(int(si)));  // tunes every new M
  MB_CUDA(cudaStreamSynchronize(stream_), "baseline tuning");
  double eager = kNaN;
  if (opt_.graph) FP4KIT_RETURN_IF_ERROR(time_eager(fn, &eager));
  row->us = eager;
  FP4KIT_RETURN_IF_ERROR(time_graph(fn, int(sets.size()), 1000.0, &row->graph_us));
  return Status::ok();
}

// The dense GEMMs of the same total size: [T*k, H] x [2I, H]^T and [T*k, I] x [H, I]^T.
Status MoeBench::run_cublas_dense(const Layer& L, int64_t T, Row* row) {
  const int64_t H = L.h, I = L.inter, M = T * L.k;
  CublasLtGemmArgs a;
  a.precision = CublasLtPrecision::kBF16;
  a.m = M;
  a.n = 2 * I;
  a.k = H;
  a.x = xp_.data();
  a.w = bf16_w_.data();
  a.y = y1_.data();
  CublasLtGemmArgs b = a;
  b.n = H;
  b.k = I;
  b.x = hp_.data();
  b.w = bf16_w_.as<uint16_t>() + 2 * I * H;
  b.y = y2_.data();
  FP4KIT_RETURN_IF_ERROR(lt_.tune(&a, 1, stream_));
  FP4KIT_RETURN_IF_ERROR(lt_.tune(&b, 1, stream_));
  auto fn = [&](int) -> Status {
    FP4KIT_RETURN_IF_ERROR(lt_.run(a, stream_));
    return lt_.run(b, stream_);
  };
  FP4KIT_RETURN_IF_ERROR(time_eager(fn, &row->us));
  FP4KIT_RETURN_IF_ERROR(time_graph(fn, 2, row->us, &row->graph_us));
  return Status::ok();
}

// ---- presets ------------------------------------------------------------------------------------------------

Status MoeBench::run_preset(const MoeBenchPreset& pr, const std::vector<int64_t>& ts) {
  const int64_t max_t = *std::max_element(ts.begin(), ts.end());
  const int64_t H = pr.hidden, I = pr.inter, k = pr.top_k;
  lt_.clear_cache();
  release_baseline();  // a previous preset that failed half-way may still hold them
  Layer L;
  FP4KIT_RETURN_IF_ERROR(build_layer(pr, opt_.seed * 1000003 + std::hash<std::string>()(pr.name), &L));
  FP4KIT_RETURN_IF_ERROR(x_.alloc(size_t(max_t * H * 2), "hidden states"));
  FP4KIT_RETURN_IF_ERROR(out_.alloc(size_t(max_t * H * 2), "output"));
  FP4KIT_RETURN_IF_ERROR(fill_random(x_.data(), DType::kBF16, max_t * H, opt_.seed * 7919 + 3, Distribution::kNormal, 1.0f, stream_));
  FP4KIT_RETURN_IF_ERROR(quantize_input(L, max_t));
  {  // the workspace for the largest T now, so that the baseline's memory plan leaves room for it
    RoutingSet dummy;
    MoeParams p = moe_params(L, opt_.mode == MoeBenchMode::kW4A16 ? 0 : 1, max_t, dummy, x_.data(), out_.data());
    size_t ws = moe_workspace_bytes(p);
    p.mode = MoeMode::kW4A16;
    ws = std::max(ws, moe_workspace_bytes(p));
    FP4KIT_RETURN_IF_ERROR(ensure(ws_, ws, "fused_moe workspace"));
  }
  bool baseline = opt_.baseline;
  if (baseline) {
    const Status b = setup_baseline(L, max_t);
    if (!b.is_ok()) {
      progress("!!! %s: cuBLASLt baseline skipped: %s\n", pr.name.c_str(), b.to_string().c_str());
      baseline = false;
      release_baseline();
      if (cudaStreamSynchronize(stream_) != cudaSuccess) {
        sticky_error_ = true;
        return b;
      }
    }
  }
  progress("[%s] H=%lld E=%lld k=%lld I=%lld: NVFP4 weights %.2f GB (%.2f MB per expert)%s%s\n", pr.name.c_str(),
           (long long)H, (long long)pr.experts, (long long)k, (long long)I, double(L.w1p_bytes + L.w2p_bytes) / 1e9,
           L.expert_bytes() / 1e6, baseline_note_.empty() ? "" : "; ", baseline_note_.c_str());

  for (bool skewed : routings()) {
    const std::string rname = skewed ? "skewed" : "uniform";
    for (int64_t T : ts) {
      Row proto;
      proto.preset = pr.name;
      proto.h = H;
      proto.e = pr.experts;
      proto.k = k;
      proto.inter = I;
      proto.t = T;
      proto.routing = rname;
      proto.flops = 2.0 * double(T * k) * (3.0 * double(I) * double(H));
      // Routing tables: enough that the experts touched by consecutive calls exceed 2x L2.
      std::vector<RoutingSet> sets(1);
      const uint64_t rseed = opt_.seed * 31 + uint64_t(T) * 1009 + (skewed ? 7 : 0) + std::hash<std::string>()(pr.name);
      make_routing(L, T, skewed, rseed, &sets[0]);
      const int r = std::min(kMaxRoutingSets, rotation_count(size_t(double(sets[0].n_active) * L.expert_bytes()), l2_bytes_,
                                                             kMaxRoutingSets));
      sets.resize(size_t(r));
      for (int i = 1; i < r; ++i) make_routing(L, T, skewed, rseed + uint64_t(i) * 0x9e3779b9ull, &sets[size_t(i)]);
      double n_act = 0;
      for (RoutingSet& s : sets) {
        FP4KIT_RETURN_IF_ERROR(upload_routing(&s));
        n_act += double(s.n_active);
      }
      n_act /= double(sets.size());
      proto.sets = r;
      proto.n_active = n_act;
      if (opt_.verbose) {
        progress("  T=%lld %s: %d routing table(s), %.1f active experts per call (%.1f MB)\n", (long long)T,
                 rname.c_str(), r, n_act, n_act * L.expert_bytes() / 1e6);
      }
      const size_t first = rows_.size();
      auto fail = [&](Impl impl, const Status& s) {
        Row row = proto;
        row.impl = impl;
        row.error = s.to_string();
        ++failures_;
        progress("!!! %s T=%lld %s %s: %s\n", pr.name.c_str(), (long long)T, rname.c_str(), impl_name(impl),
                 row.error.c_str());
        rows_.push_back(row);
        if (cudaStreamSynchronize(stream_) != cudaSuccess) sticky_error_ = true;
      };
      if (baseline) {
        Row row = proto;
        row.impl = Impl::kCublasExperts;
        row.weight_bytes = n_act * 3.0 * double(I) * double(H) * 2.0;
        const Status s = run_cublas_experts(L, T, sets, &row);
        if (s.is_ok()) rows_.push_back(row);
        else fail(Impl::kCublasExperts, s);
        if (sticky_error_) return Status(StatusCode::kCudaError, "sticky CUDA error");
        if (T >= 4096) {
          Row d = proto;
          d.impl = Impl::kCublasDense;
          d.sets = 1;
          d.n_active = kNaN;
          d.weight_bytes = 3.0 * double(I) * double(H) * 2.0;
          const Status ds = run_cublas_dense(L, T, &d);
          if (ds.is_ok()) rows_.push_back(d);
          else fail(Impl::kCublasDense, ds);
          if (sticky_error_) return Status(StatusCode::kCudaError, "sticky CUDA error");
        }
      }
      for (int mode : modes()) {
        Row row = proto;
        row.impl = mode == 0 ? Impl::kW4A16 : Impl::kW4A4;
        row.weight_bytes = n_act * L.expert_bytes();
        const Status s = run_fp4kit(L, mode, T, sets, &row);
        if (s.is_ok()) rows_.push_back(row);
        else fail(row.impl, s);
        if (sticky_error_) return Status(StatusCode::kCudaError, "sticky CUDA error");
      }
      std::string line;
      for (size_t i = first; i < rows_.size(); ++i) {
        const Row& x = rows_[i];
        line += strprintf("  %s=%s", impl_name(x.impl),
                          !x.error.empty() ? "ERROR" : (fmt_fixed(x.best_us(), 1) + "us").c_str());
        if (x.checked) line += x.check_ok ? "(ok " + fmt_sci(x.rel_err) + ")" : "(CHECK FAILED)";
      }
      progress("[%s T=%lld %s]%s\n", pr.name.c_str(), (long long)T, rname.c_str(), line.c_str());
    }
  }
  // Free the baseline before the reduced check allocates its own layer.
  release_baseline();
  return Status::ok();
}

// The reduced-size variant of a preset (H <= 512, I <= 256, same E and k) at a large T: checked
// against the CPU reference, not timed (the full-size layer at large T is too slow for the reference).
Status MoeBench::run_reduced_check(const MoeBenchPreset& pr, int64_t T) {
  MoeBenchPreset red = pr;
  red.name = pr.name + ".reduced";
  red.hidden = std::min(pr.hidden, kReducedH);
  red.inter = std::min(pr.inter, kReducedI);
  // The fields every row of the reduced variant shares.
  auto reduced_row = [&](const std::string& routing) {
    Row row;
    row.preset = red.name;
    row.h = red.hidden;
    row.e = red.experts;
    row.k = red.top_k;
    row.inter = red.inter;
    row.t = T;
    row.routing = routing;
    row.reduced = true;
    return row;
  };
  // A variant that cannot be set up is a failure too (an ERROR row), not only a progress line.
  auto setup_failed = [&](const std::string& routing, const Status& st) {
    Row row = reduced_row(routing);
    row.error = st.to_string();
    rows_.push_back(row);
    ++failures_;
    if (cudaStreamSynchronize(stream_) != cudaSuccess) sticky_error_ = true;
    return st;
  };
  Layer L;
  {
    const Status st = [&]() -> Status {
      FP4KIT_RETURN_IF_ERROR(build_layer(red, opt_.seed * 1000003 + std::hash<std::string>()(red.name), &L));
      FP4KIT_RETURN_IF_ERROR(x_.alloc(size_t(T * red.hidden * 2), "hidden states"));
      FP4KIT_RETURN_IF_ERROR(out_.alloc(size_t(T * red.hidden * 2), "output"));
      FP4KIT_RETURN_IF_ERROR(fill_random(x_.data(), DType::kBF16, T * red.hidden, opt_.seed * 7919 + 5,
                                         Distribution::kNormal, 1.0f, stream_));
      return quantize_input(L, T);
    }();
    if (!st.is_ok()) return setup_failed("-", st);
  }
  for (bool skewed : routings()) {
    RoutingSet s;
    make_routing(L, T, skewed, opt_.seed * 17 + uint64_t(T) + (skewed ? 3 : 0), &s);
    {
      const Status st = upload_routing(&s);
      if (!st.is_ok()) return setup_failed(skewed ? "skewed" : "uniform", st);
    }
    for (int mode : modes()) {
      Row row = reduced_row(skewed ? "skewed" : "uniform");
      row.impl = mode == 0 ? Impl::kW4A16 : Impl::kW4A4;
      row.n_active = double(s.n_active);
      row.weight_bytes = double(s.n_active) * L.expert_bytes();
      row.flops = 2.0 * double(T * red.top_k) * 3.0 * double(red.inter) * double(red.hidden);
      row.note = "check only";
      const MoeParams p = moe_params(L, mode, T, s, x_.data(), out_.data());
      const Status st = [&]() -> Status {
        FP4KIT_RETURN_IF_ERROR(ensure(ws_, moe_workspace_bytes(p), "fused_moe workspace"));
        return check_point(L, mode, T, s, x_.data(), &row);
      }();
      if (!st.is_ok()) {
        row.error = st.to_string();
        ++failures_;
        progress("!!! %s T=%lld %s: %s\n", red.name.c_str(), (long long)T, impl_name(row.impl), row.error.c_str());
        if (cudaStreamSynchronize(stream_) != cudaSuccess) {
          sticky_error_ = true;
          rows_.push_back(row);
          return st;
        }
      }
      progress("[%s T=%lld %s] %s %s\n", red.name.c_str(), (long long)T, row.routing.c_str(), impl_name(row.impl),
               !row.error.empty() ? "ERROR" : (row.check_ok ? ("ok " + fmt_sci(row.rel_err)).c_str() : "CHECK FAILED"));
      rows_.push_back(row);
    }
  }
  return Status::ok();
}

// ---- report ----------------------------------------------------------------------------------------------------

void MoeBench::print_report() {
  // Baseline times per point.
  using Key = std::tuple<std::string, int64_t, std::string>;  // preset, T, routing
  std::map<Key, std::pair<double, double>> base;              // -> (experts us, dense us)
  for (const Row& r : rows_) {
    auto& b = base.try_emplace(Key{r.preset, r.t, r.routing}, kNaN, kNaN).first->second;
    if (!r.error.empty()) continue;
    if (r.impl == Impl::kCublasExperts) b.first = r.best_us();
    if (r.impl == Impl::kCublasDense) b.second = r.best_us();
  }
  std::vector<std::string> headers = {"preset", "H", "E", "k", "I", "T", "routing", "impl", "us"};
  if (opt_.graph || opt_.baseline) headers.push_back("graph_us");
  for (const char* h : {"tables", "n_act", "act_MB", "wTB/s", "bw/copy", "TFLOP/s", "x_bf16", "x_dense", "rel_err",
                        "check", "note"}) {
    headers.push_back(h);
  }
  Table table(headers);
  for (const Row& r : rows_) {
    const double t = r.best_us();
    const bool timed = r.error.empty() && !std::isnan(t);
    const auto& b = base[Key{r.preset, r.t, r.routing}];
    std::vector<std::string> c = {r.preset, std::to_string(r.h), std::to_string(r.e), std::to_string(r.k),
                                  std::to_string(r.inter), std::to_string(r.t), r.routing, impl_name(r.impl),
                                  !r.error.empty() ? "ERROR" : fmt_fixed(r.us, 2)};
    if (opt_.graph || opt_.baseline) c.push_back(fmt_fixed(r.graph_us, 2));
    c.push_back(r.reduced ? "-" : std::to_string(r.sets));
    c.push_back(fmt_fixed(r.n_active, 1));
    c.push_back(fmt_fixed(r.weight_bytes / 1e6, 1));
    c.push_back(timed ? fmt_fixed(r.weight_bytes / (t * 1e6), 3) : "-");
    c.push_back(timed ? fmt_fixed(r.weight_bytes / (t * 1e-6) / copy_bw_, 2) : "-");
    c.push_back(timed ? fmt_fixed(r.flops / (t * 1e6), 1) : "-");
    c.push_back(timed && is_fp4kit(r.impl) ? fmt_fixed(b.first / t, 2) : "-");
    c.push_back(timed && is_fp4kit(r.impl) ? fmt_fixed(b.second / t, 2) : "-");
    c.push_back(r.checked ? fmt_sci(r.rel_err) : "-");
    c.push_back(!r.error.empty() ? "ERROR" : (!r.checked ? "-" : (r.check_ok ? "ok" : "FAIL")));
    std::string note = r.note;
    if (!r.error.empty()) note += "error: " + (r.error.size() > 90 ? r.error.substr(0, 87) + "..." : r.error);
    c.push_back(note);
    table.add_row(c);
  }

  // Summary per (preset, routing, mode).
  std::ostringstream sum;
  sum << "summary (per preset, routing and mode; t = graph_us when measured, else us):\n";
  {
    struct Agg {
      double min_bw = kNaN, min_bw_large = kNaN, min_x_bf16 = kNaN, min_x_dense = kNaN, t1_graph = kNaN;
      int64_t at_bw = 0, at_bw_large = 0, at_x = 0, at_dense = 0;
    };
    std::vector<std::string> order;
    std::map<std::string, Agg> agg;
    for (const Row& r : rows_) {
      if (!is_fp4kit(r.impl) || r.reduced || !r.error.empty()) continue;
      const std::string key = r.preset + " " + r.routing + " " + impl_name(r.impl);
      if (!agg.count(key)) order.push_back(key);
      Agg& a = agg[key];
      const double t = r.best_us();
      const auto& b = base[Key{r.preset, r.t, r.routing}];
      if (r.t <= 16) {
        const double bw = r.weight_bytes / (t * 1e-6) / copy_bw_;
        keep_min(a.min_bw, a.at_bw, bw, r.t);
        if (r.weight_bytes > double(kLargeActiveBytes)) keep_min(a.min_bw_large, a.at_bw_large, bw, r.t);
        keep_min(a.min_x_bf16, a.at_x, b.first / t, r.t);
      }
      if (r.t >= 4096) keep_min(a.min_x_dense, a.at_dense, b.second / t, r.t);
      if (r.t == 1) a.t1_graph = r.graph_us;
    }
    auto at = [](double v, int64_t t, int d) { return fmt_min_at(v, t, d, "T"); };
    for (const std::string& key : order) {
      const Agg& a = agg[key];
      std::string line = "  " + key + ": T<=16: min active-weight BW / copy BW " + at(a.min_bw, a.at_bw, 2);
      line += ", where active weights > 64 MB " + at(a.min_bw_large, a.at_bw_large, 2);
      if (!std::isnan(a.min_bw_large)) line += a.min_bw_large >= 0.70 ? " [>= 0.70: met]" : " [>= 0.70: MISSED]";
      line += "; min speedup vs BF16 per-expert " + at(a.min_x_bf16, a.at_x, 2);
      line += " | T>=4096: min TFLOP/s vs dense cuBLASLt BF16 " + at(a.min_x_dense, a.at_dense, 3);
      if (!std::isnan(a.min_x_dense)) line += a.min_x_dense >= 0.80 ? " [>= 0.80: met]" : " [>= 0.80: MISSED]";
      if (!std::isnan(a.t1_graph)) line += " | T=1 graph " + fmt_fixed(a.t1_graph, 2) + " us";
      if (!std::isnan(a.t1_graph) && key.rfind("qwen3.6-35b-a3b ", 0) == 0) {
        line += a.t1_graph <= 15.0 ? " [<= 15 us: met]" : " [<= 15 us: MISSED]";
      }
      sum << line << "\n";
    }
  }
  int checked = 0, passed = 0, errors = 0;
  for (const Row& r : rows_) {
    if (!r.error.empty()) ++errors;
    if (r.checked) {
      ++checked;
      if (r.check_ok) ++passed;
    }
  }
  sum << strprintf("checks: %d/%d passed (rel_err <= %g against the CPU reference)%s; %d point(s) could not run\n", passed,
                   checked, opt_.max_rel_err, passed == checked ? "" : "  <<< FAILURES", errors);
  sum << result_line();

  std::string head = device_head();
  head += "timing: us = median of per-call CUDA-event times (eager); graph_us = median CUDA-graph replay / calls; "
          "cuBLASLt per-expert rows are timed by graph replay\n";
  head += "routing tables rotated per call so that the touched experts exceed 2x L2 (tables column); act_MB = "
          "active weight bytes per call (NVFP4: 0.5625 B/element incl. scales; BF16: 2 B)\n";
  head += std::string("fused_moe path: ") +
          (opt_.path == MoePath::kPipeline   ? "pipeline (forced)"
           : opt_.path == MoePath::kPerEntry ? "per-entry (forced)"
           : opt_.path == MoePath::kFusedDecode ? "fused-decode (forced)"
                                             : "auto (per-entry or fused-decode for small batches, src/moe/moe_path.h)") +
          "\n";
  head += "bw/copy = act_MB / t / copy_bw; x_bf16 = t(cuBLASLt per-expert) / t; x_dense = t(cuBLASLt dense, same "
          "FLOPs) / t = TFLOP/s ratio (docs/MOE.md)\n";
  emit_report({head, sum.str(), table.text(), table.csv(), table.markdown()}, opt_.csv, opt_.markdown, opt_.output);
}

int MoeBench::run() {
  if (!start() || !measure_copy_bandwidth()) return 2;
  progress("device %s, copy bandwidth %.3f TB/s (read+write), L2 %lld MB\n", device_name_.c_str(), copy_bw_ / 1e12,
           (long long)(l2_bytes_ >> 20));
  const std::vector<MoeBenchPreset> presets = opt_.presets.empty() ? default_moe_bench_presets() : opt_.presets;
  const std::vector<int64_t> ts =
      !opt_.t_values.empty() ? opt_.t_values : (opt_.quick ? quick_moe_bench_t() : default_moe_bench_t());
  const int64_t max_t = *std::max_element(ts.begin(), ts.end());
  for (const MoeBenchPreset& pr : presets) {
    const Status s = run_preset(pr, ts);
    if (!s.is_ok()) {
      progress("!!! %s: %s\n", pr.name.c_str(), s.to_string().c_str());
      ++failures_;
      Row r;
      r.preset = pr.name;
      r.h = pr.hidden;
      r.e = pr.experts;
      r.k = pr.top_k;
      r.inter = pr.inter;
      r.error = "preset failed: " + s.to_string();
      rows_.push_back(r);
      if (sticky_error_ || cudaDeviceSynchronize() != cudaSuccess) {
        sticky_error_ = true;
        break;
      }
    }
    if (opt_.check && opt_.reduced_check && max_t > opt_.check_max_t) {
      const Status rc = run_reduced_check(pr, std::min(max_t, kReducedMaxT));
      if (!rc.is_ok()) {
        progress("!!! %s reduced check: %s\n", pr.name.c_str(), rc.to_string().c_str());
        if (sticky_error_) break;
      }
    }
    release_baseline();
    x_.release();
    x4_.release();
    x4s_.release();
    out_.release();
    ws_.release();
    scratch_c_.release();
    scratch_s_.release();
  }
  return finish();
}

}  // namespace

int run_moe_bench(const MoeBenchOptions& options) {
  MoeBench bench(options);
  return bench.run();
}

}  // namespace fp4kit::bench
