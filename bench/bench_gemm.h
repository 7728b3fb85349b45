// bench/bench_gemm.h — `fp4kit bench gemm`: fp4kit NVFP4 GEMMs (W4A16, W4A4) against cuBLASLt BF16
// and FP8 on LLM linear-layer shapes, in one process, with a correctness check of every point.
// Method, columns and the roofline are defined in docs/BENCH_GEMM.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp4kit::bench {

// One linear layer: Y[M, N] = X[M, K] · W[N, K]ᵀ.
struct GemmBenchShape {
  std::string name;  // e.g. "llama8b.qkv"
  int64_t n = 0;
  int64_t k = 0;
};

enum class GemmBenchMode { kW4A16, kW4A4, kBoth };

// Plain options with defaults; the CLI fills it (parse_gemm_bench_args does the whole job).
struct GemmBenchOptions {
  std::vector<GemmBenchShape> shapes;   // empty: default_gemm_bench_shapes() (6 shapes)
  std::vector<int64_t> m_values;        // empty: default_gemm_bench_m() (1..16384), or the quick set
  bool quick = false;                   // --quick: M in {1, 16, 128, 2048, 8192}
  GemmBenchMode mode = GemmBenchMode::kBoth;  // --mode w4a16|w4a4|both
  int tactic = -1;                      // --tactic ID; -1 = auto (the dispatcher's choice)
  bool all_tactics = false;             // --tactic all: every tactic that can_implement, + best
  bool baseline = true;                 // --no-baseline: skip the cuBLASLt BF16/FP8 rows
  bool fp8_fast_accum = false;          // --fp8-fast-accum: cuBLASLt FP8 fast accumulation
  bool graph = false;                   // --graph: also time CUDA-graph replay (graph_us column)
  bool pdl = false;                     // --pdl: GemmParams::enable_pdl on every fp4kit call
  bool check = true;                    // --no-check: skip the rel_err check (not recommended)
  double max_rel_err = 1e-2;            // --max-rel-err: a point above it FAILS (exit code 1)
  bool csv = false;                     // --csv: print the table as CSV
  bool markdown = false;                // --markdown: print the table as markdown
  std::string output;                   // --output FILE: also write the table (CSV if .csv, else md)
  int warmup = 10;                      // --warmup: untimed calls before timing
  double warmup_ms = 0;                 // --warmup-ms: untimed calls for this long after the estimate
  int reps = 0;                         // --reps: timed calls; 0 = adaptive (target_ms)
  double target_ms = 300.0;             // --target-ms: adaptive timing budget per measurement
  int min_reps = 20;                    // adaptive bounds
  int max_reps = 2000;
  uint64_t seed = 0x5eed;               // --seed: random data
  bool verbose = false;                 // --verbose: cuBLASLt algo choices, per-step progress
};

// Llama-3.1-8B layers and the seed shapes (the shapes of /work/shared/baselines):
//   seed.8192x28672, seed.8192x8192, llama8b.qkv 6144x4096, llama8b.o 4096x4096,
//   llama8b.gate_up 28672x4096, llama8b.down 4096x14336   (N x K)
std::vector<GemmBenchShape> default_gemm_bench_shapes();
std::vector<int64_t> default_gemm_bench_m();  // 1, 2, 4, ..., 16384
std::vector<int64_t> quick_gemm_bench_m();    // 1, 16, 128, 2048, 8192

// Parses `fp4kit bench gemm` arguments (argv without the subcommand words):
//   --quick --shapes LIST --m LIST --mode w4a16|w4a4|both --tactic ID|auto|all --csv --markdown
//   --output FILE --no-baseline --graph --no-check --max-rel-err X --fp8-fast-accum --warmup N --warmup-ms X
//   --reps N --target-ms X --seed N --verbose --help
// LIST for --shapes: comma-separated names (seed, llama8b, all, or one shape's name / its suffix,
// e.g. "qkv") or NxK ("8192x28672"); --m: "1,16,128" or ranges "1:16384:x2". Returns false with
// `error` set on a bad argument; `help` is set for --help (print gemm_bench_usage()).
bool parse_gemm_bench_args(const std::vector<std::string>& args, GemmBenchOptions* options,
                           std::string* error, bool* help = nullptr);
std::string gemm_bench_usage();

// Runs the benchmark and prints the report to stdout (progress to stderr).
// Returns 0 when every point ran and passed its check; 1 when a check failed or a point could not
// run; 2 when the benchmark could not start (no GPU, bad options).
int run_gemm_bench(const GemmBenchOptions& options);

}  // namespace fp4kit::bench
