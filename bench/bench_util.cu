#include "bench_util.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/gpu_timing.h"
#include "fp4kit/device.h"

namespace fp4kit::bench {

#define BU_CUDA(expr, what) FP4KIT_RETURN_IF_ERROR(cuda_result(int(expr), (what)))

// ---- device memory ------------------------------------------------------------------------------
GpuBuffer& GpuBuffer::operator=(GpuBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

Status GpuBuffer::alloc(size_t bytes, const char* what) {
  release();
  const cudaError_t e = cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    return cuda_result(int(e), (std::string("cudaMalloc ") + what + " (" + std::to_string(bytes) + " bytes)").c_str());
  }
  bytes_ = bytes;
  return Status::ok();
}

void GpuBuffer::release() {
  if (ptr_ != nullptr) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Status cuda_result(int cuda_error, const char* what) {
  if (cuda_error == 0) return Status::ok();
  const auto e = static_cast<cudaError_t>(cuda_error);
  cudaGetLastError();
  return Status(StatusCode::kCudaError,
                std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// ---- timing -------------------------------------------------------------------------------------
namespace {

Timing summarize(std::vector<double> us, bool graph) {
  Timing t;
  t.samples = int(us.size());
  t.graph = graph;
  if (us.empty()) return t;
  std::sort(us.begin(), us.end());
  t.min_us = us.front();
  t.max_us = us.back();
  t.median_us = median(us);
  return t;
}

}  // namespace

Status time_calls(const CallFn& fn, cudaStream_t stream, const TimingOptions& opt, Timing* out) {
  const int iters = std::max(1, opt.iterations);
  int call = 0;
  for (int i = 0; i < opt.warmup; ++i) FP4KIT_RETURN_IF_ERROR(fn(call++));
  BU_CUDA(cudaStreamSynchronize(stream), "warm-up");

  if (opt.graph) {
    const int batch = std::max(1, opt.graph_batch);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    BU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    const Status cs = [&]() -> Status {
      for (int i = 0; i < batch; ++i) FP4KIT_RETURN_IF_ERROR(fn(call++));
      return Status::ok();
    }();
    const cudaError_t ec = cudaStreamEndCapture(stream, &graph);
    if (!cs.is_ok()) {
      if (graph) cudaGraphDestroy(graph);
      return cs;
    }
    BU_CUDA(ec, "cudaStreamEndCapture");
    const cudaError_t ei = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    BU_CUDA(ei, "cudaGraphInstantiate");
    std::vector<double> us;
    const Status rs = [&]() -> Status {
      detail::CudaEvents e;
      BU_CUDA(e.create(size_t(iters) + 1), "cudaEventCreate");
      BU_CUDA(cudaGraphLaunch(exec, stream), "cudaGraphLaunch (warm-up)");
      // Delay so that all replays are queued before the first one runs.
      detail::launch_delay(200000ull, stream);
      for (int i = 0; i < iters; ++i) {
        BU_CUDA(cudaEventRecord(e[i], stream), "cudaEventRecord");
        BU_CUDA(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
      }
      BU_CUDA(cudaEventRecord(e[iters], stream), "cudaEventRecord");
      BU_CUDA(cudaStreamSynchronize(stream), "graph replays");
      for (int i = 0; i < iters; ++i) {
        float ms = 0;
        BU_CUDA(cudaEventElapsedTime(&ms, e[i], e[i + 1]), "cudaEventElapsedTime");
        us.push_back(1000.0 * ms / batch);
      }
      return Status::ok();
    }();
    cudaGraphExecDestroy(exec);
    FP4KIT_RETURN_IF_ERROR(rs);
    *out = summarize(std::move(us), true);
    return Status::ok();
  }

  // Eager: hold the GPU with a delay long enough for the host to queue every call (host enqueue
  // cost is a few microseconds per call; 25 us per call of delay covers it), so the timed calls run
  // back to back.
  detail::CudaEvents e;
  BU_CUDA(e.create(size_t(iters) + 1), "cudaEventCreate");
  const double per_call_ns = std::max(0.0, 25000.0 - 1000.0 * std::max(0.0, opt.call_us));
  detail::launch_delay((unsigned long long)(double(iters) * per_call_ns) + 50000ull, stream);
  BU_CUDA(cudaGetLastError(), "delay kernel");
  for (int i = 0; i < iters; ++i) {
    BU_CUDA(cudaEventRecord(e[i], stream), "cudaEventRecord");
    FP4KIT_RETURN_IF_ERROR(fn(call++));
  }
  BU_CUDA(cudaEventRecord(e[iters], stream), "cudaEventRecord");
  BU_CUDA(cudaStreamSynchronize(stream), "timed calls");
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    float ms = 0;
    BU_CUDA(cudaEventElapsedTime(&ms, e[i], e[i + 1]), "cudaEventElapsedTime");
    us.push_back(1000.0 * ms);
  }
  *out = summarize(std::move(us), false);
  return Status::ok();
}

int rotation_count(size_t set_bytes, long long l2_bytes, int max_copies) {
  if (set_bytes == 0) return 1;
  const double need = 2.0 * double(l2_bytes > 0 ? l2_bytes : (50ll << 20));
  const int n = int(std::ceil(need / double(set_bytes)));
  return std::clamp(n, 1, std::max(1, max_copies));
}

Status copy_bandwidth(size_t bytes, int iterations, cudaStream_t stream, double* bytes_per_second) {
  GpuBuffer src, dst;
  FP4KIT_RETURN_IF_ERROR(src.alloc(bytes, "copy source"));
  FP4KIT_RETURN_IF_ERROR(dst.alloc(bytes, "copy destination"));
  FP4KIT_RETURN_IF_ERROR(fill_random(src.data(), DType::kFP32, int64_t(bytes / 4), 7, Distribution::kUniform, 1.0f, stream));
  TimingOptions opt;
  opt.warmup = 3;
  opt.iterations = std::max(3, iterations);
  Timing t;
  FP4KIT_RETURN_IF_ERROR(time_calls(
      [&](int) { return cuda_result(int(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream)), "cudaMemcpyAsync"); },
      stream, opt, &t));
  *bytes_per_second = 2.0 * double(bytes) / (t.median_us * 1e-6);
  return Status::ok();
}

// ---- data -----------------------------------------------------------------------------------------
namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <DType kT>
__global__ void fill_kernel(void* dst, int64_t count, uint64_t seed, Distribution dist, float scale) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = splitmix64(seed * 0x2545f4914f6cdd1dull + uint64_t(i));
    const float u1 = (float(uint32_t(h >> 40)) + 0.5f) * (1.0f / 16777216.0f);          // (0, 1)
    const float u2 = (float(uint32_t(h & 0xffffffu)) + 0.5f) * (1.0f / 16777216.0f);   // (0, 1)
    float v = dist == Distribution::kUniform ? scale * (2.0f * u1 - 1.0f)
                                             : scale * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    if constexpr (kT == DType::kBF16) {
      __nv_bfloat16 b = __float2bfloat16_rn(v);
      if (__bfloat162float(b) == 0.0f) b = __float2bfloat16_rn(scale / 64.0f);
      static_cast<__nv_bfloat16*>(dst)[i] = b;
    } else if constexpr (kT == DType::kFP16) {
      __half b = __float2half_rn(v);
      if (__half2float(b) == 0.0f) b = __float2half_rn(scale / 64.0f);
      static_cast<__half*>(dst)[i] = b;
    } else {
      if (v == 0.0f) v = scale / 64.0f;
      static_cast<float*>(dst)[i] = v;
    }
  }
}

}  // namespace

