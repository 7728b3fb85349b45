// bench/bench_util.h — measurement helpers shared by the fp4kit benchmarks.
//
//   GpuBuffer             owning cudaMalloc'd buffer
//   time_calls()          CUDA-event timing: warm-up, then per-call event pairs (or CUDA-graph
//                         replay of a batch of calls) and the median; calls are queued behind a
//                         short device-side delay so that host launch cost does not leak in
//   rotation_count()      copies of an input set needed to exceed 2x L2 (rotate per call)
//   copy_bandwidth()      in-process device-to-device copy bandwidth (bytes read + written)
//   fill_random()         deterministic random BF16/FP16/FP32 on the device (no zeros)
//   Table                 rows of cells -> aligned text, CSV, markdown; files
//   geomean(), median()
//   BenchDriver           what the GEMM and MoE drivers share: device, stream, start, end, report
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::bench {

// ---- device memory ------------------------------------------------------------------------------
class GpuBuffer {
 public:
  GpuBuffer() = default;
  ~GpuBuffer() { release(); }
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;
  GpuBuffer(GpuBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  GpuBuffer& operator=(GpuBuffer&& o) noexcept;

  // cudaMalloc of max(bytes, 1) (256-byte aligned); `what` names the buffer in errors.
  Status alloc(size_t bytes, const char* what);
  void release();
  void* data() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// cudaError_t -> Status ("<what>: cudaErrorX (text)"); kOk for 0.
Status cuda_result(int cuda_error, const char* what);

// ---- timing -------------------------------------------------------------------------------------
// One call of the operation under test; `call` counts from 0 (use it to rotate input sets).
using CallFn = std::function<Status(int call)>;

struct TimingOptions {
  int warmup = 5;        // untimed calls first
  int iterations = 50;   // timed calls (eager) or graph replays (graph)
  bool graph = false;    // replay a CUDA graph of `graph_batch` calls instead of timing each call
  int graph_batch = 20;  // calls per graph (graph mode)
  // Eager mode: the GPU time of one call when known (> 0). The delay kernel in front of the timed
  // calls then only covers the host's enqueue time beyond it (25 us per call minus this), so that
  // calls of 25 us or more follow the warm-up with ~50 us of idle GPU instead of milliseconds.
  double call_us = 0;
};

struct Timing {
  double median_us = 0, min_us = 0, max_us = 0;  // per call
  int samples = 0;
  bool graph = false;
};

// Eager mode: each call between its own pair of events, all calls queued behind a device-side delay
// kernel (so the GPU runs them back to back, as in a real stream of work); median of the per-call
// times. Graph mode: `graph_batch` calls captured once, the graph replayed `iterations` times, each
// replay timed; median replay time / graph_batch. Synchronizes `stream`.
Status time_calls(const CallFn& fn, cudaStream_t stream, const TimingOptions& opt, Timing* out);

// Copies of a `set_bytes` input set so that together they exceed 2x the L2 cache (at least 1, at
// most max_copies).
int rotation_count(size_t set_bytes, long long l2_bytes, int max_copies = 256);

// Device-to-device copy bandwidth in bytes/s counting bytes read + written (2 * bytes per copy):
// cudaMemcpyAsync between two `bytes` buffers, median of `iterations` event-timed copies after
// warm-up.
Status copy_bandwidth(size_t bytes, int iterations, cudaStream_t stream, double* bytes_per_second);

// ---- data -----------------------------------------------------------------------------------------
enum class Distribution { kUniform, kNormal };

// count values of dtype (kBF16, kFP16, kFP32) from a counter-based hash of (seed, index):
// kUniform: U(-scale, scale); kNormal: scale * N(0, 1). Values that round to zero are replaced by
// scale / 64 (no zeros), so no point is timed on trivial data.
Status fill_random(void* dst, DType dtype, int64_t count, uint64_t seed, Distribution dist, float scale,
                   cudaStream_t stream);

// ---- statistics and tables --------------------------------------------------------------------
double median(std::vector<double> v);
double geomean(const std::vector<double>& v);  // 0 for an empty vector

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  size_t rows() const { return rows_.size(); }
  std::string text() const;      // aligned columns
  std::string csv() const;       // RFC 4180 quoting where needed
  std::string markdown() const;  // GitHub table
  // Writes csv() / markdown() (plus `preamble` lines before the table) to `path`.
  Status write_csv(const std::string& path) const;
  Status write_markdown(const std::string& path, const std::string& preamble = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string.
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Report cells of the GEMM and MoE benchmarks: "-" for NaN, "inf", else `decimals` fixed digits.
std::string fmt_fixed(double v, int decimals);
// Their rel_err cells: "nan" or %.2e.
std::string fmt_sci(double v);
// Summary minima of the GEMM and MoE reports: keeps in (cur, at) the smallest non-NaN v and its point.
void keep_min(double& cur, int64_t& at, double v, int64_t point);
// A summary minimum as "n/a" or "<v> (<var>=<at>)", e.g. "0.91 (M=16)".
std::string fmt_min_at(double v, int64_t at, int decimals, const char* var);
// Every line of `text` prefixed "# " (the CSV reports' header and summary).
std::string comment_lines(const std::string& text);

// ---- command-line parsing shared by the benchmarks' option parsers -----------------------------
// A count: decimal digits with an optional k/K suffix (x1024), at most 12 digits.
bool parse_count(const std::string& s, int64_t* out);
// Splits at every `sep` (empty fields kept).
std::vector<std::string> split_text(const std::string& s, char sep);
// "1,16,128", ranges "1:16384:x2" (geometric) or "128:1024:+128" (arithmetic): positive values,
// duplicates dropped, in order. Errors name `option` ("--m: bad range '...'").
bool parse_count_list(const std::string& text, const std::string& option, std::vector<int64_t>* out,
                      std::string* error);

// Walks `--opt value` / `--opt=value` arguments; after the first error next() returns false.
class OptionReader {
 public:
  explicit OptionReader(const std::vector<std::string>& args) : args_(args) {}
  bool next();                                          // to the next argument; false at the end
  const std::string& name() const { return name_; }     // "--opt" (without "=value")
  const std::string& raw() const { return args_[i_]; }  // the argument as given
  bool value(std::string* v);                           // the option's value
  bool value_count(int64_t* v, int64_t lo);             // parse_count, >= lo
  bool value_positive(double* v);                       // a number > 0
  bool value_non_negative(double* v);                   // a number >= 0
  std::string error;

 private:
  bool value_number(double* v, bool zero_ok);
  const std::vector<std::string>& args_;
  size_t i_ = 0;
  bool started_ = false, has_inline_ = false;
  std::string name_, inline_value_;
};

// Where a GEMM / MoE parser keeps the options that both benchmarks have, with the same meaning.
struct SharedBenchOptions {
  bool* help;           // --help, -h (may be null)
  bool* quick;          // --quick
  bool* graph;          // --graph
  bool* baseline;       // --no-baseline
  bool* check;          // --no-check
  double* max_rel_err;  // --max-rel-err X
  bool* csv;            // --csv
  bool* markdown;       // --markdown (not with --csv)
  std::string* output;  // --output FILE
  int* warmup;          // --warmup N
  double* warmup_ms;    // --warmup-ms X (>= 0)
  int* reps;            // --reps N (>= 1)
  double* target_ms;    // --target-ms X
  uint64_t* seed;       // --seed N
  bool* verbose;        // --verbose, -v
};

// The shared options of GemmBenchOptions or MoeBenchOptions (they use the same member names).
template <class Options>
SharedBenchOptions shared_bench_options(Options& o, bool* help) {
  return {.help = help, .quick = &o.quick, .graph = &o.graph, .baseline = &o.baseline, .check = &o.check,
          .max_rel_err = &o.max_rel_err, .csv = &o.csv, .markdown = &o.markdown, .output = &o.output,
          .warmup = &o.warmup, .warmup_ms = &o.warmup_ms, .reps = &o.reps, .target_ms = &o.target_ms, .seed = &o.seed, .verbose = &o.verbose};
}

// --mode w4a16|w4a4|both, which both benchmarks have with their own enum (GemmBenchMode, MoeBenchMode).
template <class Mode>
void read_mode_value(OptionReader& r, Mode* mode) {
  std::string s;
  if (!r.value(&s)) return;
  if (s == "w4a16") *mode = Mode::kW4A16;
  else if (s == "w4a4") *mode = Mode::kW4A4;
  else if (s == "both") *mode = Mode::kBoth;
  else r.error = "--mode: '" + s + "' (w4a16, w4a4 or both)";
}

// A benchmark's own options: reads the option `name` that `r` is at; false: not one of them.
using OwnOptionFn = std::function<bool(OptionReader& r, const std::string& name)>;

// The GEMM and MoE parsers' loop: the shared options, then `own`, else "unknown argument"; then --csv with
// --markdown is an error. false: the first error is in *error (may be null).
bool parse_bench_options(const std::vector<std::string>& args, const SharedBenchOptions& shared,
                         const OwnOptionFn& own, std::string* error);

// parse_gemm_bench_args / parse_moe_bench_args: the shared options and `own`; *options is set only on success.
template <class Options>
bool parse_bench_args(const std::vector<std::string>& args, Options* options, std::string* error, bool* help,
                      bool (*own)(Options& o, OptionReader& r, const std::string& name)) {
  Options o;
  auto read_own = [&](OptionReader& r, const std::string& name) { return own(o, r, name); };
  if (!parse_bench_options(args, shared_bench_options(o, help), read_own, error)) return false;
  *options = o;
  return true;
}

// ---- what the GEMM and MoE benchmark drivers share --------------------------------------------
// Their eager timing options (--warmup, --reps, --target-ms and the adaptive bounds).
struct AdaptiveTiming {
  int warmup = 0;
  int reps = 0;  // > 0: that many timed calls; 0: adaptive
  double target_ms = 0;
  int min_reps = 0, max_reps = 0;
  double warmup_ms = 0;  // > 0: this long of untimed calls after the estimate (the power state settles)
};

// Eager timing with an adaptive number of calls: a short first pass (3 calls after the warm-up)
// estimates the time per call, then warmup_ms worth of untimed calls run (at most 100000), then
// target_ms worth of calls (min_reps..max_reps) are timed.
Status time_adaptive(const CallFn& fn, cudaStream_t stream, const AdaptiveTiming& t, double* median_us);

// A GEMM / MoE report: `head` and `summary` lines around the table(s), which come in each format.
struct ReportText {
  std::string head, summary;
  std::string text, csv, markdown;  // the table(s): aligned text, CSV, markdown
};

// The base of the GEMM and MoE drivers: the device and its stream, the failure count, progress lines,
// and the start, end and report output of their run(). `program` ("fp4kit bench gemm") prefixes errors.
class BenchDriver {
 protected:
  BenchDriver(const char* program, const AdaptiveTiming& timing) : program_(program), timing_(timing) {}
  virtual ~BenchDriver() = default;

  // run()'s start: the device (or "<program>: <error>" on stderr) and a warning off sm_90. false: exit code 2.
  bool start();
  // copy_bw_ from 20 copies of 1 GiB; false after "<program>: copy bandwidth: <error>" (exit code 2).
  bool measure_copy_bandwidth();
  // run()'s end: a note after a sticky CUDA error, print_report(), the stream destroyed; the exit code.
  int finish();
  virtual void print_report() = 0;
  // A line of progress on stderr (flushed).
  void progress(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  Status time_eager(const CallFn& fn, double* median_us) { return time_adaptive(fn, stream_, timing_, median_us); }
  // The report's first lines: device, SMs, L2, compute capability; copy bandwidth.
  std::string device_head() const;
  // The report's last line: "RESULT: PASS" or "RESULT: FAIL (<n> failure(s); ...)".
  std::string result_line() const;
  // The report on stdout as CSV, markdown or text; with `output`, also to that file (CSV if *.csv, else markdown).
  void emit_report(const ReportText& r, bool csv, bool markdown, const std::string& output) const;

  const char* program_;
  cudaStream_t stream_ = nullptr;
  std::string device_name_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0;
  int64_t l2_bytes_ = 0;
  double copy_bw_ = 0;  // bytes/s, read + write
  int failures_ = 0;
  bool sticky_error_ = false;

 private:
  Status setup_device();
  AdaptiveTiming timing_;
};

}  // namespace fp4kit::bench
