#include "bench_quantize.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "fp4kit/device.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "fp4kit/reference.h"
#include "quant/quant_dispatch.h"

namespace fp4kit::bench {

std::vector<int64_t> default_bench_m() {
  return {1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768};
}
std::vector<int64_t> default_bench_k() {
  return {128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 5120, 6144, 8192, 12288, 16384};
}
std::vector<int64_t> quick_bench_m() { return {1, 16, 128, 1024, 4096, 8192, 16384, 32768}; }
std::vector<int64_t> quick_bench_k() { return {256, 1024, 4096, 8192, 16384}; }

std::string quant_bench_usage() {
  return "usage: bench quantize [options]\n"
         "  --op nvfp4|mxfp4|mxfp8|dequant   operation (default nvfp4)\n"
         "  --format nvfp4|mxfp4|mxfp8       format dequantized by --op dequant (default nvfp4)\n"
         "  --dtype bf16|fp16|fp32           quantize input / dequantize output (default bf16)\n"
         "  --layout 128x4|8x4|linear        scale layout (default 128x4)\n"
         "  --numerics exact|fast|modelopt   quantization numerics (default exact)\n"
         "  --variant auto|vectorized|tma    quantization kernel (default auto)\n"
         "  --m LIST --k LIST                comma-separated sizes (default: spec sweep, 22 x 15 points)\n"
         "  --quick                          a 40-point subset of the sweep\n"
         "  --csv FILE --md FILE             also write the table as CSV / markdown\n"
         "  --iters N                        timed calls per point (default 50)\n"
         "  --warmup N                       untimed calls per point (default 5)\n"
         "  --graph                          time every point by CUDA-graph replay\n"
         "  --pdl                            enable_pdl on every call\n"
         "  --no-check                       skip the comparison with the CPU reference\n"
         "  --seed N                         input seed (default 1)\n";
}

namespace {

bool parse_list(const std::string& s, std::vector<int64_t>* out) {
  out->clear();
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string tok = s.substr(i, j - i);
    char* end = nullptr;
    const long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0' || v <= 0) return false;
    out->push_back(v);
    i = j + 1;
  }
  return !out->empty();
}

bool parse_dtype(const std::string& s, DType* t) {
  if (s == "bf16") *t = DType::kBF16;
  else if (s == "fp16") *t = DType::kFP16;
  else if (s == "fp32") *t = DType::kFP32;
  else return false;
  return true;
}
bool parse_layout(const std::string& s, ScaleLayout* l) {
  if (s == "128x4") *l = ScaleLayout::kSwizzled128x4;
  else if (s == "8x4") *l = ScaleLayout::kSwizzled8x4;
  else if (s == "linear") *l = ScaleLayout::kLinear;
  else return false;
  return true;
}
bool parse_numerics(const std::string& s, QuantNumerics* n) {
  if (s == "exact") *n = QuantNumerics::kExact;
  else if (s == "fast") *n = QuantNumerics::kFast;
  else if (s == "modelopt") *n = QuantNumerics::kModelOpt;
  else return false;
  return true;
}
bool parse_format(const std::string& s, BlockFormat* f) {
  if (s == "nvfp4") *f = BlockFormat::kNVFP4;
  else if (s == "mxfp4") *f = BlockFormat::kMXFP4;
  else if (s == "mxfp8") *f = BlockFormat::kMXFP8;
  else return false;
  return true;
}

}  // namespace