Status fill_random(void* dst, DType dtype, int64_t count, uint64_t seed, Distribution dist, float scale,
                   cudaStream_t stream) {
  if (count <= 0) return Status::ok();
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((count + threads - 1) / threads, 65536);
  switch (dtype) {
    case DType::kBF16: fill_kernel<DType::kBF16><<<unsigned(blocks), threads, 0, stream>>>(dst, count, seed, dist, scale); break;
    case DType::kFP16: fill_kernel<DType::kFP16><<<unsigned(blocks), threads, 0, stream>>>(dst, count, seed, dist, scale); break;
    case DType::kFP32: fill_kernel<DType::kFP32><<<unsigned(blocks), threads, 0, stream>>>(dst, count, seed, dist, scale); break;
    default: return Status(StatusCode::kInvalidArgument, "fill_random: dtype must be bf16, fp16 or fp32");
  }
  return cuda_result(int(cudaGetLastError()), "fill_random kernel");
}

// ---- statistics and tables --------------------------------------------------------------------
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double s = 0.0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

std::string strprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[512];
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < int(sizeof(buf))) return std::string(buf, n < 0 ? 0 : size_t(n));
  std::string s(size_t(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(s.data(), s.size(), fmt, ap);
  va_end(ap);
  s.resize(size_t(n));
  return s;
}

std::string Table::text() const {
  std::vector<size_t> w(headers_.size(), 0);
  for (size_t c = 0; c < headers_.size(); ++c) w[c] = headers_[c].size();
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string v = c < cells.size() ? cells[c] : "";
      s += (c ? "  " : "") + std::string(w[c] - v.size(), ' ') + v;
    }
    return s + "\n";
  };
  std::string out = line(headers_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string Table::csv() const {
  auto cell = [](const std::string& v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (char ch : v) q += (ch == '"') ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) s += (c ? "," : "") + cell(cells[c]);
    return s + "\n";
  };
  std::string out = line(headers_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string Table::markdown() const {
  auto line = [](const std::vector<std::string>& cells, size_t n) {
    std::string s = "|";
    for (size_t c = 0; c < n; ++c) s += " " + (c < cells.size() ? cells[c] : std::string()) + " |";
    return s + "\n";
  };
  std::string out = line(headers_, headers_.size());
  std::string sep = "|";
  for (size_t c = 0; c < headers_.size(); ++c) sep += "---|";
  out += sep + "\n";
  for (const auto& r : rows_) out += line(r, headers_.size());
  return out;
}

static Status write_file(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status(StatusCode::kInvalidArgument, "cannot open " + path + " for writing");
  f << content;
  if (!f) return Status(StatusCode::kInvalidArgument, "cannot write " + path);
  return Status::ok();
}

Status Table::write_csv(const std::string& path) const { return write_file(path, csv()); }
Status Table::write_markdown(const std::string& path, const std::string& preamble) const {
  return write_file(path, preamble + (preamble.empty() ? "" : "\n") + markdown());
}

std::string fmt_fixed(double v, int decimals) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string fmt_sci(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2e", v);
  return buf;
}

void keep_min(double& cur, int64_t& at, double v, int64_t point) {
  if (std::isnan(v)) return;
  if (std::isnan(cur) || v < cur) {
    cur = v;
    at = point;
  }
}

std::string fmt_min_at(double v, int64_t at, int decimals, const char* var) {
  return std::isnan(v) ? std::string("n/a") : fmt_fixed(v, decimals) + " (" + var + "=" + std::to_string(at) + ")";
}

std::string comment_lines(const std::string& text) {
  std::string out;
  std::istringstream ls(text);
  for (std::string l; std::getline(ls, l);) out += "# " + l + "\n";
  return out;
}



// ---- command-line parsing -------------------------------------------------------------------------
bool parse_count(const std::string& s, int64_t* out) {
  std::string t = s;
  int64_t mult = 1;
  if (!t.empty() && (t.back() == 'k' || t.back() == 'K')) {
    mult = 1024;
    t.pop_back();
  }
  if (t.empty() || t.size() > 12) return false;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
  }
  *out = std::stoll(t) * mult;
  return true;
}

std::vector<std::string> split_text(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool parse_count_list(const std::string& text, const std::string& option, std::vector<int64_t>* out,
                      std::string* error) {
  std::vector<int64_t> values;
  for (const std::string& item : split_text(text, ',')) {
    const std::vector<std::string> parts = split_text(item, ':');
    int64_t a = 0, b = 0;
    if (parts.size() == 1) {
      if (!parse_count(parts[0], &a) || a <= 0) {
        *error = option + ": bad value '" + item + "'";
        return false;
      }
      values.push_back(a);
      continue;
    }
    if (parts.size() > 3 || !parse_count(parts[0], &a) || !parse_count(parts[1], &b) || a <= 0 || b < a) {
      *error = option + ": bad range '" + item + "' (START:STOP[:xF|:+S])";
      return false;
    }
    const std::string step = parts.size() == 3 ? parts[2] : "+1";
    int64_t f = 0;
    if (step.size() < 2 || (step[0] != 'x' && step[0] != '+') || !parse_count(step.substr(1), &f) ||
        (step[0] == 'x' ? f < 2 : f < 1)) {
      *error = option + ": bad step '" + step + "' in '" + item + "' (xF with F >= 2, or +S)";
      return false;
    }
    for (int64_t v = a; v <= b; v = step[0] == 'x' ? v * f : v + f) values.push_back(v);
  }
  out->clear();
  for (int64_t v : values) {
    if (std::find(out->begin(), out->end(), v) == out->end()) out->push_back(v);
  }
  return true;
}

bool OptionReader::next() {
  if (!error.empty()) return false;
  if (started_) ++i_;
  started_ = true;
  if (i_ >= args_.size()) return false;
  name_ = args_[i_];
  has_inline_ = false;
  const auto eq = name_.find('=');
  if (name_.rfind("--", 0) == 0 && eq != std::string::npos) {
    inline_value_ = name_.substr(eq + 1);
    name_ = name_.substr(0, eq);
    has_inline_ = true;
  }
  return true;
}

bool OptionReader::value(std::string* v) {
  if (has_inline_) {
    *v = inline_value_;
    return true;
  }
  if (i_ + 1 >= args_.size()) {
    error = name_ + " needs a value";
    return false;
  }
  *v = args_[++i_];
  return true;
}

bool OptionReader::value_count(int64_t* v, int64_t lo) {
  std::string s;
  if (!value(&s)) return false;
  if (!parse_count(s, v) || *v < lo) {
    error = name_ + ": bad value '" + s + "'";
    return false;
  }
  return true;
}

bool OptionReader::value_positive(double* v) { return value_number(v, false); }

bool OptionReader::value_non_negative(double* v) { return value_number(v, true); }

bool OptionReader::value_number(double* v, bool zero_ok) {
  std::string s;
  if (!value(&s)) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(*v) || !(*v > 0 || (zero_ok && *v == 0))) {
    error = name_ + ": bad value '" + s + "'";
    return false;
  }
  return true;
}

namespace {

// The shared options without a value.
bool read_shared_flag(const std::string& a, const SharedBenchOptions& o) {
  if (a == "--help" || a == "-h") {
    if (o.help) *o.help = true;
  } else if (a == "--quick") {
    *o.quick = true;
  } else if (a == "--graph") {
    *o.graph = true;
  } else if (a == "--no-baseline") {
    *o.baseline = false;
  } else if (a == "--no-check") {
    *o.check = false;
  } else if (a == "--csv") {
    *o.csv = true;
  } else if (a == "--markdown") {
    *o.markdown = true;
  } else if (a == "--verbose" || a == "-v") {
    *o.verbose = true;
  } else {
    return false;
  }
  return true;
}

// The shared options with a value; a bad value leaves the error in r.error.
bool read_shared_value(OptionReader& r, const std::string& a, const SharedBenchOptions& o) {
  int64_t iv = 0;
  if (a == "--max-rel-err") {
    r.value_positive(o.max_rel_err);
  } else if (a == "--target-ms") {
    r.value_positive(o.target_ms);
  } else if (a == "--output") {
    r.value(o.output);
  } else if (a == "--warmup") {
    if (r.value_count(&iv, 0)) *o.warmup = int(iv);
  } else if (a == "--warmup-ms") {
    r.value_non_negative(o.warmup_ms);
  } else if (a == "--reps") {
    if (r.value_count(&iv, 1)) *o.reps = int(iv);
  } else if (a == "--seed") {
    if (r.value_count(&iv, 0)) *o.seed = uint64_t(iv);
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool parse_bench_options(const std::vector<std::string>& args, const SharedBenchOptions& shared,
                         const OwnOptionFn& own, std::string* error) {
  if (shared.help) *shared.help = false;
  OptionReader r(args);
  while (r.next()) {
    const std::string a = r.name();
    if (!read_shared_flag(a, shared) && !read_shared_value(r, a, shared) && !own(r, a)) {
      r.error = "unknown argument '" + r.raw() + "'";
    }
  }
  if (r.error.empty() && *shared.csv && *shared.markdown) r.error = "--csv and --markdown are exclusive";
  if (r.error.empty()) return true;
  if (error) *error = r.error;
  return false;
}

// ---- what the GEMM and MoE benchmark drivers share --------------------------------------------
Status time_adaptive(const CallFn& fn, cudaStream_t stream, const AdaptiveTiming& t, double* median_us) {
  TimingOptions o;
  o.warmup = std::max(1, t.warmup);
  o.iterations = 3;
  Timing est;
  FP4KIT_RETURN_IF_ERROR(time_calls(fn, stream, o, &est));
  o.warmup = 1;
  if (t.warmup_ms > 0 && est.median_us > 0) {
    // Long compute-bound calls run at the power cap, where the clock settles over ~100 ms at a level
    // that depends on the kernel and its data; timing right after a different kernel measures the
    // transition (docs/BENCH_GEMM.md "Timing").
    o.warmup = int(std::clamp<double>(t.warmup_ms * 1000.0 / est.median_us, 1.0, 100000.0));
    o.call_us = est.median_us;  // and no long idle delay between the warm-up and the timed calls
  }
  if (t.reps > 0) {
    o.iterations = t.reps;
  } else {
    const double want = est.median_us > 0 ? t.target_ms * 1000.0 / est.median_us : t.max_reps;
    o.iterations = int(std::clamp<double>(want, std::max(1, t.min_reps), std::max(1, t.max_reps)));
  }
  Timing timed;
  FP4KIT_RETURN_IF_ERROR(time_calls(fn, stream, o, &timed));
  *median_us = timed.median_us;
  return Status::ok();
}

Status BenchDriver::setup_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    return Status(StatusCode::kNoDevice, std::string("no CUDA device (") +
                                             (e != cudaSuccess ? cudaGetErrorString(e) : "count 0") + ")");
  }
  int dev = 0;
  BU_CUDA(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop{};
  BU_CUDA(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  device_name_ = prop.name;
  cc_major_ = prop.major;
  cc_minor_ = prop.minor;
  sm_count_ = prop.multiProcessorCount;
  int l2 = 0;
  BU_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "cudaDeviceGetAttribute(L2)");
  l2_bytes_ = l2;
  BU_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  return Status::ok();
}

bool BenchDriver::start() {
  const Status d = setup_device();
  if (!d.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program_, d.to_string().c_str());
    return false;
  }
  if (cc_major_ != 9) {
    progress("warning: %s is sm_%d%d; fp4kit's kernels target sm_90a (H100/H200)\n", device_name_.c_str(), cc_major_,
             cc_minor_);
  }
  return true;
}

bool BenchDriver::measure_copy_bandwidth() {
  const Status c = copy_bandwidth(size_t(1) << 30, 20, stream_, &copy_bw_);
  if (!c.is_ok()) std::fprintf(stderr, "%s: copy bandwidth: %s\n", program_, c.to_string().c_str());
  return c.is_ok();
}

int BenchDriver::finish() {
  if (sticky_error_) {
    progress("!!! a CUDA error left the context unusable; the report below is partial\n");
    ++failures_;
  }
  print_report();
  if (stream_) cudaStreamDestroy(stream_);
  return failures_ > 0 ? 1 : 0;
}

void BenchDriver::progress(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fflush(stderr);
}

std::string BenchDriver::device_head() const {
  return strprintf("device %s sms=%d l2=%lldMB cc=%d.%d\n", device_name_.c_str(), sm_count_,
                   (long long)(l2_bytes_ >> 20), cc_major_, cc_minor_) +
         strprintf("fp4kit %s source %s\n", version(), source_revision()) +
         strprintf("copy_bw_TBps(read+write) %.3f\n", copy_bw_ / 1e12);
}

std::string BenchDriver::result_line() const {
  if (failures_ > 0) {
    return strprintf("RESULT: FAIL (%d failure(s); see '!!!' lines on stderr and ERROR/FAIL rows)\n", failures_);
  }
  return "RESULT: PASS\n";
}

void BenchDriver::emit_report(const ReportText& r, bool csv, bool markdown, const std::string& output) const {
  const std::string as_csv = comment_lines(r.head) + r.csv + comment_lines(r.summary);
  const std::string as_md = "```\n" + r.head + "```\n\n" + r.markdown + "\n```\n" + r.summary + "```\n";
  if (csv) std::printf("%s", as_csv.c_str());
  else if (markdown) std::printf("%s", as_md.c_str());
  else std::printf("%s\n%s\n%s", r.head.c_str(), r.text.c_str(), r.summary.c_str());
  std::fflush(stdout);
  if (output.empty()) return;
  std::ofstream f(output);
  f << (output.ends_with(".csv") ? as_csv : as_md);
  if (!f) std::fprintf(stderr, "%s: could not write %s\n", program_, output.c_str());
}

}  // namespace fp4kit::bench
