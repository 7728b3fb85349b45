// bench/cublaslt_baseline.h — cuBLASLt baselines for the GEMM benchmark.
//
//   Y[M,N] = alpha · X[M,K] · W[N,K]ᵀ    (row-major, the layout of an LLM linear layer)
//
//   kBF16: X, W BF16; Y BF16; FP32 compute.
//   kFP8:  X, W FP8 E4M3 with per-tensor FP32 decode scales (device pointers, the
//          CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER attributes); Y BF16; FP32 compute.
//
// Row-major on cuBLASLt's column-major: a row-major [R, C] matrix is a column-major [C, R] one, so
// Y[M,N] row-major is Yᵀ[N,M] column-major, and we compute Yᵀ = W · Xᵀ:
//   A = W  as column-major [K, N] (ld K) with TRANSA = T  -> op(A) = [N, K]
//   B = X  as column-major [K, M] (ld K) with TRANSB = N  -> op(B) = [K, M]
//   D = Y  as column-major [N, M] (ld N)
// This is the "TN" layout (both operands K-major) that FP8 on Hopper requires.
//
// Algorithm choice: cublasLtMatmulAlgoGetHeuristic is asked for up to 16 candidates with a 64 MB
// workspace; each candidate is timed (a few reps, CUDA events) and the fastest is kept, cached per
// problem (precision, M, N, K, fast-accumulation flag).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fp4kit/status.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::bench {

struct CublasLtProblem;  // descriptors + candidate list + choice (defined in the .cu)
struct CublasLtProblemDeleter {
  void operator()(CublasLtProblem* p) const;
};

enum class CublasLtPrecision { kBF16, kFP8 };
const char* cublaslt_precision_name(CublasLtPrecision p);  // "bf16" / "fp8"

struct CublasLtGemmArgs {
  CublasLtPrecision precision = CublasLtPrecision::kBF16;
  int64_t m = 0, n = 0, k = 0;
  // x, w, y: 16-byte aligned, rows contiguous (leading dimensions k, k, n).
  const void* x = nullptr;          // device [m, k] row-major: BF16 (kBF16) or E4M3 (kFP8)
  const void* w = nullptr;          // device [n, k] row-major: BF16 (kBF16) or E4M3 (kFP8)
  void* y = nullptr;                // device [m, n] row-major BF16
  float alpha = 1.0f;               // host scalar, applied on top of the FP8 scales
  // kFP8: device FP32 decode scales (value = e4m3 * scale), 16-byte aligned (cuBLASLt rejects
  // 4-byte-aligned scale pointers with CUBLAS_STATUS_NOT_SUPPORTED for every algorithm).
  const float* x_scale = nullptr;   // of X (the B operand)
  const float* w_scale = nullptr;   // of W (the A operand)
  bool fp8_fast_accum = false;      // kFP8: CUBLASLT_MATMUL_DESC_FAST_ACCUM (off = accurate mode)
};

// What `tune` picked for a problem.
struct CublasLtAlgoChoice {
  int candidate = -1;        // index in the heuristic's list (0 = the heuristic's first choice)
  int candidates = 0;        // how many the heuristic returned (and were timed)
  float us = 0.0f;           // mean time of the winner in the tuning pass
  float heuristic_us = 0.0f; // mean time of candidate 0 in the tuning pass
  size_t workspace_bytes = 0;
  std::string description;   // "algo=.. tile=.. stages=.. splitk=.. swizzle=.. cluster=.."
};

class CublasLtGemm {
 public:
  explicit CublasLtGemm(size_t workspace_bytes = size_t(64) << 20);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Creates the cuBLASLt handle and the workspace (called by tune/run when needed).
  Status init();

  // Times every heuristic candidate for the problem of variants[0] (all variants must describe the
  // same problem; calls rotate among them, e.g. over weight copies that together exceed L2) and
  // caches the fastest. `reps` timed calls per candidate after 2 warm-up calls. Re-tunes when
  // called again for a cached problem.
  Status tune(const CublasLtGemmArgs* variants, int count, cudaStream_t stream, int reps = 5);

  // Y = alpha · X · Wᵀ with the cached choice; tunes on `args` alone first for a new problem.
  // Asynchronous; capturable into a CUDA graph once the problem is tuned.
  Status run(const CublasLtGemmArgs& args, cudaStream_t stream);

  // Runs the heuristic's first candidate without tuning (for reference GEMMs in correctness checks).
  Status run_heuristic(const CublasLtGemmArgs& args, cudaStream_t stream);

  // The cached choice for the problem of `args`, or nullptr.
  const CublasLtAlgoChoice* choice(const CublasLtGemmArgs& args) const;

  // Drops cached problems (descriptors, algorithm choices).
  void clear_cache();

  size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  using Problem = CublasLtProblem;
  using Key = std::tuple<int, int64_t, int64_t, int64_t, bool>;
  static Key key_of(const CublasLtGemmArgs& a);
  Status get_problem(const CublasLtGemmArgs& args, Problem** out);
  Status launch(Problem& pr, int candidate, const CublasLtGemmArgs& args, cudaStream_t stream);
  Status time_candidate(Problem& pr, int candidate, const CublasLtGemmArgs* variants, int count,
                        int reps, cudaStream_t stream, float* us);

  size_t workspace_bytes_;
  void* handle_ = nullptr;     // cublasLtHandle_t
  void* workspace_ = nullptr;  // device
  std::map<Key, std::unique_ptr<Problem, CublasLtProblemDeleter>> cache_;
};

}  // namespace fp4kit::bench