bool parse_quant_bench_args(const std::vector<std::string>& args, QuantBenchOptions* o, std::string* error,
                            bool* help) {
  *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        *error = a + " needs a value";
        return false;
      }
      *v = args[++i];
      return true;
    };
    auto int_value = [&](int* v, int min) {
      std::string s;
      if (!value(&s)) return false;
      char* end = nullptr;
      const long n = std::strtol(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || n < min || n > 1000000) {
        *error = "bad value for " + a + ": " + s;
        return false;
      }
      *v = int(n);
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      *help = true;
    } else if (a == "--op") {
      if (!value(&v)) return false;
      if (v != "nvfp4" && v != "mxfp4" && v != "mxfp8" && v != "dequant") {
        *error = "unknown --op " + v;
        return false;
      }
      o->op = v;
    } else if (a == "--format") {
      if (!value(&v)) return false;
      if (!parse_format(v, &o->dequant_format)) {
        *error = "unknown --format " + v;
        return false;
      }
    } else if (a == "--dtype") {
      if (!value(&v)) return false;
      if (!parse_dtype(v, &o->dtype)) {
        *error = "unknown --dtype " + v;
        return false;
      }
    } else if (a == "--layout") {
      if (!value(&v)) return false;
      if (!parse_layout(v, &o->layout)) {
        *error = "unknown --layout " + v;
        return false;
      }
    } else if (a == "--numerics") {
      if (!value(&v)) return false;
      if (!parse_numerics(v, &o->numerics)) {
        *error = "unknown --numerics " + v;
        return false;
      }
    } else if (a == "--variant") {
      if (!value(&v)) return false;
      quant::Variant var;
      if (!quant::parse_variant(v.c_str(), &var)) {
        *error = "unknown --variant " + v;
        return false;
      }
      o->variant = quant::variant_name(var);
    } else if (a == "--m" || a == "--k") {
      if (!value(&v)) return false;
      if (!parse_list(v, a == "--m" ? &o->m_list : &o->k_list)) {
        *error = "bad list for " + a + ": " + v;
        return false;
      }
    } else if (a == "--quick") {
      o->quick = true;
    } else if (a == "--csv") {
      if (!value(&o->csv_path)) return false;
    } else if (a == "--md") {
      if (!value(&o->md_path)) return false;
    } else if (a == "--iters") {
      if (!int_value(&o->iterations, 1)) return false;
    } else if (a == "--warmup") {
      if (!int_value(&o->warmup, 0)) return false;
    } else if (a == "--graph") {
      o->graph = true;
    } else if (a == "--pdl") {
      o->pdl = true;
    } else if (a == "--no-check") {
      o->check = false;
    } else if (a == "--seed") {
      int s = 0;
      if (!int_value(&s, 0)) return false;
      o->seed = uint64_t(s);
    } else {
      *error = "unknown option " + a;
      return false;
    }
  }
  return true;
}

namespace {

constexpr int64_t kSummaryMinElements = int64_t(1) << 24;
constexpr int64_t kCheckMaxElements = int64_t(1) << 20;
constexpr double kGraphBelowUs = 20.0;

struct Point {
  int64_t m, k;
};

// One input set and its outputs, for rotation.
struct Set {
  GpuBuffer input, elements, scales, output;
};

struct PointResult {
  double us = 0;
  bool graph = false;
  std::string variant;
  std::string check = "-";
  bool failed = false;
};

const char* layout_text(ScaleLayout l) { return scale_layout_name(l); }

class QuantBench {
 public:
  explicit QuantBench(const QuantBenchOptions& o) : o_(o) {}
  int run();

 private:
  Status run_point(const Point& pt, PointResult* r);
  Status check_point(const Point& pt, Set& s, PointResult* r);
  BlockFormat format() const {
    if (o_.op == "mxfp4") return BlockFormat::kMXFP4;
    if (o_.op == "mxfp8") return BlockFormat::kMXFP8;
    if (o_.op == "dequant") return o_.dequant_format;
    return BlockFormat::kNVFP4;
  }
  bool dequant() const { return o_.op == "dequant"; }
  Status quantize_call(const Point& pt, Set& s, bool pdl);
  Status dequantize_call(const Point& pt, Set& s);

