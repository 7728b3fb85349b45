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
  std::string error;

 private:
  const std::vector<std::string>& args_;
  size_t i_ = 0;
  bool started_ = false, has_inline_ = false;
  std::string name_, inline_value_;
};

}  // namespace fp4kit::bench
