// bench/bench_moe.h — `fp4kit bench moe`: the NVFP4 fused MoE layer (fp4kit::fused_moe, W4A16 and
// W4A4) on MoE model shapes and token counts, against cuBLASLt BF16 baselines run in the same
// process, with a CPU-reference check of the small points. Method and columns: docs/MOE.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fp4kit/moe.h"  // MoePath
#include "moe_presets.h"  // MoeBenchPreset, default_moe_bench_presets, parse_moe_bench_presets

namespace fp4kit::bench {

enum class MoeBenchMode { kW4A16, kW4A4, kBoth };
enum class MoeBenchRouting { kUniform, kSkewed, kBoth };

// Plain options with defaults; the CLI fills it with parse_moe_bench_args.
struct MoeBenchOptions {
  std::vector<MoeBenchPreset> presets;   // empty: default_moe_bench_presets() (all six)
  std::vector<int64_t> t_values;         // empty: default_moe_bench_t(), or the quick set
  bool quick = false;                    // --quick: T in {1, 16, 4096}
  MoeBenchMode mode = MoeBenchMode::kBoth;           // --mode w4a16|w4a4|both
  MoeBenchRouting routing = MoeBenchRouting::kUniform;  // --routing uniform|skewed|both
  double zipf_s = 1.2;                   // --zipf S: skewed popularity ~ 1 / rank^S
  bool baseline = true;                  // --no-baseline: skip the cuBLASLt BF16 rows
  bool graph = false;                    // --graph: also time CUDA-graph replay (graph_us)
  bool pdl = false;                      // --pdl: MoeParams::enable_pdl on the timed calls
  bool fp4_input = false;                // --fp4-input: W4A4 takes NVFP4 hidden states (input_dtype kE2M1x2)
  bool check = true;                     // --no-check: skip the CPU-reference checks
  int64_t check_max_t = 16;              // --check-max-t: points with T <= this are checked
  bool reduced_check = true;             // --no-reduced-check: skip the large-T reduced variants
  double max_rel_err = 5e-3;             // --max-rel-err: a checked point above it FAILS
  bool csv = false;                      // --csv: print the table as CSV
  bool markdown = false;                 // --markdown: print the table as markdown
  std::string output;                    // --output FILE: also write (CSV if .csv, else markdown)
  int warmup = 5;                        // --warmup: untimed calls before timing
  double warmup_ms = 0;                  // --warmup-ms: untimed calls for this long after the estimate
  int reps = 0;                          // --reps: timed calls; 0 = adaptive (target_ms)
  double target_ms = 200.0;              // --target-ms: adaptive timing budget per measurement
  int min_reps = 10;
  int max_reps = 1000;
  uint64_t seed = 0x5eed;                // --seed
  int fc1_tactic = -1, fc2_tactic = -1;  // --fc1-tactic / --fc2-tactic: grouped GEMM tactic ids (-1 auto)
  MoePath path = MoePath::kAuto;         // --path auto|pipeline|per-entry (MoeParams::path)
  bool verbose = false;                  // --verbose
};

std::vector<int64_t> default_moe_bench_t();  // 1, 2, 4, 8, 16, 64, 256, 1024, 4096, 16384
std::vector<int64_t> quick_moe_bench_t();    // 1, 16, 4096

// Parses `fp4kit bench moe` arguments (argv without the subcommand words):
//   --preset LIST|all --t LIST --quick --mode w4a16|w4a4|both --routing uniform|skewed|both --zipf S
//   --graph --pdl --no-baseline --no-check --check-max-t N --no-reduced-check --max-rel-err X --csv
//   --markdown --output FILE --warmup N --warmup-ms X --reps N --target-ms X --seed N --fc1-tactic ID --fc2-tactic ID
//   --path auto|pipeline|per-entry --verbose --help
// --preset: comma-separated preset names, "all", or HxExKxI (e.g. 2048x64x4x512).
// --t: "1,16,256" or ranges "1:16384:x4". Returns false with `error` set on a bad argument; `help`
// is set for --help (print moe_bench_usage()).
bool parse_moe_bench_args(const std::vector<std::string>& args, MoeBenchOptions* options, std::string* error,
                          bool* help = nullptr);
std::string moe_bench_usage();

// Runs the benchmark and prints the report to stdout (progress to stderr). Returns 0 when every
// point ran and every check passed; 1 when a check failed or a point could not run; 2 when the
// benchmark could not start (no GPU, bad options).
int run_moe_bench(const MoeBenchOptions& options);

}  // namespace fp4kit::bench