  QuantBenchOptions o_;
  cudaStream_t stream_ = nullptr;
  GpuBuffer gs_;          // global scale (encode, or decode for dequant / modelopt)
  GpuBuffer gs_scratch_;  // compute_global_scale workspace
};

Status QuantBench::quantize_call(const Point& pt, Set& s, bool pdl) {
  const BlockFormat f = format();
  const DType in_t = dequant() ? DType::kBF16 : o_.dtype;
  if (f == BlockFormat::kNVFP4) {
    Nvfp4QuantizeParams p;
    p.input = s.input.data();
    p.input_dtype = in_t;
    p.rows = pt.m;
    p.cols = pt.k;
    p.global_scale = gs_.as<float>();
    p.numerics = dequant() ? QuantNumerics::kExact : o_.numerics;
    p.out_codes = s.elements.data();
    p.out_codes_bytes = int64_t(s.elements.bytes());
    p.out_scales = s.scales.data();
    p.out_scales_bytes = int64_t(s.scales.bytes());
    p.scale_layout = o_.layout;
    p.enable_pdl = pdl;
    return quantize_nvfp4(p, stream_);
  }
  MxQuantizeParams p;
  p.format = f;
  p.input = s.input.data();
  p.input_dtype = in_t;
  p.rows = pt.m;
  p.cols = pt.k;
  p.numerics = (dequant() || o_.numerics == QuantNumerics::kModelOpt) ? QuantNumerics::kExact : o_.numerics;
  p.out_elements = s.elements.data();
  p.out_elements_bytes = int64_t(s.elements.bytes());
  p.out_scales = s.scales.data();
  p.out_scales_bytes = int64_t(s.scales.bytes());
  p.scale_layout = o_.layout;
  p.enable_pdl = pdl;
  return quantize_mx(p, stream_);
}

Status QuantBench::dequantize_call(const Point& pt, Set& s) {
  DequantizeParams p;
  p.format = format();
  p.elements = s.elements.data();
  p.scales = s.scales.data();
  p.scale_layout = o_.layout;
  p.rows = pt.m;
  p.cols = pt.k;
  p.decode_global_scale = p.format == BlockFormat::kNVFP4 ? gs_.as<float>() + 1 : nullptr;
  p.output = s.output.data();
  p.output_dtype = o_.dtype;
  p.output_bytes = int64_t(s.output.bytes());
  return dequantize(p, stream_);
}

Status QuantBench::check_point(const Point& pt, Set& s, PointResult* r) {
  if (dequant()) return Status::ok();  // dequantize correctness: tests/quant
  const BlockFormat f = format();
  const size_t in_bytes = size_t(pt.m * pt.k) * dtype_size(o_.dtype);
  std::vector<uint8_t> in(in_bytes), el(s.elements.bytes()), sc(s.scales.bytes());
  std::vector<uint8_t> ref_el(el.size()), ref_sc(sc.size());
  float gs = 1.0f;
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaStreamSynchronize(stream_)), "check sync"));
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaMemcpy(in.data(), s.input.data(), in_bytes, cudaMemcpyDeviceToHost)), "check copy"));
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaMemcpy(el.data(), s.elements.data(), el.size(), cudaMemcpyDeviceToHost)), "check copy"));
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaMemcpy(sc.data(), s.scales.data(), sc.size(), cudaMemcpyDeviceToHost)), "check copy"));
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaMemcpy(&gs, gs_.data(), 4, cudaMemcpyDeviceToHost)), "check copy"));
  if (f == BlockFormat::kNVFP4) {
    Nvfp4QuantizeParams p;
    p.input = in.data();
    p.input_dtype = o_.dtype;
    p.rows = pt.m;
    p.cols = pt.k;
    p.global_scale = &gs;
    p.numerics = o_.numerics;
    p.out_codes = ref_el.data();
    p.out_codes_bytes = int64_t(ref_el.size());
    p.out_scales = ref_sc.data();
    p.out_scales_bytes = int64_t(ref_sc.size());
    p.scale_layout = o_.layout;
    FP4KIT_RETURN_IF_ERROR(reference::quantize_nvfp4(p));
  } else {
    MxQuantizeParams p;
    p.format = f;
    p.input = in.data();
    p.input_dtype = o_.dtype;
    p.rows = pt.m;
    p.cols = pt.k;
    p.numerics = o_.numerics == QuantNumerics::kModelOpt ? QuantNumerics::kExact : o_.numerics;
    p.out_elements = ref_el.data();
    p.out_elements_bytes = int64_t(ref_el.size());
    p.out_scales = ref_sc.data();
    p.out_scales_bytes = int64_t(ref_sc.size());
    p.scale_layout = o_.layout;
    FP4KIT_RETURN_IF_ERROR(reference::quantize_mx(p));
  }
  int64_t diff_el = 0, diff_sc = 0;
  for (size_t i = 0; i < el.size(); ++i) diff_el += el[i] != ref_el[i];
  for (size_t i = 0; i < sc.size(); ++i) diff_sc += sc[i] != ref_sc[i];
  if (diff_el == 0 && diff_sc == 0) {
    r->check = "ok";
  } else {
    r->check = strprintf("diff %lld/%lld", (long long)diff_el, (long long)diff_sc);
    // Only kFast may differ from the reference (rcp.approx vs the correctly rounded emulation).
    r->failed = o_.numerics != QuantNumerics::kFast;
  }
  return Status::ok();
}

