// fp4kit demo: one synthetic Llama-like linear layer end to end.
//
//   1. W [N, K] and A [M, K] in BF16 (cli_util.h: synthetic_weight_bf16 / synthetic_activation_bf16).
//   2. Global scales gs = 2688 / amax, NVFP4 quantization (exact numerics): W with linear scales (the
//      checkpoint layout prepack_weights takes), A with 128x4 scales (the layout the W4A4 GEMM takes).
//      Quantization error: SNR of the dequantized tensors against the BF16 originals.
//   3. W4A16 (BF16 A x NVFP4 W) and W4A4 (NVFP4 A x NVFP4 W) GEMMs, BF16 out. Errors against
//      - the product of the original BF16 operands, in double (what quantization costs), and
//      - the exact product of the decoded operands (reference::gemm's unrounded result): only the
//        BF16 output rounding, ~1e-3, when the GEMM is right.
//   Path: the CPU reference, or with an sm_90a GPU (and no --cpu) the GPU kernels, checked against the
//   CPU reference (quantized bytes, GEMM outputs) and timed.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "fp4kit/reference.h"

namespace fp4kit::cli {
namespace {

struct DemoOptions {
  int64_t m = 16, n = 4096, k = 4096;
  uint64_t seed = 1;
  bool cpu = false;
  bool json = false;
  int iters = 50;
  int tactic = -1;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---- host-side results ----------------------------------------------------------------------------

struct QuantResult {
  const char* name = "";
  int64_t rows = 0, cols = 0;
  ScaleLayout layout = ScaleLayout::kLinear;
  float amax = 0, gs = 0;
  std::vector<uint8_t> codes, scales;
  ErrorStats err;              // dequantized vs the BF16 original
  std::optional<int64_t> gpu_mismatches;  // GPU bytes (codes + scales + gs) != CPU reference
};

struct GemmResult {
  GemmResult(const char* mode_, DType a_dtype_) : mode(mode_), a_dtype(a_dtype_) {}
  const char* mode;
  DType a_dtype;
  float alpha = 0;
  std::vector<uint16_t> d_ref;    // reference::gemm BF16 output
  std::vector<double> d_ref_f64;  // its unrounded result: exact product of the decoded operands
  std::vector<uint16_t> d_gpu;    // GPU output (GPU path)
  ErrorStats vs_bf16;             // shown output vs the BF16-operand product
  ErrorStats vs_decoded;          // shown output vs the exact product of the decoded operands
  std::optional<double> gpu_vs_cpu_max;
  std::string gpu_error;          // the GPU GEMM failed (the other mode is still reported)
  double seconds_per_call = 0;    // GPU: mean over --iters; CPU: one reference call
  int tactic = -1;
};

// ---- CPU reference ----------------------------------------------------------------------------------

QuantResult quantize_cpu(const char* name, const std::vector<uint16_t>& x, const std::vector<float>& x_f32,
                         int64_t rows, int64_t cols, ScaleLayout layout) {
  QuantResult q;
  q.name = name;
  q.rows = rows;
  q.cols = cols;
  q.layout = layout;
  GlobalScaleParams gp;
  gp.input = x.data();
  gp.input_dtype = DType::kBF16;
  gp.rows = rows;
  gp.cols = cols;
  gp.numerics = QuantNumerics::kExact;
  gp.out_global_scale = &q.gs;
  gp.out_amax = &q.amax;
  check(reference::compute_global_scale(gp));

  q.codes.resize(size_t(element_buffer_bytes(BlockFormat::kNVFP4, rows, cols)));
  q.scales.resize(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, layout, rows, cols)));
  Nvfp4QuantizeParams qp;
  qp.input = x.data();
  qp.input_dtype = DType::kBF16;
  qp.rows = rows;
  qp.cols = cols;
  qp.global_scale = &q.gs;
  qp.numerics = QuantNumerics::kExact;
  qp.out_codes = q.codes.data();
  qp.out_codes_bytes = int64_t(q.codes.size());
  qp.out_scales = q.scales.data();
  qp.out_scales_bytes = int64_t(q.scales.size());
  qp.scale_layout = layout;
  check(reference::quantize_nvfp4(qp));

