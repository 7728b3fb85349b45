// bench/bench_gemm.cu — `fp4kit bench gemm` (see bench_gemm.h and docs/BENCH_GEMM.md).
//
// Per shape (N, K): random BF16 weights W; the same W quantized to NVFP4 by fp4kit's GPU quantizer
// (exact numerics, linear scales) and prepacked, and to FP8 E4M3 with a per-tensor scale. Every
// format's weight is rotated over enough copies that one pass over all copies exceeds 2x L2.
// Per M: random BF16 activations X[M, K] (and their FP8 and NVFP4 128x4 quantizations, made before
// timing), then for each implementation a correctness check against cuBLASLt BF16 on the dequantized
// operands, then eager timing (median of per-call CUDA-event times) and, with --graph, graph replay.
#include "bench_gemm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cublaslt_baseline.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "fp4kit/status.h"
#include "fp4kit/types.h"
#include "bench_util.h"
#include "gemm_bench_support.h"
#include "gemm/tactics.h"  // heuristic_tactic: the untuned choice, for --tactic all

namespace fp4kit::bench {

// ---- shapes, M sweeps, options ---------------------------------------------------------------------

std::vector<GemmBenchShape> default_gemm_bench_shapes() {
  return {
      {"seed.8192x28672", 8192, 28672}, {"seed.8192x8192", 8192, 8192},
      {"llama8b.qkv", 6144, 4096},      {"llama8b.o", 4096, 4096},
      {"llama8b.gate_up", 28672, 4096}, {"llama8b.down", 4096, 14336},
  };
}

std::vector<int64_t> default_gemm_bench_m() {
  std::vector<int64_t> m;
  for (int64_t v = 1; v <= 16384; v *= 2) m.push_back(v);
  return m;
}

std::vector<int64_t> quick_gemm_bench_m() { return {1, 16, 128, 2048, 8192}; }

namespace {

// "1,2,4", "1:16384:x2", "128:1024:+128", "4k".
bool parse_shape_list(const std::string& text, std::vector<GemmBenchShape>* out, std::string* error) {
  const std::vector<GemmBenchShape> all = default_gemm_bench_shapes();
  std::vector<GemmBenchShape> shapes;
  auto add = [&](const GemmBenchShape& s) {
    for (const auto& e : shapes) {
      if (e.n == s.n && e.k == s.k) return;
    }
    shapes.push_back(s);
  };
  for (const std::string& item : split_text(text, ',')) {
    if (item == "all") {
      for (const auto& s : all) add(s);
      continue;
    }
    bool matched = false;
    for (const auto& s : all) {
      const std::string& nm = s.name;
      const auto dot = nm.find('.');
      const bool family = nm.compare(0, dot, item) == 0 && dot == item.size();  // "seed", "llama8b"
      const bool exact = nm == item || (dot != std::string::npos && nm.substr(dot + 1) == item);
      if (family || exact) {
        add(s);
        matched = true;
      }
    }
    if (matched) continue;
    const auto x = item.find('x');
    int64_t n = 0, k = 0;
    if (x != std::string::npos && parse_count(item.substr(0, x), &n) && parse_count(item.substr(x + 1), &k) && n > 0 &&
        k > 0) {
      if (k % 32 != 0 || n % 16 != 0) {
        *error = "--shapes: '" + item + "': N must be a multiple of 16 and K of 32";
        return false;
      }
      add({std::to_string(n) + "x" + std::to_string(k), n, k});
      continue;
    }
    *error = "--shapes: unknown shape '" + item + "' (seed, llama8b, all, qkv, o, gate_up, down, NxK)";
    return false;
  }
  *out = shapes;
  return true;
}

}  // namespace

std::string gemm_bench_usage() {
  return R"(fp4kit bench gemm [options]

fp4kit NVFP4 GEMMs (W4A16: BF16 activations; W4A4: NVFP4 activations with 128x4 scales) against
cuBLASLt BF16 and FP8 (E4M3, per-tensor scales), Y[M,N] = X[M,K] * W[N,K]^T, on LLM layer shapes.
Every point is checked against cuBLASLt BF16 on the dequantized operands before it is timed.
Details: docs/BENCH_GEMM.md.

  --quick              M in {1,16,128,2048,8192} (unless --m is given)
  --shapes LIST        seed, llama8b, all, a layer name (qkv, o, gate_up, down, seed.8192x8192...)
                       or NxK; comma-separated (default: all six)
  --m LIST             M values: "1,16,128" or ranges "1:16384:x2", "128:1024:+128" (default 1..16384 x2)
  --mode MODE          w4a16 | w4a4 | both (default both)
  --tactic T           auto (default) | ID | all (every tactic that can implement the point, + best)
  --no-baseline        skip the cuBLASLt BF16/FP8 rows (speedup columns then stay empty)
  --fp8-fast-accum     cuBLASLt FP8 with fast accumulation (default: accurate accumulation)
  --graph              also time CUDA-graph replay (graph_us; points under 200 us)
  --pdl                fp4kit calls with programmatic dependent launch (GemmParams::enable_pdl):
                       back-to-back calls (and graph replays) overlap one call's tail with the
                       next call's first weight loads
  --no-check           skip the correctness check (rel_err column empty)
  --max-rel-err X      check threshold (default 1e-2)
  --csv | --markdown   table format on stdout (default: aligned text)
  --output FILE        also write the table to FILE (CSV if it ends in .csv, else markdown)
  --warmup N           untimed calls before timing (default 10)
  --warmup-ms X        then untimed calls for X ms more before the timed ones (default 0): long
                       compute-bound calls run at the power cap, whose clock takes ~100 ms to settle
  --reps N             timed calls (default adaptive: --target-ms per measurement, 20..2000 calls)
  --target-ms X        adaptive timing budget (default 300)
  --seed N             random data seed
  --verbose            cuBLASLt algorithm choices and progress details
  --help
Exit code: 0 all points ran and passed, 1 a point failed or could not run, 2 could not start.
)";
}