Status QuantBench::run_point(const Point& pt, PointResult* r) {
  const BlockFormat f = format();
  const int64_t elems = pt.m * pt.k;
  const int64_t in_size = int64_t(dtype_size(dequant() ? DType::kBF16 : o_.dtype));
  const int64_t el_bytes = element_buffer_bytes(f, pt.m, pt.k);
  const int64_t sc_bytes = scale_buffer_bytes(f, o_.layout, pt.m, pt.k);
  const int64_t out_bytes = dequant() ? elems * int64_t(dtype_size(o_.dtype)) : 0;
  const int64_t set_bytes = elems * in_size + el_bytes + sc_bytes + out_bytes;
  const int copies = rotation_count(size_t(set_bytes), device_info().l2_bytes);

  std::vector<Set> sets(static_cast<size_t>(copies));
  for (int c = 0; c < copies; ++c) {
    Set& s = sets[size_t(c)];
    FP4KIT_RETURN_IF_ERROR(s.input.alloc(size_t(elems * in_size), "input"));
    FP4KIT_RETURN_IF_ERROR(s.elements.alloc(size_t(el_bytes), "elements"));
    FP4KIT_RETURN_IF_ERROR(s.scales.alloc(size_t(sc_bytes), "scales"));
    if (dequant()) FP4KIT_RETURN_IF_ERROR(s.output.alloc(size_t(out_bytes), "output"));
    FP4KIT_RETURN_IF_ERROR(fill_random(s.input.data(), dequant() ? DType::kBF16 : o_.dtype, elems,
                                       o_.seed * 1000003u + uint64_t(c), Distribution::kNormal, 1.0f, stream_));
  }
  // Global scale from the first set (both conventions: [0] encode for quantize, [1] = 1/gs decode).
  GlobalScaleParams g;
  g.input = sets[0].input.data();
  g.input_dtype = dequant() ? DType::kBF16 : o_.dtype;
  g.rows = pt.m;
  g.cols = pt.k;
  g.numerics = (!dequant() && o_.numerics == QuantNumerics::kModelOpt) ? QuantNumerics::kModelOpt : QuantNumerics::kExact;
  g.out_global_scale = gs_.as<float>();
  FP4KIT_RETURN_IF_ERROR(compute_global_scale(g, gs_scratch_.data(), gs_scratch_.bytes(), stream_));
  float gs = 1.0f;
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaMemcpyAsync(&gs, gs_.data(), 4, cudaMemcpyDeviceToHost, stream_)), "gs"));
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaStreamSynchronize(stream_)), "gs"));
  const float dgs = 1.0f / gs;
  FP4KIT_RETURN_IF_ERROR(cuda_result(int(cudaMemcpy(gs_.as<float>() + 1, &dgs, 4, cudaMemcpyHostToDevice)), "dgs"));

  if (dequant()) {  // quantized inputs for every set
    for (auto& s : sets) FP4KIT_RETURN_IF_ERROR(quantize_call(pt, s, false));
  }

  CallFn fn = [&](int call) {
    Set& s = sets[size_t(call % copies)];
    return dequant() ? dequantize_call(pt, s) : quantize_call(pt, s, o_.pdl);
  };
  TimingOptions opt;
  opt.warmup = o_.warmup;
  opt.iterations = o_.iterations;
  opt.graph = o_.graph;
  Timing t;
  FP4KIT_RETURN_IF_ERROR(time_calls(fn, stream_, opt, &t));
  if (!o_.graph && t.median_us < kGraphBelowUs) {
    opt.graph = true;
    opt.graph_batch = std::max(20, copies);
    Timing tg;
    FP4KIT_RETURN_IF_ERROR(time_calls(fn, stream_, opt, &tg));
    t = tg;
  }
  r->us = t.median_us;
  r->graph = t.graph;
  r->variant = dequant() ? "-" : quant::variant_name(quant::last_variant());
  if (o_.check && elems <= kCheckMaxElements) {
    FP4KIT_RETURN_IF_ERROR(fn(0));  // set 0 holds the outputs of its own input
    FP4KIT_RETURN_IF_ERROR(check_point(pt, sets[0], r));
  }
  return Status::ok();
}