  std::vector<float> deq(size_t(rows * cols));
  const float decode = 1.0f / q.gs;
  DequantizeParams dp;
  dp.format = BlockFormat::kNVFP4;
  dp.elements = q.codes.data();
  dp.scales = q.scales.data();
  dp.scale_layout = layout;
  dp.rows = rows;
  dp.cols = cols;
  dp.decode_global_scale = &decode;
  dp.output = deq.data();
  dp.output_dtype = DType::kFP32;
  dp.output_bytes = int64_t(deq.size() * sizeof(float));
  check(reference::dequantize(dp));
  q.err = compare(x_f32.data(), deq.data(), int64_t(deq.size()));
  return q;
}

void gemm_cpu(GemmResult& g, const DemoOptions& o, const std::vector<uint16_t>& a_bf16, const QuantResult& qa,
              const QuantResult& qw) {
  const bool w4a4 = g.a_dtype == DType::kE2M1x2;
  g.alpha = w4a4 ? 1.0f / (qa.gs * qw.gs) : 1.0f / qw.gs;
  g.d_ref.resize(size_t(o.m * o.n));
  g.d_ref_f64.resize(size_t(o.m * o.n));
  reference::GemmRefParams p;
  p.m = o.m;
  p.n = o.n;
  p.k = o.k;
  p.a_dtype = g.a_dtype;
  if (w4a4) {
    p.a = qa.codes.data();
    p.a_scales = qa.scales.data();
    p.a_scale_layout = qa.layout;
  } else {
    p.a = a_bf16.data();
  }
  p.b = qw.codes.data();
  p.b_scales = qw.scales.data();
  p.b_scale_layout = qw.layout;
  p.alpha = g.alpha;
  p.out_dtype = DType::kBF16;
  p.d = g.d_ref.data();
  p.d_f64 = g.d_ref_f64.data();
  const auto t0 = Clock::now();
  check(reference::gemm(p));
  g.seconds_per_call = seconds_since(t0);
}

// ---- GPU --------------------------------------------------------------------------------------------

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw CliError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_) check_cuda(cudaMalloc(&ptr_, bytes_), "cudaMalloc");
  }
  template <class T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    if (bytes_) check_cuda(cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  template <class T>
  std::vector<T> download(size_t count) const {
    std::vector<T> host(count);
    if (count) check_cuda(cudaMemcpy(host.data(), ptr_, count * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return host;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

class Stream {
 public:
  Stream() { check_cuda(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }
  void sync() const { check_cuda(cudaStreamSynchronize(s_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { check_cuda(cudaEventCreate(&e_), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Quantized operand on the GPU; `ref` is the CPU reference result it is compared with.
struct GpuQuant {
  std::unique_ptr<DeviceBuffer> gs, codes, scales;
};

GpuQuant quantize_gpu(QuantResult& ref, const DeviceBuffer& x, const Stream& stream) {
  GpuQuant q;
  q.gs = std::make_unique<DeviceBuffer>(sizeof(float));
  GlobalScaleParams gp;
  gp.input = x.get();
  gp.input_dtype = DType::kBF16;
  gp.rows = ref.rows;
  gp.cols = ref.cols;
  gp.numerics = QuantNumerics::kExact;
  gp.out_global_scale = q.gs->get<float>();
  DeviceBuffer ws(global_scale_workspace_bytes(gp));
  check(compute_global_scale(gp, ws.get(), ws.bytes(), stream));

  q.codes = std::make_unique<DeviceBuffer>(ref.codes.size());
  q.scales = std::make_unique<DeviceBuffer>(ref.scales.size());
  Nvfp4QuantizeParams qp;
  qp.input = x.get();
  qp.input_dtype = DType::kBF16;
  qp.rows = ref.rows;
  qp.cols = ref.cols;
  qp.global_scale = q.gs->get<float>();
  qp.numerics = QuantNumerics::kExact;
  qp.out_codes = q.codes->get();
  qp.out_codes_bytes = int64_t(q.codes->bytes());
  qp.out_scales = q.scales->get();
  qp.out_scales_bytes = int64_t(q.scales->bytes());
  qp.scale_layout = ref.layout;
  check(quantize_nvfp4(qp, stream));
  stream.sync();

  // The exact numerics are bit-identical between the GPU kernels and the CPU reference.
  const auto gs = q.gs->download<float>(1);
  const auto codes = q.codes->download<uint8_t>(ref.codes.size());
  const auto scales = q.scales->download<uint8_t>(ref.scales.size());
  int64_t mismatches = std::memcmp(&gs[0], &ref.gs, sizeof(float)) != 0;
  for (size_t i = 0; i < codes.size(); ++i) mismatches += codes[i] != ref.codes[i];
  for (size_t i = 0; i < scales.size(); ++i) mismatches += scales[i] != ref.scales[i];
  ref.gpu_mismatches = mismatches;
  return q;
}

void gemm_gpu(GemmResult& g, const DemoOptions& o, const DeviceBuffer& a_bf16, const GpuQuant& qa,
              const DeviceBuffer& w_prepacked, const Stream& stream) {
  const bool w4a4 = g.a_dtype == DType::kE2M1x2;
  DeviceBuffer alpha(std::vector<float>{g.alpha});
  DeviceBuffer d(size_t(o.m * o.n) * sizeof(uint16_t));
  GemmParams p;
  p.m = o.m;
  p.n = o.n;
  p.k = o.k;
  p.a_dtype = g.a_dtype;
  p.a = w4a4 ? qa.codes->get() : a_bf16.get();
  p.a_scales = w4a4 ? qa.scales->get<uint8_t>() : nullptr;
  p.b_prepacked = w_prepacked.get();
  p.b_prepacked_bytes = int64_t(w_prepacked.bytes());
  p.alpha = alpha.get<float>();
  p.d = d.get();
  p.d_dtype = DType::kBF16;
  p.tactic = o.tactic;
  g.tactic = o.tactic >= 0 ? o.tactic : gemm_default_tactic(p);
  DeviceBuffer ws(gemm_workspace_bytes(p));

  check(gemm(p, ws.get(), ws.bytes(), stream));  // first call: checked output
  stream.sync();
  g.d_gpu = d.download<uint16_t>(size_t(o.m * o.n));

  Event start, stop;
  for (int i = 0; i < 3; ++i) check(gemm(p, ws.get(), ws.bytes(), stream));
  check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < o.iters; ++i) check(gemm(p, ws.get(), ws.bytes(), stream));
  check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  g.seconds_per_call = double(ms) * 1e-3 / o.iters;
}

// ---- report -------------------------------------------------------------------------------------------

std::string format_time(double s) {
  if (s < 1e-3) return format_fixed(s * 1e6, 1) + " us";
  if (s < 1.0) return format_fixed(s * 1e3, 1) + " ms";
  return format_fixed(s, 2) + " s";
}

void print_report(const DemoOptions& o, const std::string& path, bool gpu, const QuantResult* quants[2],
                  const std::vector<GemmResult>& gemms, double total_s) {
  std::printf("fp4kit demo: synthetic Llama-like linear layer, M=%lld N=%lld K=%lld, seed %llu\n",
              (long long)o.m, (long long)o.n, (long long)o.k, (unsigned long long)o.seed);
  std::printf("path: %s\n\n", path.c_str());

  std::printf("NVFP4 quantization (exact numerics, gs = 2688/amax)\n");
  std::vector<std::string> qh = {"tensor", "shape", "scales", "amax", "gs", "SNR dB", "rel err"};
  if (gpu) qh.push_back("GPU = CPU");
  using A = Table::Align;
  std::vector<A> qa = {A::kLeft, A::kRight, A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kLeft};
  qa.resize(qh.size());
  Table qt(qh, qa);
  for (int i = 0; i < 2; ++i) {
    const QuantResult& q = *quants[i];
    std::vector<std::string> row = {q.name, format_shape(q.rows, q.cols), scale_layout_name(q.layout),
                                    format_sci(q.amax, 3), format_sci(q.gs, 3), format_fixed(q.err.snr_db, 2),
                                    format_sci(q.err.rel_fro)};
    if (gpu) row.push_back(*q.gpu_mismatches == 0 ? "yes" : "NO: " + std::to_string(*q.gpu_mismatches) + " bytes");
    qt.add_row(row);
  }
  std::printf("%s\n\n", qt.render().c_str());

  std::printf("GEMM D = A * W^T, BF16 out (%s)\n", gpu ? "GPU kernels" : "CPU reference");
  std::vector<std::string> gh = {"mode", "A", "W", "rel err", "SNR dB", "rel err (decoded)"};
  if (gpu) {
    for (const char* h : {"max |GPU-CPU|", "tactic", "time/call", "TFLOP/s"}) gh.push_back(h);
  } else {
    gh.push_back("time/call");
  }
  std::vector<A> ga(gh.size(), A::kRight);
  ga[0] = ga[1] = ga[2] = A::kLeft;
  Table gt(gh, ga);
  const double flops = 2.0 * double(o.m) * double(o.n) * double(o.k);
  for (const GemmResult& g : gemms) {
    std::vector<std::string> row = {g.mode, g.a_dtype == DType::kE2M1x2 ? "nvfp4" : "bf16", "nvfp4",
                                    format_sci(g.vs_bf16.rel_fro), format_fixed(g.vs_bf16.snr_db, 2),
                                    format_sci(g.vs_decoded.rel_fro)};
    if (!g.gpu_error.empty()) {
      row.resize(3);
      row.push_back("failed (below)");
    } else if (gpu) {
      row.push_back(format_sci(*g.gpu_vs_cpu_max));
      row.push_back(std::to_string(g.tactic));
      row.push_back(format_time(g.seconds_per_call));
      row.push_back(format_fixed(flops / g.seconds_per_call * 1e-12, 1));
    } else {
      row.push_back(format_time(g.seconds_per_call));
    }
    gt.add_row(row);
  }
  std::printf("%s\n", gt.render().c_str());
  std::printf("  rel err, SNR: vs the product of the original BF16 operands (double)\n");
  std::printf("  rel err (decoded): vs the exact product of the decoded operands (BF16 output rounding only)\n");
  if (gpu) std::printf("  max |GPU-CPU|: largest difference from the CPU reference's BF16 output\n");
  for (const GemmResult& g : gemms)
    if (!g.gpu_error.empty()) std::printf("  %s failed: %s\n", g.mode, g.gpu_error.c_str());
  std::printf("\ndone in %.1f s\n", total_s);
}

nlohmann::ordered_json stats_json(const ErrorStats& s) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  return {{"rel_fro", num(s.rel_fro)}, {"snr_db", num(s.snr_db)}, {"max_abs", num(s.max_abs)}};
}

void print_json(const DemoOptions& o, const std::string& path, bool gpu, const QuantResult* quants[2],
                const std::vector<GemmResult>& gemms, double total_s) {
  nlohmann::ordered_json j;
  j["shape"] = {{"m", o.m}, {"n", o.n}, {"k", o.k}};
  j["seed"] = o.seed;
  j["path"] = gpu ? "gpu" : "cpu";
  j["path_detail"] = path;
  for (int i = 0; i < 2; ++i) {
    const QuantResult& q = *quants[i];
    nlohmann::ordered_json qj = {{"rows", q.rows}, {"cols", q.cols}, {"scale_layout", scale_layout_name(q.layout)},
                         {"amax", q.amax}, {"global_scale", q.gs}, {"error", stats_json(q.err)}};
    if (q.gpu_mismatches) qj["gpu_mismatched_bytes"] = *q.gpu_mismatches;
    j["quantize"][i == 0 ? "weight" : "activation"] = qj;
  }
  for (const GemmResult& g : gemms) {
    nlohmann::ordered_json gj = {{"alpha", g.alpha},
                         {"vs_bf16_product", stats_json(g.vs_bf16)},
                         {"vs_decoded_exact", stats_json(g.vs_decoded)},
                         {"seconds_per_call", g.seconds_per_call}};
    if (g.gpu_vs_cpu_max) {
      gj["gpu_vs_cpu_max_abs"] = *g.gpu_vs_cpu_max;
      gj["tactic"] = g.tactic;
    }
    if (!g.gpu_error.empty()) gj = {{"alpha", g.alpha}, {"gpu_error", g.gpu_error}};
    j["gemm"][g.mode] = gj;
  }
  j["seconds_total"] = total_s;
  std::printf("%s\n", j.dump(2).c_str());
}

std::vector<double> bf16_to_double(const std::vector<uint16_t>& bits) {
  const std::vector<float> f = bf16_to_float(bits);
  return std::vector<double>(f.begin(), f.end());
}

// ---- the demo ----------------------------------------------------------------------------------------

int run_demo(const DemoOptions& o) {
  const auto t0 = Clock::now();
  if (o.m <= 0 || o.n <= 0 || o.k <= 0) throw CliError("--m, --n and --k must be positive");
  if (o.k % 16 != 0) throw CliError("--k (=" + std::to_string(o.k) + ") must be a multiple of 16 (NVFP4 block)");
  if (o.m > (int64_t(1) << 20) || o.n > (int64_t(1) << 20) || o.k > (int64_t(1) << 20))
    throw CliError("--m, --n and --k must be at most 1048576");
  if (o.iters < 1) throw CliError("--iters must be at least 1");

  std::string path;
  bool gpu = false;
  const DeviceInfo& dev = device_info();
  if (o.cpu) {
    path = "CPU reference (--cpu)";
  } else if (!dev.available) {
    path = "CPU reference (no GPU: " + dev.reason + ")";
  } else if (!has_sm90a_device()) {
    path = "CPU reference (GPU " + dev.name + " is sm_" + std::to_string(dev.compute_capability) +
           "; the kernels need sm_90a)";
  } else {
    gpu = true;
    path = "GPU " + dev.name + " (" + std::to_string(dev.sm_count) + " SMs), checked against the CPU reference";
  }

  const std::vector<uint16_t> w = synthetic_weight_bf16(o.n, o.k, o.seed);
  const std::vector<uint16_t> a = synthetic_activation_bf16(o.m, o.k, o.seed);
  const std::vector<float> w_f = bf16_to_float(w), a_f = bf16_to_float(a);

  QuantResult qw = quantize_cpu("weight W", w, w_f, o.n, o.k, ScaleLayout::kLinear);
  QuantResult qa = quantize_cpu("activation A", a, a_f, o.m, o.k, ScaleLayout::kSwizzled128x4);
  const std::vector<double> d_bf16_operands = matmul_nt_f64(a_f.data(), w_f.data(), o.m, o.n, o.k);

  std::vector<GemmResult> gemms = {{"W4A16", DType::kBF16}, {"W4A4", DType::kE2M1x2}};
  for (GemmResult& g : gemms) gemm_cpu(g, o, a, qa, qw);

  if (gpu) {
    Stream stream;
    DeviceBuffer w_dev(w), a_dev(a);
    GpuQuant gw = quantize_gpu(qw, w_dev, stream);
    GpuQuant ga = quantize_gpu(qa, a_dev, stream);
    DeviceBuffer packed(size_t(prepacked_weight_bytes(o.n, o.k)));
    WeightPrepackParams pp;
    pp.n = o.n;
    pp.k = o.k;
    pp.codes = gw.codes->get<uint8_t>();
    pp.scales = gw.scales->get<uint8_t>();
    pp.scale_layout = qw.layout;
    pp.out = packed.get();
    pp.out_bytes = int64_t(packed.bytes());
    check(prepack_weights(pp, stream));
    stream.sync();
    for (GemmResult& g : gemms) {
      try {
        gemm_gpu(g, o, a_dev, ga, packed, stream);
      } catch (const CliError& e) {
        g.gpu_error = e.what();
      }
    }
  }

  const int64_t mn = o.m * o.n;
  for (GemmResult& g : gemms) {
    if (!g.gpu_error.empty()) continue;
    const std::vector<double> shown = bf16_to_double(gpu ? g.d_gpu : g.d_ref);
    g.vs_bf16 = compare(d_bf16_operands.data(), shown.data(), mn);
    g.vs_decoded = compare(g.d_ref_f64.data(), shown.data(), mn);
    if (gpu) g.gpu_vs_cpu_max = compare(bf16_to_double(g.d_ref).data(), shown.data(), mn).max_abs;
  }

  const QuantResult* quants[2] = {&qw, &qa};
  if (o.json) {
    print_json(o, path, gpu, quants, gemms, seconds_since(t0));
  } else {
    print_report(o, path, gpu, quants, gemms, seconds_since(t0));
  }
  for (const GemmResult& g : gemms)
    if (!g.gpu_error.empty()) throw CliError(std::string(g.mode) + " GEMM on the GPU: " + g.gpu_error);
  return 0;
}

}  // namespace

Command add_demo_command(CLI::App& app) {
  auto opt = std::make_shared<DemoOptions>();
  CLI::App* sub = app.add_subcommand(
      "demo", "Quantize a synthetic Llama-like layer to NVFP4 and run W4A16 / W4A4 GEMMs; report errors");
  sub->add_option("--m", opt->m, "Activation rows (tokens)")->capture_default_str();
  sub->add_option("--n", opt->n, "Weight rows (output features)")->capture_default_str();
  sub->add_option("--k", opt->k, "Reduction dimension (a multiple of 16)")->capture_default_str();
  sub->add_option("--seed", opt->seed, "Seed of the synthetic data")->capture_default_str();
  sub->add_flag("--cpu", opt->cpu, "Use the CPU reference even when an sm_90a GPU is present");
  sub->add_option("--iters", opt->iters, "GPU: timed GEMM calls (mean is reported)")->capture_default_str();
  sub->add_option("--tactic", opt->tactic, "GPU: GEMM tactic id (-1: automatic; fp4kit info --tactics)")
      ->capture_default_str();
  sub->add_flag("--json", opt->json, "Print JSON instead of the text report");
  return {sub, [opt] { return run_demo(*opt); }};
}

}  // namespace fp4kit::cli
