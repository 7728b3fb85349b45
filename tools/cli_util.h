// Helpers of the fp4kit CLI that have no CLI11/CUDA dependency, so tests/tools can test them:
// integer-list syntax, the synthetic Llama-like data of `fp4kit demo`, error metrics and aligned
// text tables.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>


namespace fp4kit::cli {

// Every user-facing error of the CLI: main() prints "fp4kit: error: <what>" and exits non-zero.
class CliError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- option values ------------------------------------------------------------------------------

// Comma-separated items, each one of
//   N                a single value               "4096"
//   START:STOP:xF    START, START*F, ... <= STOP   "1:32768:x2"
//   START:STOP:+S    START, START+S, ... <= STOP   "128:1024:+128"
//   START:STOP       step +1
// Values are positive; a k/K suffix multiplies by 1024 ("4k" = 4096). Order is kept, duplicates are
// dropped. Throws CliError naming the offending item.
std::vector<int64_t> parse_int_list(std::string_view text);
std::string format_int_list(const std::vector<int64_t>& values);  // "1,2,4"


// ---- synthetic data (fp4kit demo) ----------------------------------------------------------------
// Deterministic for a given seed on every machine and thread count: each row has its own
// generator (SplitMix64-seeded xoshiro256**, Box-Muller normals), independent of std:: distributions.

// A [n, k] Llama-like linear-layer weight as BF16 bits: w = 0.02 * row_scale[n] * chan[k] * N(0,1),
// row_scale log-normal (sigma 0.3), and max(1, k/512) outlier input channels with chan = 8..12.
std::vector<uint16_t> synthetic_weight_bf16(int64_t n, int64_t k, uint64_t seed);
// A [m, k] activation as BF16 bits: x = token_scale[m] * chan[k] * N(0,1), token_scale log-normal
// (sigma 0.5), and max(1, k/1024) outlier channels with chan = 20..40 (LLM.int8()-style features).
std::vector<uint16_t> synthetic_activation_bf16(int64_t m, int64_t k, uint64_t seed);

// BF16 bits -> float (exact).
std::vector<float> bf16_to_float(const std::vector<uint16_t>& bits);
// max |x| of BF16 data.
float bf16_amax(const std::vector<uint16_t>& bits);

// D[m, n] = sum_k A[m, k] * B[n, k] in double (FP32 inputs, so each product is exact), threaded.
std::vector<double> matmul_nt_f64(const float* a, const float* b, int64_t m, int64_t n, int64_t k);

// ---- error metrics ---------------------------------------------------------------------------------
struct ErrorStats {
  double rel_fro = 0;   // ||x - ref||_F / ||ref||_F
  double snr_db = 0;    // 10 log10(sum ref^2 / sum (x - ref)^2); +inf when identical
  double max_abs = 0;   // max |x - ref|
  int64_t count = 0;
};
ErrorStats compare(const double* ref, const double* x, int64_t n);
ErrorStats compare(const float* ref, const float* x, int64_t n);
ErrorStats compare(const double* ref, const float* x, int64_t n);

// ---- text report -----------------------------------------------------------------------------------
std::string format_fixed(double v, int decimals);   // "18.73"; "inf" / "nan"
std::string format_sci(double v, int digits = 2);   // "1.23e-03"; "0" for 0
std::string format_bytes(double bytes);             // "80.0 GiB", "50.0 MiB", "512 B"
std::string format_shape(int64_t rows, int64_t cols);  // "4096x4096"
size_t display_width(std::string_view s);               // UTF-8 code points

// A left/right-aligned text table; columns are sized to their widest cell.
class Table {
 public:
  enum class Align { kLeft, kRight };
  // One header per column; `align` defaults to left for the first column, right for the others.
  explicit Table(std::vector<std::string> headers, std::vector<Align> align = {});
  Table& add_row(std::vector<std::string> cells);  // missing cells are empty; extra throw
  // Rows joined by '\n', each prefixed by `indent`, columns separated by two spaces, no trailing
  // blanks; a rule of '-' under the header when `rule` is set; no header line when !header.
  std::string render(const std::string& indent = "  ", bool rule = false, bool header = true) const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace fp4kit::cli
