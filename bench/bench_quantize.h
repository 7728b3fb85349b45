// bench/bench_quantize.h — bandwidth benchmark of the quantization kernels (docs/QUANTIZE.md).
//
//   fp4kit bench quantize [--op nvfp4|mxfp4|mxfp8|dequant] [--dtype bf16|fp16|fp32]
//                         [--layout 128x4|8x4|linear] [--numerics exact|fast|modelopt]
//                         [--variant auto|vectorized|tma] [--m 1,2,...] [--k 128,...] [--quick]
//                         [--csv FILE] [--md FILE] [--iters N] [--graph] [--pdl] [--no-check]
//
// Per point: median time (us), TB/s (bytes = input read + elements written + scale buffer written;
// dequant: elements + scales read + output written), the ratio to the device-to-device copy
// bandwidth measured in the same run, and the kernel the dispatcher chose. Summary: geometric mean
// and minimum of the ratio over the points with M*K >= 2^24.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fp4kit/types.h"

namespace fp4kit::bench {

struct QuantBenchOptions {
  std::string op = "nvfp4";                          // nvfp4 | mxfp4 | mxfp8 | dequant
  BlockFormat dequant_format = BlockFormat::kNVFP4;  // --format, for op dequant
  DType dtype = DType::kBF16;                        // quantize input / dequantize output
  ScaleLayout layout = ScaleLayout::kSwizzled128x4;
  QuantNumerics numerics = QuantNumerics::kExact;
  std::string variant = "auto";  // auto | vectorized | tma (quantize ops)
  std::vector<int64_t> m_list;   // empty: the spec §7 sweep (or the --quick subset)
  std::vector<int64_t> k_list;
  bool quick = false;
  std::string csv_path;
  std::string md_path;
  int iterations = 50;
  int warmup = 5;
  bool graph = false;  // time every point by CUDA-graph replay (default: only points under 20 us)
  bool pdl = false;    // enable_pdl on every call
  bool check = true;   // compare with the CPU reference on points with M*K <= 2^20 (first input set)
  uint64_t seed = 1;
};

// Parses the words after `bench quantize`. false + *error on a bad option; *help on --help/-h.
bool parse_quant_bench_args(const std::vector<std::string>& args, QuantBenchOptions* out, std::string* error,
                            bool* help);
std::string quant_bench_usage();

// Runs the sweep; prints a table and the summary to stdout, writes --csv/--md. Returns 0 on success,
// 1 on a CUDA/API error or a failed check.
int run_quantize_bench(const QuantBenchOptions& options);

// The default sweeps (spec §7) and the --quick subset.
std::vector<int64_t> default_bench_m();
std::vector<int64_t> default_bench_k();
std::vector<int64_t> quick_bench_m();
std::vector<int64_t> quick_bench_k();

}  // namespace fp4kit::bench