int QuantBench::run() {
  if (!has_sm90a_device()) {
    std::fprintf(stderr, "bench quantize: needs an sm_90 GPU (%s)\n",
                 device_info().available ? ("found sm_" + std::to_string(device_info().compute_capability)).c_str()
                                         : device_info().reason.c_str());
    return 1;
  }
  quant::Variant var = quant::Variant::kAuto;
  quant::parse_variant(o_.variant.c_str(), &var);
  quant::set_variant_override(var);
  if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "bench quantize: cudaStreamCreate failed\n");
    return 1;
  }
  double copy_bw = 0;
  const Status st = [&]() -> Status {
    FP4KIT_RETURN_IF_ERROR(gs_.alloc(8, "global scale"));
    FP4KIT_RETURN_IF_ERROR(
        gs_scratch_.alloc(std::max<size_t>(4, global_scale_workspace_bytes(GlobalScaleParams{})), "gs workspace"));
    return copy_bandwidth(size_t(1) << 30, 20, stream_, &copy_bw);
  }();
  if (!st.is_ok()) {
    std::fprintf(stderr, "bench quantize: %s\n", st.to_string().c_str());
    return 1;
  }

  const std::vector<int64_t> ms = !o_.m_list.empty() ? o_.m_list : (o_.quick ? quick_bench_m() : default_bench_m());
  const std::vector<int64_t> ks = !o_.k_list.empty() ? o_.k_list : (o_.quick ? quick_bench_k() : default_bench_k());
  const std::string what = dequant() ? std::string("dequant ") + block_format_name(o_.dequant_format) + " -> " +
                                           dtype_name(o_.dtype)
                                     : o_.op + " from " + dtype_name(o_.dtype);
  const std::string header =
      strprintf("device: %s (%d SMs, L2 %lld MB); %s, layout %s, numerics %s, variant %s%s; copy bandwidth %.3f TB/s "
                "(read+write, cudaMemcpyAsync D2D 1 GiB, median)",
                device_info().name.c_str(), device_info().sm_count, device_info().l2_bytes >> 20, what.c_str(),
                layout_text(o_.layout), quant_numerics_name(o_.numerics), o_.variant.c_str(), o_.pdl ? ", PDL" : "",
                copy_bw / 1e12);
  std::printf("%s\n", header.c_str());

  Table table({"M", "K", "kernel", "us", "timing", "TB/s", "vs_copy", "check"});
  std::vector<double> big_ratios;
  bool failed = false;
  const int block = block_size(format());
  for (int64_t m : ms) {
    for (int64_t k : ks) {
      if (k % block != 0) continue;
      const Point pt{m, k};
      PointResult r;
      const Status s = run_point(pt, &r);
      if (!s.is_ok()) {
        std::printf("M=%lld K=%lld: %s\n", (long long)m, (long long)k, s.to_string().c_str());
        table.add_row({std::to_string(m), std::to_string(k), "-", "-", "-", "-", "-", "error"});
        cudaGetLastError();
        if (s.code() != StatusCode::kCudaError) failed = true;
        continue;
      }
      const BlockFormat f = format();
      const double elems = double(m) * double(k);
      const double bytes =
          dequant() ? double(element_buffer_bytes(f, m, k) + scale_buffer_bytes(f, o_.layout, m, k)) +
                          elems * double(dtype_size(o_.dtype))
                    : elems * double(dtype_size(o_.dtype)) + double(element_buffer_bytes(f, m, k)) +
                          double(scale_buffer_bytes(f, o_.layout, m, k));
      const double bw = bytes / (r.us * 1e-6);
      const double ratio = bw / copy_bw;
      if (m * k >= kSummaryMinElements) big_ratios.push_back(ratio);
      failed = failed || r.failed;
      table.add_row({std::to_string(m), std::to_string(k), r.variant, strprintf("%.2f", r.us), r.graph ? "graph" : "eager",
                     strprintf("%.3f", bw / 1e12), strprintf("%.3f", ratio), r.check});
      std::printf("M=%-6lld K=%-6lld %-10s %9.2f us  %6.3f TB/s  %5.1f%% of copy  %s\n", (long long)m, (long long)k,
                  r.variant.c_str(), r.us, bw / 1e12, 100.0 * ratio, r.check.c_str());
      std::fflush(stdout);
    }
  }
  std::string summary;
  if (big_ratios.empty()) {
    summary = "summary: no point with M*K >= 2^24";
  } else {
    summary = strprintf("summary: M*K >= 2^24 (%zu points): geomean %.1f%% of copy bandwidth, min %.1f%%",
                        big_ratios.size(), 100.0 * geomean(big_ratios),
                        100.0 * *std::min_element(big_ratios.begin(), big_ratios.end()));
  }
  std::printf("\n%s%s\n", table.text().c_str(), summary.c_str());
  if (!o_.csv_path.empty()) {
    const Status w = table.write_csv(o_.csv_path);
    if (!w.is_ok()) std::fprintf(stderr, "%s\n", w.to_string().c_str());
  }
  if (!o_.md_path.empty()) {
    const Status w = table.write_markdown(o_.md_path, header + "\n\n" + summary + "\n");
    if (!w.is_ok()) std::fprintf(stderr, "%s\n", w.to_string().c_str());
  }
  quant::set_variant_override(quant::Variant::kAuto);
  cudaStreamDestroy(stream_);
  return failed ? 1 : 0;
}

}  // namespace

int run_quantize_bench(const QuantBenchOptions& options) {
  QuantBench b(options);
  return b.run();
}

}  // namespace fp4kit::bench