namespace {

// `fp4kit bench gemm`'s own options; parse_bench_args reads those it shares with `bench moe`.
bool read_gemm_option(GemmBenchOptions& o, OptionReader& r, const std::string& a) {
  std::string& err = r.error;
  std::string s;
  int64_t iv = 0;
  if (a == "--shapes") {
    if (r.value(&s)) parse_shape_list(s, &o.shapes, &err);
  } else if (a == "--m") {
    if (r.value(&s)) parse_count_list(s, "--m", &o.m_values, &err);
  } else if (a == "--mode") {
    read_mode_value(r, &o.mode);
  } else if (a == "--tactic") {
    if (!r.value(&s)) return true;
    if (s == "auto") {
      o.tactic = -1;
      o.all_tactics = false;
    } else if (s == "all") {
      o.all_tactics = true;
    } else if (parse_count(s, &iv)) {
      o.tactic = static_cast<int>(iv);
      o.all_tactics = false;
    } else {
      err = "--tactic: '" + s + "' (auto, all or a tactic id)";
    }
  } else if (a == "--fp8-fast-accum") {
    o.fp8_fast_accum = true;
  } else if (a == "--pdl") {
    o.pdl = true;
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool parse_gemm_bench_args(const std::vector<std::string>& args, GemmBenchOptions* options, std::string* error,
                           bool* help) {
  return parse_bench_args(args, options, error, help, read_gemm_option);
}

// ---- the benchmark ---------------------------------------------------------------------------------
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kGraphMaxUs = 200.0;  // --graph times points whose eager median is below this

enum class Impl { kCublasBF16, kCublasFP8, kW4A16, kW4A4 };

const char* impl_name(Impl i) {
  switch (i) {
    case Impl::kCublasBF16: return "cublas.bf16";
    case Impl::kCublasFP8: return "cublas.fp8";
    case Impl::kW4A16: return "fp4kit.w4a16";
    case Impl::kW4A4: return "fp4kit.w4a4";
  }
  return "?";
}

bool is_fp4kit(Impl i) { return i == Impl::kW4A16 || i == Impl::kW4A4; }

// One implementation at one point.
struct Row {
  std::string shape;
  int64_t n = 0, k = 0, m = 0;
  Impl impl = Impl::kCublasBF16;
  std::string tactic;        // fp4kit: "id:name" (+ " (auto)"); cuBLAS: algo description
  int tactic_id = -1;
  bool best_of_all = false;  // --tactic all: the fastest tactic of this point
  bool is_best_row = false;  // --tactic all: the summary row that repeats the best
  double us = kNaN, graph_us = kNaN;
  double weight_bytes = 0, act_bytes = 0, out_bytes = 0;
  double rel_err = kNaN;
  bool checked = false, check_ok = true;
  std::string error;  // non-empty: the point could not run
};

double flops_of(const Row& r) { return 2.0 * double(r.m) * double(r.n) * double(r.k); }

// Weight copies to rotate over: bench_util's count (together > 2x L2), and at least 2 so that a
// weight larger than L2 is never re-read by the next call straight after its own last tiles.
int weight_copies(double bytes, int64_t l2_bytes) {
  return std::max(2, rotation_count(static_cast<size_t>(bytes), l2_bytes));
}

// Everything a shape needs on the device, freed when the shape is done.
struct ShapeBuffers {
  int64_t n = 0, k = 0, max_m = 0;
  // weights
  std::vector<GpuBuffer> w_bf16;      // rotation copies (different random data each)
  std::vector<GpuBuffer> w_fp8;       // rotation copies of the E4M3 quantization of w_bf16[0]
  GpuBuffer w_fp8_scale;              // float
  GpuBuffer w_fp8_dec;                // BF16 decode of w_fp8 (no scale), FP8 check reference
  GpuBuffer w_codes, w_scales;        // NVFP4 of w_bf16[0], linear scales
  GpuBuffer w_dq;                     // BF16 e2m1 * sf (exact; no global scale)
  std::vector<GpuBuffer> w_prepacked; // rotation copies
  GpuBuffer gs_w;                     // float encode global scale
  float gs_w_host = 1.0f;
  float w_fp8_scale_host = 1.0f;
  // activations (prefix [M, K] of the max-M buffers)
  GpuBuffer x_bf16, x_fp8, x_fp8_scale, x_codes, x_scales, x_dq, gs_x;
  // outputs
  GpuBuffer y, y_ref;
  // scalars and scratch
  GpuBuffer alpha_w4a16, alpha_w4a4, amax_scratch, err_scratch, gs_workspace, gemm_workspace;
};

class GemmBench final : public BenchDriver {
 public:
  explicit GemmBench(const GemmBenchOptions& o)
      : BenchDriver("fp4kit bench gemm", {o.warmup, o.reps, o.target_ms, o.min_reps, o.max_reps, o.warmup_ms}), opt_(o) {}
  int run();

 private:
  Status probe_peaks();
  Status setup_shape(const GemmBenchShape& shape, int64_t max_m);
  Status setup_fp4kit_weights();
  Status prepare_fp8_activations(int64_t m);
  Status prepare_nvfp4_activations(int64_t m);
  Status run_point(const GemmBenchShape& shape, int64_t m);
  Status run_cublas(const GemmBenchShape& shape, int64_t m, CublasLtPrecision prec, Row* row);
  Status run_fp4kit(const GemmBenchShape& shape, int64_t m, Impl impl, std::vector<Row>* rows);
  Status check_output(int64_t m, Row* row);
  Status ensure_gemm_workspace(size_t bytes);
  void time_graph_if_small(const CallFn& fn, int rotation, Row* row);
  void finish_rows();
  void print_report() override;

  GemmBenchOptions opt_;
  double probe_bf16_tflops_ = 0, probe_fp8_tflops_ = 0;
  double peak_bf16_tflops_ = 0, peak_fp8_tflops_ = 0;
  CublasLtGemm lt_;
  ShapeBuffers sb_;
  std::vector<Row> rows_;
  // --tactic all: per point, auto (tuned cache or heuristic) and the untuned heuristic vs the best.
  struct TacticGap {
    std::string shape, impl, best, automatic, heuristic;
    int64_t m = 0;
    double auto_ratio = kNaN, heur_ratio = kNaN;  // time / best time (>= 1)
  };
  std::vector<TacticGap> gaps_;
  std::vector<GemmTacticInfo> tactics_;
  std::string fp4_error_;  // non-empty: this shape's NVFP4 weights could not be made
};

#define GB_CUDA(expr, what) FP4KIT_RETURN_IF_ERROR(::fp4kit::bench::cuda_result(int(expr), (what)))

// Compute ceilings: cuBLASLt BF16 and FP8 at 8192^3 (raised later by any larger value seen at M >= 2048).
Status GemmBench::probe_peaks() {
  const int64_t s = 8192;
  GpuBuffer x, w, y, x8, w8, sc, amax;
  FP4KIT_RETURN_IF_ERROR(x.alloc(s * s * 2, "probe X"));
  FP4KIT_RETURN_IF_ERROR(w.alloc(s * s * 2, "probe W"));
  FP4KIT_RETURN_IF_ERROR(y.alloc(s * s * 2, "probe Y"));
  FP4KIT_RETURN_IF_ERROR(fill_random(x.data(), DType::kBF16, s * s, opt_.seed ^ 0xA1, Distribution::kNormal, 1.0f, stream_));
  FP4KIT_RETURN_IF_ERROR(fill_random(w.data(), DType::kBF16, s * s, opt_.seed ^ 0xA2, Distribution::kNormal, 0.02f, stream_));
  CublasLtGemmArgs a;
  a.precision = CublasLtPrecision::kBF16;
  a.m = a.n = a.k = s;
  a.x = x.data();
  a.w = w.data();
  a.y = y.data();
  FP4KIT_RETURN_IF_ERROR(lt_.tune(&a, 1, stream_));
  double us = 0;
  FP4KIT_RETURN_IF_ERROR(time_eager([&](int) { return lt_.run(a, stream_); }, &us));
  probe_bf16_tflops_ = 2.0 * s * s * s / (us * 1e6);

  FP4KIT_RETURN_IF_ERROR(x8.alloc(s * s, "probe X fp8"));
  FP4KIT_RETURN_IF_ERROR(w8.alloc(s * s, "probe W fp8"));
  FP4KIT_RETURN_IF_ERROR(sc.alloc(512, "probe scales"));  // two scales 256 bytes apart
  FP4KIT_RETURN_IF_ERROR(amax.alloc(sizeof(float), "amax"));
  FP4KIT_RETURN_IF_ERROR(quantize_fp8_per_tensor(x.data(), s * s, x8.data(), sc.as<float>(), amax.as<float>(), stream_));
  FP4KIT_RETURN_IF_ERROR(
      quantize_fp8_per_tensor(w.data(), s * s, w8.data(), sc.as<float>() + 64, amax.as<float>(), stream_));
  CublasLtGemmArgs f = a;
  f.precision = CublasLtPrecision::kFP8;
  f.x = x8.data();
  f.w = w8.data();
  f.x_scale = sc.as<float>();
  f.w_scale = sc.as<float>() + 64;
  f.fp8_fast_accum = opt_.fp8_fast_accum;
  FP4KIT_RETURN_IF_ERROR(lt_.tune(&f, 1, stream_));
  FP4KIT_RETURN_IF_ERROR(time_eager([&](int) { return lt_.run(f, stream_); }, &us));
  probe_fp8_tflops_ = 2.0 * s * s * s / (us * 1e6);
  GB_CUDA(cudaStreamSynchronize(stream_), "probe");
  lt_.clear_cache();
  return Status::ok();
}

Status GemmBench::ensure_gemm_workspace(size_t bytes) {
  if (bytes <= sb_.gemm_workspace.bytes() && sb_.gemm_workspace.data()) return Status::ok();
  return sb_.gemm_workspace.alloc(std::max<size_t>(bytes, 1 << 20), "fp4kit GEMM workspace");
}

Status GemmBench::setup_shape(const GemmBenchShape& shape, int64_t max_m) {
  sb_ = ShapeBuffers();  // frees the previous shape's buffers
  lt_.clear_cache();
  const int64_t n = shape.n, k = shape.k;
  sb_.n = n;
  sb_.k = k;
  sb_.max_m = max_m;
  const bool need_base = opt_.baseline;

  FP4KIT_RETURN_IF_ERROR(sb_.amax_scratch.alloc(sizeof(float), "amax"));
  FP4KIT_RETURN_IF_ERROR(sb_.err_scratch.alloc(rel_err_scratch_bytes(), "error scratch"));
  FP4KIT_RETURN_IF_ERROR(sb_.alpha_w4a16.alloc(sizeof(float), "alpha"));
  FP4KIT_RETURN_IF_ERROR(sb_.alpha_w4a4.alloc(sizeof(float), "alpha"));
  FP4KIT_RETURN_IF_ERROR(sb_.gs_w.alloc(sizeof(float), "gs_w"));
  FP4KIT_RETURN_IF_ERROR(sb_.gs_x.alloc(sizeof(float), "gs_x"));
  FP4KIT_RETURN_IF_ERROR(sb_.w_fp8_scale.alloc(sizeof(float), "w fp8 scale"));
  FP4KIT_RETURN_IF_ERROR(sb_.x_fp8_scale.alloc(sizeof(float), "x fp8 scale"));

  // BF16 weights: copy 0 is the source of every other format.
  const double wbytes_bf16 = 2.0 * n * k;
  const int r_bf16 = need_base ? weight_copies(wbytes_bf16, l2_bytes_) : 1;
  sb_.w_bf16.resize(r_bf16);
  for (int i = 0; i < r_bf16; ++i) {
    FP4KIT_RETURN_IF_ERROR(sb_.w_bf16[i].alloc(size_t(wbytes_bf16), "W bf16"));
    FP4KIT_RETURN_IF_ERROR(fill_random(sb_.w_bf16[i].data(), DType::kBF16, n * k, opt_.seed * 1000003 + 17 * i + 1, Distribution::kNormal, 0.02f, stream_));
  }

  if (need_base) {
    const int r_fp8 = weight_copies(double(n) * k, l2_bytes_);
    sb_.w_fp8.resize(r_fp8);
    for (int i = 0; i < r_fp8; ++i) FP4KIT_RETURN_IF_ERROR(sb_.w_fp8[i].alloc(size_t(n * k), "W fp8"));
    FP4KIT_RETURN_IF_ERROR(quantize_fp8_per_tensor(sb_.w_bf16[0].data(), n * k, sb_.w_fp8[0].data(),
                                                   sb_.w_fp8_scale.as<float>(), sb_.amax_scratch.as<float>(), stream_));
    for (int i = 1; i < r_fp8; ++i) {
      GB_CUDA(cudaMemcpyAsync(sb_.w_fp8[i].data(), sb_.w_fp8[0].data(), n * k, cudaMemcpyDeviceToDevice, stream_),
              "copy W fp8");
    }
    if (opt_.check) {
      FP4KIT_RETURN_IF_ERROR(sb_.w_fp8_dec.alloc(size_t(2 * n * k), "W fp8 decoded"));
      FP4KIT_RETURN_IF_ERROR(e4m3_to_bf16(sb_.w_fp8[0].data(), n * k, sb_.w_fp8_dec.data(), stream_));
    }
    GB_CUDA(cudaMemcpyAsync(&sb_.w_fp8_scale_host, sb_.w_fp8_scale.data(), sizeof(float), cudaMemcpyDeviceToHost,
                            stream_),
            "read W fp8 scale");
  }

  // Activations and outputs for the largest M of the sweep (each M uses the prefix).
  FP4KIT_RETURN_IF_ERROR(sb_.x_bf16.alloc(size_t(2 * max_m * k), "X bf16"));
  if (need_base) FP4KIT_RETURN_IF_ERROR(sb_.x_fp8.alloc(size_t(max_m * k), "X fp8"));
  if (opt_.mode != GemmBenchMode::kW4A16) {
    FP4KIT_RETURN_IF_ERROR(sb_.x_codes.alloc(size_t(element_buffer_bytes(BlockFormat::kNVFP4, max_m, k)),
                                                "X nvfp4 codes"));
    FP4KIT_RETURN_IF_ERROR(sb_.x_scales.alloc(
        size_t(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, max_m, k)), "X nvfp4 scales"));
  }
  if (opt_.check) FP4KIT_RETURN_IF_ERROR(sb_.x_dq.alloc(size_t(2 * max_m * k), "X dequantized"));
  FP4KIT_RETURN_IF_ERROR(sb_.y.alloc(size_t(2 * max_m * n), "Y"));
  if (opt_.check) FP4KIT_RETURN_IF_ERROR(sb_.y_ref.alloc(size_t(2 * max_m * n), "Y reference"));
  FP4KIT_RETURN_IF_ERROR(fill_random(sb_.x_bf16.data(), DType::kBF16, max_m * k, opt_.seed * 7919 + 3, Distribution::kNormal, 1.0f, stream_));
  GB_CUDA(cudaStreamSynchronize(stream_), "shape setup");

  // fp4kit's side: a failure here leaves the baselines running and marks the fp4kit rows.
  fp4_error_.clear();
  const Status fs = setup_fp4kit_weights();
  if (!fs.is_ok()) {
    fp4_error_ = "NVFP4 weight setup failed: " + fs.to_string();
    progress("!!! %s: %s\n", shape.name.c_str(), fp4_error_.c_str());
    if (cudaStreamSynchronize(stream_) != cudaSuccess) {
      sticky_error_ = true;
      return fs;
    }
  }
  if (opt_.verbose) {
    progress("[%s] N=%lld K=%lld: rotation copies bf16=%zu fp8=%zu nvfp4=%zu (L2 %lld MB), gs_w=%g, fp8 w scale=%g\n",
             shape.name.c_str(), (long long)n, (long long)k, sb_.w_bf16.size(), sb_.w_fp8.size(),
             sb_.w_prepacked.size(), (long long)(l2_bytes_ >> 20), sb_.gs_w_host, sb_.w_fp8_scale_host);
  }
  return Status::ok();
}

// NVFP4 weights through fp4kit's own GPU quantizer (global scale, exact numerics, linear scales),
// the exact dequantization for the reference, and the prepacked rotation copies.
Status GemmBench::setup_fp4kit_weights() {
  const int64_t n = sb_.n, k = sb_.k;
  // NVFP4 weights through fp4kit's own GPU quantizer: global scale, exact numerics, linear scales.
  GlobalScaleParams gp;
  gp.input = sb_.w_bf16[0].data();
  gp.input_dtype = DType::kBF16;
  gp.rows = n;
  gp.cols = k;
  gp.numerics = QuantNumerics::kExact;
  gp.out_global_scale = sb_.gs_w.as<float>();
  const size_t gws = global_scale_workspace_bytes(gp);
  FP4KIT_RETURN_IF_ERROR(sb_.gs_workspace.alloc(std::max<size_t>(gws, 256), "global-scale workspace"));
  FP4KIT_RETURN_IF_ERROR(compute_global_scale(gp, sb_.gs_workspace.data(), sb_.gs_workspace.bytes(), stream_));

  const int64_t codes_bytes = element_buffer_bytes(BlockFormat::kNVFP4, n, k);
  const int64_t scale_bytes = scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kLinear, n, k);
  FP4KIT_RETURN_IF_ERROR(sb_.w_codes.alloc(size_t(codes_bytes), "W nvfp4 codes"));
  FP4KIT_RETURN_IF_ERROR(sb_.w_scales.alloc(size_t(scale_bytes), "W nvfp4 scales"));
  Nvfp4QuantizeParams qp;
  qp.input = sb_.w_bf16[0].data();
  qp.input_dtype = DType::kBF16;
  qp.rows = n;
  qp.cols = k;
  qp.global_scale = sb_.gs_w.as<float>();
  qp.numerics = QuantNumerics::kExact;
  qp.out_codes = sb_.w_codes.data();
  qp.out_codes_bytes = codes_bytes;
  qp.out_scales = sb_.w_scales.data();
  qp.out_scales_bytes = scale_bytes;
  qp.scale_layout = ScaleLayout::kLinear;
  FP4KIT_RETURN_IF_ERROR(quantize_nvfp4(qp, stream_));

  if (opt_.check) {
    FP4KIT_RETURN_IF_ERROR(sb_.w_dq.alloc(size_t(2 * n * k), "W dequantized"));
    DequantizeParams dp;
    dp.format = BlockFormat::kNVFP4;
    dp.elements = sb_.w_codes.data();
    dp.scales = sb_.w_scales.data();
    dp.scale_layout = ScaleLayout::kLinear;
    dp.rows = n;
    dp.cols = k;
    dp.decode_global_scale = nullptr;  // e2m1 * sf exactly; 1/gs goes into alpha
    dp.output = sb_.w_dq.data();
    dp.output_dtype = DType::kBF16;
    dp.output_bytes = 2 * n * k;
    FP4KIT_RETURN_IF_ERROR(dequantize(dp, stream_));
  }

  const int64_t pbytes = prepacked_weight_bytes(n, k);
  const int r_fp4 = weight_copies(double(pbytes), l2_bytes_);
  sb_.w_prepacked.resize(r_fp4);
  for (int i = 0; i < r_fp4; ++i) {
    FP4KIT_RETURN_IF_ERROR(sb_.w_prepacked[i].alloc(size_t(pbytes), "W prepacked"));
    WeightPrepackParams pp;
    pp.n = n;
    pp.k = k;
    pp.codes = sb_.w_codes.as<uint8_t>();
    pp.scales = sb_.w_scales.as<uint8_t>();
    pp.scale_layout = ScaleLayout::kLinear;
    pp.out = sb_.w_prepacked[i].data();
    pp.out_bytes = pbytes;
    FP4KIT_RETURN_IF_ERROR(prepack_weights(pp, stream_));
  }
  GB_CUDA(cudaMemcpyAsync(&sb_.gs_w_host, sb_.gs_w.data(), sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "read gs_w");
  GB_CUDA(cudaStreamSynchronize(stream_), "NVFP4 weight setup");
  const float alpha = 1.0f / sb_.gs_w_host;
  GB_CUDA(cudaMemcpyAsync(sb_.alpha_w4a16.data(), &alpha, sizeof(float), cudaMemcpyHostToDevice, stream_),
          "write alpha");
  GB_CUDA(cudaStreamSynchronize(stream_), "NVFP4 weight setup");
  return Status::ok();
}

// Per M, before timing: the FP8 quantization of X[:M] (baseline) ...
Status GemmBench::prepare_fp8_activations(int64_t m) {
  FP4KIT_RETURN_IF_ERROR(quantize_fp8_per_tensor(sb_.x_bf16.data(), m * sb_.k, sb_.x_fp8.data(),
                                                 sb_.x_fp8_scale.as<float>(), sb_.amax_scratch.as<float>(), stream_));
  GB_CUDA(cudaStreamSynchronize(stream_), "FP8 activation quantization");
  return Status::ok();
}

// ... and its NVFP4 quantization with 128x4 scales (W4A4), with alpha = 1 / (gs_x * gs_w).
Status GemmBench::prepare_nvfp4_activations(int64_t m) {
  const int64_t k = sb_.k;
  GlobalScaleParams gp;
  gp.input = sb_.x_bf16.data();
  gp.input_dtype = DType::kBF16;
  gp.rows = m;
  gp.cols = k;
  gp.numerics = QuantNumerics::kExact;
  gp.out_global_scale = sb_.gs_x.as<float>();
  const size_t gws = global_scale_workspace_bytes(gp);
  if (gws > sb_.gs_workspace.bytes()) {
    FP4KIT_RETURN_IF_ERROR(sb_.gs_workspace.alloc(gws, "global-scale workspace"));
  }
  FP4KIT_RETURN_IF_ERROR(compute_global_scale(gp, sb_.gs_workspace.data(), sb_.gs_workspace.bytes(), stream_));
  Nvfp4QuantizeParams qp;
  qp.input = sb_.x_bf16.data();
  qp.input_dtype = DType::kBF16;
  qp.rows = m;
  qp.cols = k;
  qp.global_scale = sb_.gs_x.as<float>();
  qp.numerics = QuantNumerics::kExact;
  qp.out_codes = sb_.x_codes.data();
  qp.out_codes_bytes = element_buffer_bytes(BlockFormat::kNVFP4, m, k);
  qp.out_scales = sb_.x_scales.data();
  qp.out_scales_bytes = scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, m, k);
  qp.scale_layout = ScaleLayout::kSwizzled128x4;
  FP4KIT_RETURN_IF_ERROR(quantize_nvfp4(qp, stream_));
  float gs_x = 1.0f;
  GB_CUDA(cudaMemcpyAsync(&gs_x, sb_.gs_x.data(), sizeof(float), cudaMemcpyDeviceToHost, stream_), "read gs_x");
  GB_CUDA(cudaStreamSynchronize(stream_), "NVFP4 activation quantization");
  const float alpha = 1.0f / (gs_x * sb_.gs_w_host);
  GB_CUDA(cudaMemcpyAsync(sb_.alpha_w4a4.data(), &alpha, sizeof(float), cudaMemcpyHostToDevice, stream_),
          "write alpha");
  GB_CUDA(cudaStreamSynchronize(stream_), "NVFP4 activation quantization");
  return Status::ok();
}

// rel_err of sb_.y[:m] against sb_.y_ref[:m].
Status GemmBench::check_output(int64_t m, Row* row) {
  RelErrResult r;
  FP4KIT_RETURN_IF_ERROR(relative_error_bf16(sb_.y.data(), sb_.y_ref.data(), m * sb_.n, sb_.err_scratch.data(), stream_, &r));
  row->checked = true;
  row->rel_err = r.rel_fro;
  row->check_ok = r.nonfinite == 0 && r.ref_nonfinite == 0 && r.ref_norm > 0 && r.rel_fro < opt_.max_rel_err;
  if (!row->check_ok) {
    ++failures_;
    progress("!!! CHECK FAILED: %s N=%lld K=%lld M=%lld %s: rel_err=%s (limit %g), non-finite outputs %lld, "
             "non-finite reference %lld, |ref|=%g\n",
             impl_name(row->impl), (long long)row->n, (long long)row->k, (long long)m, row->tactic.c_str(),
             fmt_sci(r.rel_fro).c_str(), opt_.max_rel_err, (long long)r.nonfinite, (long long)r.ref_nonfinite,
             r.ref_norm);
  }
  return Status::ok();
}

void GemmBench::time_graph_if_small(const CallFn& fn, int rotation, Row* row) {
  if (!opt_.graph || std::isnan(row->us) || row->us > kGraphMaxUs) return;
  TimingOptions o;
  o.graph = true;
  o.graph_batch = std::max(rotation, 20);  // every weight copy at least once per replay
  o.warmup = 2;
  const double want = opt_.target_ms * 1000.0 / (row->us * o.graph_batch);
  o.iterations = opt_.reps > 0 ? std::max(10, opt_.reps / o.graph_batch)
                               : static_cast<int>(std::clamp<double>(want, 10.0, 200.0));
  Timing g;
  const Status s = time_calls(fn, stream_, o, &g);
  if (s.is_ok()) {
    row->graph_us = g.median_us;
  } else {
    progress("  graph timing of %s M=%lld failed: %s\n", impl_name(row->impl), (long long)row->m,
             s.to_string().c_str());
    cudaStreamSynchronize(stream_);
  }
}

Status GemmBench::run_cublas(const GemmBenchShape& shape, int64_t m, CublasLtPrecision prec, Row* row) {
  const bool fp8 = prec == CublasLtPrecision::kFP8;
  const int64_t n = sb_.n, k = sb_.k;
  row->weight_bytes = fp8 ? double(n) * k : 2.0 * n * k;
  row->act_bytes = fp8 ? double(m) * k : 2.0 * m * k;
  row->out_bytes = 2.0 * m * n;
  std::vector<CublasLtGemmArgs> variants;
  const size_t copies = fp8 ? sb_.w_fp8.size() : sb_.w_bf16.size();
  for (size_t i = 0; i < copies; ++i) {
    CublasLtGemmArgs a;
    a.precision = prec;
    a.m = m;
    a.n = n;
    a.k = k;
    a.x = fp8 ? sb_.x_fp8.data() : sb_.x_bf16.data();
    a.w = fp8 ? sb_.w_fp8[i].data() : sb_.w_bf16[i].data();
    a.y = sb_.y.data();
    if (fp8) {
      a.x_scale = sb_.x_fp8_scale.as<float>();
      a.w_scale = sb_.w_fp8_scale.as<float>();
      a.fp8_fast_accum = opt_.fp8_fast_accum;
    }
    variants.push_back(a);
  }
  FP4KIT_RETURN_IF_ERROR(lt_.tune(variants.data(), static_cast<int>(variants.size()), stream_, 5));
  if (const CublasLtAlgoChoice* c = lt_.choice(variants[0])) {
    row->tactic = "cand " + std::to_string(c->candidate) + "/" + std::to_string(c->candidates);
    if (opt_.verbose) {
      progress("  %s M=%lld: candidate %d of %d (%.1f us; heuristic's first %.1f us) %s\n", impl_name(row->impl),
               (long long)m, c->candidate, c->candidates, c->us, c->heuristic_us, c->description.c_str());
    }
  }
  // FP8 check: against cuBLASLt BF16 on the decoded E4M3 operands with alpha = sx * sw.
  if (fp8 && opt_.check) {
    FP4KIT_RETURN_IF_ERROR(e4m3_to_bf16(sb_.x_fp8.data(), m * k, sb_.x_dq.data(), stream_));
    float sx = 1.0f;
    GB_CUDA(cudaMemcpyAsync(&sx, sb_.x_fp8_scale.data(), sizeof(float), cudaMemcpyDeviceToHost, stream_), "read sx");
    GB_CUDA(cudaStreamSynchronize(stream_), "fp8 check");
    CublasLtGemmArgs ref;
    ref.precision = CublasLtPrecision::kBF16;
    ref.m = m;
    ref.n = n;
    ref.k = k;
    ref.x = sb_.x_dq.data();
    ref.w = sb_.w_fp8_dec.data();
    ref.y = sb_.y_ref.data();
    ref.alpha = sx * sb_.w_fp8_scale_host;
    FP4KIT_RETURN_IF_ERROR(lt_.run_heuristic(ref, stream_));
    GB_CUDA(cudaMemsetAsync(sb_.y.data(), 0xFF, size_t(2 * m * n), stream_), "poison Y");
    FP4KIT_RETURN_IF_ERROR(lt_.run(variants[0], stream_));
    FP4KIT_RETURN_IF_ERROR(check_output(m, row));
  }
  auto fn = [&](int it) { return lt_.run(variants[it % variants.size()], stream_); };
  FP4KIT_RETURN_IF_ERROR(time_eager(fn, &row->us));
  time_graph_if_small(fn, static_cast<int>(variants.size()), row);
  (void)shape;
  return Status::ok();
}

Status GemmBench::run_fp4kit(const GemmBenchShape& shape, int64_t m, Impl impl, std::vector<Row>* rows) {
  const int64_t n = sb_.n, k = sb_.k;
  const bool w4a4 = impl == Impl::kW4A4;
  GemmParams base;
  base.m = m;
  base.n = n;
  base.k = k;
  base.a_dtype = w4a4 ? DType::kE2M1x2 : DType::kBF16;
  base.a = w4a4 ? sb_.x_codes.data() : sb_.x_bf16.data();
  base.lda = k;
  base.a_scales = w4a4 ? sb_.x_scales.as<uint8_t>() : nullptr;
  base.b_prepacked = sb_.w_prepacked[0].data();
  base.b_prepacked_bytes = static_cast<int64_t>(sb_.w_prepacked[0].bytes());
  base.alpha = w4a4 ? sb_.alpha_w4a4.as<float>() : sb_.alpha_w4a16.as<float>();
  base.d = sb_.y.data();
  base.d_dtype = DType::kBF16;
  base.ldd = n;
  base.tactic = -1;
  base.enable_pdl = opt_.pdl;

  Row proto;
  proto.shape = shape.name;
  proto.n = n;
  proto.k = k;
  proto.m = m;
  proto.impl = impl;
  proto.weight_bytes = double(n) * k * 0.5625;  // E2M1 codes + one E4M3 scale per 16
  proto.act_bytes = w4a4 ? double(m) * k * 0.5625 : 2.0 * m * k;
  proto.out_bytes = 2.0 * m * n;

  // Which tactics.
  const int auto_id = gemm_default_tactic(base);
  auto tactic_name = [&](int id) {
    for (const auto& t : tactics_) {
      if (t.id == id) return std::to_string(id) + ":" + t.name;
    }
    return std::to_string(id) + ":?";
  };
  std::vector<int> ids;
  if (opt_.all_tactics) {
    for (const auto& t : tactics_) {
      GemmParams p = base;
      p.tactic = t.id;
      if (gemm_tactic_can_implement(t.id, p).is_ok()) ids.push_back(t.id);
    }
    if (ids.empty()) {
      Row r = proto;
      r.error = "no tactic can implement this point";
      progress("!!! %s N=%lld K=%lld M=%lld: %s\n", impl_name(impl), (long long)n, (long long)k, (long long)m,
               r.error.c_str());
      rows->push_back(r);
      ++failures_;
      return Status::ok();
    }
  } else {
    ids.push_back(opt_.tactic);  // -1 = auto
  }

  // Reference: cuBLASLt BF16 on the dequantized operands (e2m1 * sf exactly) with the same alpha.
  bool have_ref = false;
  if (opt_.check) {
    if (w4a4) {
      DequantizeParams dp;
      dp.format = BlockFormat::kNVFP4;
      dp.elements = sb_.x_codes.data();
      dp.scales = sb_.x_scales.data();
      dp.scale_layout = ScaleLayout::kSwizzled128x4;
      dp.rows = m;
      dp.cols = k;
      dp.output = sb_.x_dq.data();
      dp.output_dtype = DType::kBF16;
      dp.output_bytes = 2 * m * k;
      FP4KIT_RETURN_IF_ERROR(dequantize(dp, stream_));
    }
    float alpha = 1.0f;
    GB_CUDA(cudaMemcpyAsync(&alpha, base.alpha, sizeof(float), cudaMemcpyDeviceToHost, stream_), "read alpha");
    GB_CUDA(cudaStreamSynchronize(stream_), "reference setup");
    CublasLtGemmArgs ref;
    ref.precision = CublasLtPrecision::kBF16;
    ref.m = m;
    ref.n = n;
    ref.k = k;
    ref.x = w4a4 ? sb_.x_dq.data() : sb_.x_bf16.data();
    ref.w = sb_.w_dq.data();
    ref.y = sb_.y_ref.data();
    ref.alpha = alpha;
    FP4KIT_RETURN_IF_ERROR(lt_.run_heuristic(ref, stream_));
    have_ref = true;
  }

  std::vector<size_t> mine;
  for (int id : ids) {
    Row r = proto;
    GemmParams p = base;
    p.tactic = id;
    const int ran = id < 0 ? auto_id : id;
    r.tactic_id = ran;
    r.tactic = tactic_name(ran) + (id < 0 || (opt_.all_tactics && ran == auto_id) ? " (auto)" : "");
    const Status ci = id < 0 ? Status::ok() : gemm_tactic_can_implement(id, p);
    if (!ci.is_ok()) {
      r.error = ci.to_string();
      progress("!!! %s N=%lld K=%lld M=%lld tactic %s cannot run: %s\n", impl_name(impl), (long long)n, (long long)k,
               (long long)m, r.tactic.c_str(), r.error.c_str());
      ++failures_;
      rows->push_back(r);
      continue;
    }
    const size_t ws = gemm_workspace_bytes(p);
    FP4KIT_RETURN_IF_ERROR(ensure_gemm_workspace(ws));
    std::vector<GemmParams> variants;
    for (const auto& w : sb_.w_prepacked) {
      GemmParams v = p;
      v.b_prepacked = w.data();
      variants.push_back(v);
    }
    void* wsp = sb_.gemm_workspace.data();
    const size_t wsb = sb_.gemm_workspace.bytes();
    auto fn = [&](int it) { return gemm(variants[it % variants.size()], wsp, wsb, stream_); };

    // Correctness first, on a poisoned output.
    GB_CUDA(cudaMemsetAsync(sb_.y.data(), 0xFF, size_t(2 * m * n), stream_), "poison Y");
    const Status first = fn(0);
    const cudaError_t sync = cudaStreamSynchronize(stream_);
    if (!first.is_ok() || sync != cudaSuccess) {
      r.error = !first.is_ok() ? first.to_string() : std::string("CUDA error: ") + cudaGetErrorString(sync);
      progress("!!! %s N=%lld K=%lld M=%lld tactic %s failed: %s\n", impl_name(impl), (long long)n, (long long)k,
               (long long)m, r.tactic.c_str(), r.error.c_str());
      ++failures_;
      rows->push_back(r);
      if (sync != cudaSuccess) {
        sticky_error_ = true;
        return Status(StatusCode::kCudaError, r.error);
      }
      continue;
    }
    if (have_ref) FP4KIT_RETURN_IF_ERROR(check_output(m, &r));

    double us = kNaN;
    const Status ts = time_eager(fn, &us);
    if (!ts.is_ok()) {
      r.error = ts.to_string();
      ++failures_;
      rows->push_back(r);
      if (cudaStreamSynchronize(stream_) != cudaSuccess) {
        sticky_error_ = true;
        return ts;
      }
      continue;
    }
    r.us = us;
    time_graph_if_small(fn, static_cast<int>(variants.size()), &r);
    mine.push_back(rows->size());
    rows->push_back(r);
  }

  if (opt_.all_tactics && !mine.empty()) {
    size_t best = mine[0];
    for (size_t i : mine) {
      if ((*rows)[i].us < (*rows)[best].us) best = i;
    }
    (*rows)[best].best_of_all = true;
    const int heur_id = gemm_impl::heuristic_tactic(base, sm_count_, gemm_impl::device_hbm_rich());
    TacticGap gap;
    gap.shape = shape.name;
    gap.impl = impl_name(impl);
    gap.m = m;
    gap.best = tactic_name((*rows)[best].tactic_id);
    gap.automatic = tactic_name(auto_id);
    gap.heuristic = tactic_name(heur_id);
    for (size_t i : mine) {
      const Row& x = (*rows)[i];
      if (x.tactic_id == auto_id) gap.auto_ratio = x.us / (*rows)[best].us;
      if (x.tactic_id == heur_id) gap.heur_ratio = x.us / (*rows)[best].us;
    }
    gaps_.push_back(gap);
    Row b = (*rows)[best];
    b.is_best_row = true;
    b.best_of_all = false;
    rows->push_back(b);
  }
  return Status::ok();
}

Status GemmBench::run_point(const GemmBenchShape& shape, int64_t m) {
  const size_t first = rows_.size();
  Row proto;
  proto.shape = shape.name;
  proto.n = shape.n;
  proto.k = shape.k;
  proto.m = m;
  // A row that could not run: recorded, counted, reported; a sticky CUDA error ends the run.
  auto fail = [&](Impl impl, const std::string& error) {
    Row r = proto;
    r.impl = impl;
    r.error = error;
    ++failures_;
    progress("!!! %s N=%lld K=%lld M=%lld: %s\n", impl_name(impl), (long long)shape.n, (long long)shape.k,
             (long long)m, error.c_str());
    rows_.push_back(r);
    if (cudaStreamSynchronize(stream_) != cudaSuccess) sticky_error_ = true;
  };
  if (opt_.baseline) {
    const Status q = prepare_fp8_activations(m);
    for (CublasLtPrecision prec : {CublasLtPrecision::kBF16, CublasLtPrecision::kFP8}) {
      const Impl impl = prec == CublasLtPrecision::kBF16 ? Impl::kCublasBF16 : Impl::kCublasFP8;
      if (prec == CublasLtPrecision::kFP8 && !q.is_ok()) {
        fail(impl, "FP8 activation quantization: " + q.to_string());
      } else {
        Row r = proto;
        r.impl = impl;
        const Status s = run_cublas(shape, m, prec, &r);
        if (s.is_ok()) rows_.push_back(r);
        else fail(impl, s.to_string());
      }
      if (sticky_error_) return Status(StatusCode::kCudaError, "sticky CUDA error");
    }
  }
  for (Impl impl : {Impl::kW4A16, Impl::kW4A4}) {
    if (impl == Impl::kW4A16 && opt_.mode == GemmBenchMode::kW4A4) continue;
    if (impl == Impl::kW4A4 && opt_.mode == GemmBenchMode::kW4A16) continue;
    if (!fp4_error_.empty()) {
      fail(impl, fp4_error_);
    } else {
      const Status q = impl == Impl::kW4A4 ? prepare_nvfp4_activations(m) : Status::ok();
      const Status s = q.is_ok() ? run_fp4kit(shape, m, impl, &rows_) : q;
      if (!s.is_ok()) {
        if (sticky_error_) return s;
        fail(impl, (q.is_ok() ? "" : "NVFP4 activation quantization: ") + s.to_string());
      }
    }
    if (sticky_error_) return Status(StatusCode::kCudaError, "sticky CUDA error");
  }
  // Progress line.
  std::string line;
  for (size_t i = first; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    if (r.is_best_row) continue;
    char buf[160];
    if (!r.error.empty()) {
      std::snprintf(buf, sizeof(buf), "  %s=ERROR", impl_name(r.impl));
    } else {
      std::snprintf(buf, sizeof(buf), "  %s%s=%.1fus%s", impl_name(r.impl),
                    is_fp4kit(r.impl) && opt_.all_tactics ? ("[" + std::to_string(r.tactic_id) + "]").c_str() : "",
                    r.us, r.checked && !r.check_ok ? "(CHECK FAILED)" : "");
    }
    line += buf;
  }
  progress("[%s M=%lld]%s\n", shape.name.c_str(), (long long)m, line.c_str());
  return Status::ok();
}

// The compute ceilings: the probes, raised by any cuBLASLt value seen at M >= 2048.
void GemmBench::finish_rows() {
  peak_bf16_tflops_ = probe_bf16_tflops_;
  peak_fp8_tflops_ = probe_fp8_tflops_;
  for (const Row& r : rows_) {
    if (!r.error.empty() || std::isnan(r.us) || r.m < 2048) continue;
    const double tf = flops_of(r) / (r.us * 1e6);
    if (r.impl == Impl::kCublasBF16) peak_bf16_tflops_ = std::max(peak_bf16_tflops_, tf);
    if (r.impl == Impl::kCublasFP8) peak_fp8_tflops_ = std::max(peak_fp8_tflops_, tf);
  }
}

struct Derived {
  double tflops = kNaN, wtbps = kNaN, x_bf16 = kNaN, x_fp8 = kNaN, roof = kNaN, floor_us = kNaN;
};

void GemmBench::print_report() {
  finish_rows();
  // Baseline times per point.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<double, double>> base;  // (n,k,m) -> (bf16, fp8)
  for (const Row& r : rows_) {
    auto& b = base.try_emplace({r.n, r.k, r.m}, kNaN, kNaN).first->second;
    if (!r.error.empty()) continue;
    if (r.impl == Impl::kCublasBF16) b.first = r.us;
    if (r.impl == Impl::kCublasFP8) b.second = r.us;
  }
  auto derive = [&](const Row& r) {
    Derived d;
    if (!r.error.empty() || std::isnan(r.us)) return d;
    d.tflops = flops_of(r) / (r.us * 1e6);
    d.wtbps = r.weight_bytes / (r.us * 1e6);
    const auto& b = base[{r.n, r.k, r.m}];
    d.x_bf16 = b.first / r.us;
    d.x_fp8 = b.second / r.us;
    const double peak = r.impl == Impl::kCublasFP8 ? peak_fp8_tflops_ : peak_bf16_tflops_;
    const double t_mem = (r.weight_bytes + r.act_bytes + r.out_bytes) / copy_bw_ * 1e6;
    const double t_cmp = peak > 0 ? flops_of(r) / (peak * 1e6) : 0.0;
    d.floor_us = std::max(t_mem, t_cmp);
    d.roof = d.floor_us / r.us;
    return d;
  };

  std::vector<std::string> headers = {"shape", "N", "K", "M", "impl", "us"};
  if (opt_.graph) headers.push_back("graph_us");
  for (const char* h : {"TFLOP/s", "wTB/s", "x_bf16", "x_fp8", "roof", "rel_err", "check", "tactic"}) {
    headers.push_back(h);
  }
  Table table(headers);
  for (const Row& r : rows_) {
    const Derived d = derive(r);
    std::string impl = impl_name(r.impl);
    if (r.is_best_row) impl += ".best";
    std::vector<std::string> c = {r.shape, std::to_string(r.n), std::to_string(r.k), std::to_string(r.m), impl,
                                  r.error.empty() ? fmt_fixed(r.us, 2) : "ERROR"};
    if (opt_.graph) c.push_back(fmt_fixed(r.graph_us, 2));
    c.push_back(fmt_fixed(d.tflops, 1));
    c.push_back(fmt_fixed(d.wtbps, 3));
    c.push_back(r.impl == Impl::kCublasBF16 ? "-" : fmt_fixed(d.x_bf16, 2));
    c.push_back(r.impl == Impl::kCublasFP8 ? "-" : fmt_fixed(d.x_fp8, 2));
    c.push_back(fmt_fixed(d.roof, 2));
    c.push_back(r.checked ? fmt_sci(r.rel_err) : "-");
    c.push_back(!r.error.empty() ? "ERROR" : (!r.checked ? (r.impl == Impl::kCublasBF16 ? "ref" : "-")
                                                         : (r.check_ok ? "ok" : "FAIL")));
    std::string tac = r.tactic;
    if (r.best_of_all) tac += " *best";
    if (!r.error.empty()) {
      // The whole message is on stderr ("!!!" lines); the table keeps the start of it.
      const std::string e = r.error.size() > 90 ? r.error.substr(0, 87) + "..." : r.error;
      tac += (tac.empty() ? "" : " ") + std::string("error: ") + e;
    }
    c.push_back(tac);
    table.add_row(c);
  }

  // Side-by-side summary (the layout of the baseline files).
  Table wide({"N", "K", "M", "bf16_us", "fp8_us", "w4a16_us", "w4a4_us", "bf16_TF", "fp8_TF", "w4a16_TF",
                  "w4a4_TF", "w4a16_wTBps", "w4a16/bf16", "w4a16/fp8", "w4a4/fp8", "w4a16_tactic", "w4a4_tactic"});
  {
    struct Point {
      double us[4] = {kNaN, kNaN, kNaN, kNaN};
      double tf[4] = {kNaN, kNaN, kNaN, kNaN};
      double wtb = kNaN;
      std::string tac[2];
    };
    std::vector<std::tuple<int64_t, int64_t, int64_t>> order;
    std::map<std::tuple<int64_t, int64_t, int64_t>, Point> pts;
    for (const Row& r : rows_) {
      const auto key = std::make_tuple(r.n, r.k, r.m);
      if (!pts.count(key)) order.push_back(key);
      Point& p = pts[key];
      // --tactic all: the ".best" row stands for the point.
      if (opt_.all_tactics && is_fp4kit(r.impl) && !r.is_best_row) continue;
      if (!r.error.empty()) continue;
      const int i = static_cast<int>(r.impl);
      const Derived d = derive(r);
      p.us[i] = r.us;
      p.tf[i] = d.tflops;
      if (r.impl == Impl::kW4A16) p.wtb = d.wtbps;
      if (is_fp4kit(r.impl)) p.tac[i - 2] = r.tactic;
    }
    for (const auto& key : order) {
      const Point& p = pts[key];
      wide.add_row({std::to_string(std::get<0>(key)), std::to_string(std::get<1>(key)), std::to_string(std::get<2>(key)),
                    fmt_fixed(p.us[0], 1), fmt_fixed(p.us[1], 1), fmt_fixed(p.us[2], 1), fmt_fixed(p.us[3], 1),
                    fmt_fixed(p.tf[0], 1), fmt_fixed(p.tf[1], 1), fmt_fixed(p.tf[2], 1), fmt_fixed(p.tf[3], 1),
                    fmt_fixed(p.wtb, 3), fmt_fixed(p.us[0] / p.us[2], 2), fmt_fixed(p.us[1] / p.us[2], 2),
                    fmt_fixed(p.us[1] / p.us[3], 2), p.tac[0], p.tac[1]});
    }
  }

  // Summary lines.
  std::ostringstream sum;
  {
    struct Agg {
      double min_tf_ratio = kNaN;  // fp4kit TFLOP/s / cuBLAS BF16 at M >= 2048
      int64_t at_m_tf = 0;
      double min_x_bf16 = kNaN, min_x_fp8 = kNaN, min_bw_frac = kNaN;  // M <= 16
      int64_t at_m_bf16 = 0, at_m_fp8 = 0, at_m_bw = 0;
    };
    std::vector<std::string> shape_order;
    std::map<std::string, std::map<int, Agg>> agg;  // shape -> impl -> agg
    for (const Row& r : rows_) {
      if (!is_fp4kit(r.impl) || !r.error.empty()) continue;
      if (opt_.all_tactics && !r.is_best_row) continue;
      if (!agg.count(r.shape)) shape_order.push_back(r.shape);
      Agg& a = agg[r.shape][static_cast<int>(r.impl)];
      const Derived d = derive(r);
      if (r.m >= 2048) keep_min(a.min_tf_ratio, a.at_m_tf, d.x_bf16, r.m);  // same-point time ratio = TFLOP/s ratio
      if (r.m <= 16) {
        keep_min(a.min_x_bf16, a.at_m_bf16, d.x_bf16, r.m);
        keep_min(a.min_x_fp8, a.at_m_fp8, d.x_fp8, r.m);
        keep_min(a.min_bw_frac, a.at_m_bw, r.weight_bytes / (r.us * 1e-6) / copy_bw_, r.m);
      }
    }
    sum << "summary (per shape; min over the M values measured):\n";
    for (const std::string& s : shape_order) {
      for (const auto& [impl, a] : agg[s]) {
        const char* nm = impl_name(static_cast<Impl>(impl));
        char buf[512];
        auto at = [](double v, int64_t m, int d) { return fmt_min_at(v, m, d, "M"); };
        std::snprintf(buf, sizeof(buf),
                      "  %-18s %-13s M>=2048: min TFLOP/s vs cuBLAS BF16 %s | M<=16: min speedup vs BF16 %s, "
                      "vs FP8 %s, min weight BW / copy BW %s\n",
                      s.c_str(), nm, at(a.min_tf_ratio, a.at_m_tf, 3).c_str(), at(a.min_x_bf16, a.at_m_bf16, 2).c_str(),
                      at(a.min_x_fp8, a.at_m_fp8, 2).c_str(), at(a.min_bw_frac, a.at_m_bw, 3).c_str());
        sum << buf;
      }
    }
    int checked = 0, passed = 0, errors = 0;
    for (const Row& r : rows_) {
      if (r.is_best_row) continue;
      if (!r.error.empty()) ++errors;
      if (r.checked) {
        ++checked;
        if (r.check_ok) ++passed;
      }
    }
    if (!gaps_.empty()) {
      // Issue #6's acceptance: auto within 2% of the best tactic, the heuristic within 10%.
      const TacticGap* worst_auto = nullptr;
      const TacticGap* worst_heur = nullptr;
      int auto_over = 0, heur_over = 0, auto_missing = 0;
      for (const TacticGap& g : gaps_) {
        if (std::isnan(g.auto_ratio)) ++auto_missing;
        else if (g.auto_ratio > 1.02) ++auto_over;
        if (!std::isnan(g.heur_ratio) && g.heur_ratio > 1.10) ++heur_over;
        if (!std::isnan(g.auto_ratio) && (!worst_auto || g.auto_ratio > worst_auto->auto_ratio)) worst_auto = &g;
        if (!std::isnan(g.heur_ratio) && (!worst_heur || g.heur_ratio > worst_heur->heur_ratio)) worst_heur = &g;
      }
      auto line = [&](const char* what, const TacticGap* g, double ratio, int over, double limit) {
        char b[512];
        if (!g) {
          std::snprintf(b, sizeof(b), "tactics: %s vs best: no point measured\n", what);
        } else {
          std::snprintf(b, sizeof(b),
                        "tactics: %s vs best over %zu points: worst %.3fx (%s %s M=%lld: %s vs best %s); "
                        "%d point(s) over %.0f%%\n",
                        what, gaps_.size(), ratio, g->shape.c_str(), g->impl.c_str(), (long long)g->m,
                        (std::string(what) == "auto" ? g->automatic : g->heuristic).c_str(), g->best.c_str(), over,
                        (limit - 1) * 100);
        }
        sum << b;
      };
      line("auto", worst_auto, worst_auto ? worst_auto->auto_ratio : kNaN, auto_over, 1.02);
      line("heuristic", worst_heur, worst_heur ? worst_heur->heur_ratio : kNaN, heur_over, 1.10);
      if (auto_missing) sum << "tactics: " << auto_missing << " point(s) where the auto tactic did not run\n";
      for (const TacticGap& g : gaps_) {
        if ((!std::isnan(g.auto_ratio) && g.auto_ratio > 1.02) || (!std::isnan(g.heur_ratio) && g.heur_ratio > 1.10)) {
          char b[512];
          std::snprintf(b, sizeof(b), "  gap: %s %s M=%lld best %s | auto %s %.3fx | heuristic %s %.3fx\n",
                        g.shape.c_str(), g.impl.c_str(), (long long)g.m, g.best.c_str(), g.automatic.c_str(),
                        g.auto_ratio, g.heuristic.c_str(), g.heur_ratio);
          sum << b;
        }
      }
    }
    char buf[256];
    std::snprintf(buf, sizeof(buf), "checks: %d/%d passed (rel_err < %g)%s; %d point(s) could not run\n", passed,
                  checked, opt_.max_rel_err, passed == checked ? "" : "  <<< FAILURES", errors);
    sum << buf;
    sum << result_line();
  }

  // Header: the run's device and ceilings (prefixed "# " in CSV).
  std::string head = device_head();
  head += strprintf("peak_TFLOPs cuBLASLt bf16 %.1f (8192^3 probe %.1f), fp8%s %.1f (probe %.1f)\n",
                    peak_bf16_tflops_, probe_bf16_tflops_, opt_.fp8_fast_accum ? "(fast-accum)" : "",
                    peak_fp8_tflops_, probe_fp8_tflops_);
  head += strprintf("timing: median of per-call CUDA-event times%s; weights rotated over >= 2x L2; us = microseconds\n",
                    opt_.graph ? ", graph_us = median graph replay / calls (points < 200 us)" : "");
  head += "roof = max(bytes / copy_bw, 2MNK / peak) / us (docs/BENCH_GEMM.md)\n";
  ReportText report{head, sum.str()};
  report.text = table.text() + "\n" + wide.text();
  report.csv = table.csv();
  report.markdown = table.markdown() + "\n" + wide.markdown();
  emit_report(report, opt_.csv, opt_.markdown, opt_.output);
}

int GemmBench::run() {
  if (!start()) return 2;
  tactics_ = gemm_tactics();
  if (opt_.all_tactics && tactics_.empty()) {
    std::fprintf(stderr, "fp4kit bench gemm: --tactic all: fp4kit reports no tactics\n");
    return 2;
  }
  if (!measure_copy_bandwidth()) return 2;
  progress("device %s, copy bandwidth %.3f TB/s (read+write)\n", device_name_.c_str(), copy_bw_ / 1e12);
  {
    const Status p = probe_peaks();
    if (!p.is_ok()) {
      std::fprintf(stderr, "fp4kit bench gemm: cuBLASLt peak probe: %s\n", p.to_string().c_str());
      return 2;
    }
    progress("cuBLASLt 8192^3: bf16 %.1f TFLOP/s, fp8 %.1f TFLOP/s\n", probe_bf16_tflops_, probe_fp8_tflops_);
  }

  std::vector<GemmBenchShape> shapes = opt_.shapes.empty() ? default_gemm_bench_shapes() : opt_.shapes;
  std::vector<int64_t> ms = !opt_.m_values.empty() ? opt_.m_values
                                                   : (opt_.quick ? quick_gemm_bench_m() : default_gemm_bench_m());
  const int64_t max_m = *std::max_element(ms.begin(), ms.end());
  for (const GemmBenchShape& shape : shapes) {
    const Status ss = setup_shape(shape, max_m);
    if (!ss.is_ok()) {
      progress("!!! %s N=%lld K=%lld: setup failed: %s\n", shape.name.c_str(), (long long)shape.n, (long long)shape.k,
               ss.to_string().c_str());
      ++failures_;
      for (int64_t m : ms) {
        Row r;
        r.shape = shape.name;
        r.n = shape.n;
        r.k = shape.k;
        r.m = m;
        r.impl = Impl::kW4A16;
        r.error = "shape setup failed: " + ss.to_string();
        rows_.push_back(r);
      }
      if (cudaDeviceSynchronize() != cudaSuccess) {
        sticky_error_ = true;
        break;
      }
      continue;
    }
    for (int64_t m : ms) {
      const Status ps = run_point(shape, m);
      if (!ps.is_ok()) {
        progress("!!! %s M=%lld: %s\n", shape.name.c_str(), (long long)m, ps.to_string().c_str());
        if (sticky_error_ || cudaDeviceSynchronize() != cudaSuccess) {
          sticky_error_ = true;
          break;
        }
        ++failures_;
      }
    }
    if (sticky_error_) break;
  }
  sb_ = ShapeBuffers();
  return finish();
}

}  // namespace

int run_gemm_bench(const GemmBenchOptions& options) {
  GemmBench bench(options);
  return bench.run();
}

}  // namespace fp4kit::bench
