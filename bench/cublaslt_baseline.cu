// bench/cublaslt_baseline.cu — cuBLASLt BF16 / FP8 baselines (see cublaslt_baseline.h).
#include "cublaslt_baseline.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace fp4kit::bench {
namespace {

Status cublas_status(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status(StatusCode::kCudaError, std::string("cuBLASLt: ") + what + ": " +
                                            cublasLtGetStatusName(st) + " (" +
                                            cublasLtGetStatusString(st) + ")");
}

Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return Status(StatusCode::kCudaError, std::string("cuBLASLt baseline: ") + what + ": " +
                                            cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                                            ")");
}

#define BL_CUBLAS(expr, what) FP4KIT_RETURN_IF_ERROR(cublas_status((expr), (what)))
#define BL_CUDA(expr, what) FP4KIT_RETURN_IF_ERROR(cuda_status((expr), (what)))

cublasLtHandle_t as_handle(void* h) { return static_cast<cublasLtHandle_t>(h); }

std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
  int32_t id = -1, splitk = 1;
  uint32_t tile = 0, stages = 0, swizzle = 0, reduction = 0, custom = 0;
  uint16_t cluster = 0;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile),
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                       sizeof(stages), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                       sizeof(splitk), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction,
                                       sizeof(reduction), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle,
                                       sizeof(swizzle), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                       sizeof(custom), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                       sizeof(cluster), &written);
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "algo=%d tile=%u stages=%u splitk=%d red=%u swizzle=%u custom=%u cluster=%u", id,
                tile, stages, splitk, reduction, swizzle, custom, unsigned(cluster));
  return buf;
}

}  // namespace

const char* cublaslt_precision_name(CublasLtPrecision p) {
  return p == CublasLtPrecision::kBF16 ? "bf16" : "fp8";
}

// A named struct: nvcc 13.0 in C++20 mode crashes (EDG internal error in
// find_allocated_name_reference) on std::vector of cuBLASLt's anonymous typedef'd structs.
struct CublasLtCandidate {
  cublasLtMatmulAlgo_t algo;
  size_t workspace_bytes;
};

struct CublasLtProblem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  std::vector<CublasLtCandidate> candidates;
  CublasLtAlgoChoice choice;
  bool tuned = false;

  ~CublasLtProblem() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

void CublasLtProblemDeleter::operator()(CublasLtProblem* p) const { delete p; }

CublasLtGemm::CublasLtGemm(size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {}

CublasLtGemm::~CublasLtGemm() {
  cache_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(as_handle(handle_));
}

Status CublasLtGemm::init() {
  if (handle_) return Status::ok();
  cublasLtHandle_t h = nullptr;
  BL_CUBLAS(cublasLtCreate(&h), "cublasLtCreate");
  handle_ = h;
  if (workspace_bytes_ > 0) BL_CUDA(cudaMalloc(&workspace_, workspace_bytes_), "cudaMalloc(workspace)");
  return Status::ok();
}

CublasLtGemm::Key CublasLtGemm::key_of(const CublasLtGemmArgs& a) {
  const bool fast = a.precision == CublasLtPrecision::kFP8 && a.fp8_fast_accum;
  return Key(static_cast<int>(a.precision), a.m, a.n, a.k, fast);
}

void CublasLtGemm::clear_cache() { cache_.clear(); }

const CublasLtAlgoChoice* CublasLtGemm::choice(const CublasLtGemmArgs& args) const {
  auto it = cache_.find(key_of(args));
  if (it == cache_.end() || !it->second->tuned) return nullptr;
  return &it->second->choice;
}

Status CublasLtGemm::get_problem(const CublasLtGemmArgs& args, Problem** out) {
  const char* name = cublaslt_precision_name(args.precision);
  if (args.m <= 0 || args.n <= 0 || args.k <= 0) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("CublasLtGemm(") + name + "): m, n, k must be positive (m=" +
                      std::to_string(args.m) + ", n=" + std::to_string(args.n) +
                      ", k=" + std::to_string(args.k) + ")");
  }
  if (args.precision == CublasLtPrecision::kFP8 && (args.k % 16 != 0 || args.n % 16 != 0)) {
    return Status(StatusCode::kInvalidArgument,
                  "CublasLtGemm(fp8): k and n must be multiples of 16 (cuBLASLt FP8 requirement)");
  }
  FP4KIT_RETURN_IF_ERROR(init());
  const Key key = key_of(args);
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    *out = it->second.get();
    return Status::ok();
  }

  std::unique_ptr<Problem, CublasLtProblemDeleter> pr(new Problem());
  const bool fp8 = args.precision == CublasLtPrecision::kFP8;
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  BL_CUBLAS(cublasLtMatmulDescCreate(&pr->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  BL_CUBLAS(cublasLtMatmulDescSetAttribute(pr->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                           sizeof(trans_a)), "set TRANSA");
  BL_CUBLAS(cublasLtMatmulDescSetAttribute(pr->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                           sizeof(trans_b)), "set TRANSB");
  if (fp8) {
    const int8_t fast = args.fp8_fast_accum ? 1 : 0;
    BL_CUBLAS(cublasLtMatmulDescSetAttribute(pr->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                             sizeof(fast)), "set FAST_ACCUM");
    // The scale pointers take part in the heuristic's choice: set placeholders now (non-null
    // pointers of the right kind), the real ones per call in launch().
    const void* wp = args.w_scale;
    const void* xp = args.x_scale;
    BL_CUBLAS(cublasLtMatmulDescSetAttribute(pr->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &wp,
                                             sizeof(wp)), "set A_SCALE_POINTER");
    BL_CUBLAS(cublasLtMatmulDescSetAttribute(pr->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &xp,
                                             sizeof(xp)), "set B_SCALE_POINTER");
  }
  // A = W: column-major [K, N], ld K (op T). B = X: column-major [K, M], ld K. C = D = Yᵀ [N, M].
  BL_CUBLAS(cublasLtMatrixLayoutCreate(&pr->a, in_type, args.k, args.n, args.k), "layout A");
  BL_CUBLAS(cublasLtMatrixLayoutCreate(&pr->b, in_type, args.k, args.m, args.k), "layout B");
  BL_CUBLAS(cublasLtMatrixLayoutCreate(&pr->c, CUDA_R_16BF, args.n, args.m, args.n), "layout C");
  BL_CUBLAS(cublasLtMatrixLayoutCreate(&pr->d, CUDA_R_16BF, args.n, args.m, args.n), "layout D");

  cublasLtMatmulPreference_t pref = nullptr;
  BL_CUBLAS(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
  const uint64_t ws = workspace_bytes_;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  constexpr int kMaxCandidates = 16;
  cublasLtMatmulHeuristicResult_t results[kMaxCandidates] = {};
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(as_handle(handle_), pr->op, pr->a, pr->b, pr->c, pr->d,
                                        pref, kMaxCandidates, results, &returned);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  BL_CUBLAS(st, "cublasLtMatmulAlgoGetHeuristic");
  for (int i = 0; i < returned; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace_bytes_) {
      pr->candidates.push_back(CublasLtCandidate{results[i].algo, results[i].workspaceSize});
    }
  }
  if (pr->candidates.empty()) {
    return Status(StatusCode::kNotSupported,
                  std::string("CublasLtGemm(") + name + "): the cuBLASLt heuristic returned no " +
                      "algorithm for M=" + std::to_string(args.m) + " N=" + std::to_string(args.n) +
                      " K=" + std::to_string(args.k));
  }
  Problem* raw = pr.get();
  cache_.emplace(key, std::move(pr));
  *out = raw;
  return Status::ok();
}

Status CublasLtGemm::launch(Problem& pr, int candidate, const CublasLtGemmArgs& args,
                            cudaStream_t stream) {
  if (!args.x || !args.w || !args.y) {
    return Status(StatusCode::kInvalidArgument, "CublasLtGemm: x, w and y must be non-null");
  }
  if (reinterpret_cast<uintptr_t>(args.x) % 16 != 0 || reinterpret_cast<uintptr_t>(args.w) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(args.y) % 16 != 0) {
    return Status(StatusCode::kMisaligned, "CublasLtGemm: x, w and y must be 16-byte aligned");
  }
  if (args.precision == CublasLtPrecision::kFP8) {
    if (!args.x_scale || !args.w_scale) {
      return Status(StatusCode::kInvalidArgument,
                    "CublasLtGemm(fp8): x_scale and w_scale (device floats) must be non-null");
    }
    // cuBLASLt answers CUBLAS_STATUS_NOT_SUPPORTED for every algorithm when a scale pointer is
    // only 4-byte aligned (seen on H100, cuBLAS 13.1): say so instead.
    if (reinterpret_cast<uintptr_t>(args.x_scale) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(args.w_scale) % 16 != 0) {
      return Status(StatusCode::kMisaligned,
                    "CublasLtGemm(fp8): x_scale and w_scale must be 16-byte aligned device pointers");
    }
    const void* wp = args.w_scale;
    const void* xp = args.x_scale;
    BL_CUBLAS(cublasLtMatmulDescSetAttribute(pr.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &wp,
                                             sizeof(wp)), "set A_SCALE_POINTER");
    BL_CUBLAS(cublasLtMatmulDescSetAttribute(pr.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &xp,
                                             sizeof(xp)), "set B_SCALE_POINTER");
  }
  const float alpha = args.alpha, beta = 0.0f;
  const CublasLtCandidate& h = pr.candidates[candidate];
  BL_CUBLAS(cublasLtMatmul(as_handle(handle_), pr.op, &alpha, args.w, pr.a, args.x, pr.b, &beta,
                           args.y, pr.c, args.y, pr.d, &h.algo, workspace_, workspace_bytes_,
                           stream),
            "cublasLtMatmul");
  return Status::ok();
}

namespace {

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
  Status create() {
    BL_CUDA(cudaEventCreate(&start), "cudaEventCreate");
    BL_CUDA(cudaEventCreate(&stop), "cudaEventCreate");
    return Status::ok();
  }
};

}  // namespace

Status CublasLtGemm::time_candidate(Problem& pr, int candidate, const CublasLtGemmArgs* variants,
                                    int count, int reps, cudaStream_t stream, float* us) {
  EventPair ev;
  FP4KIT_RETURN_IF_ERROR(ev.create());
  for (int w = 0; w < 2; ++w) FP4KIT_RETURN_IF_ERROR(launch(pr, candidate, variants[w % count], stream));
  BL_CUDA(cudaEventRecord(ev.start, stream), "cudaEventRecord");
  for (int r = 0; r < reps; ++r) {
    FP4KIT_RETURN_IF_ERROR(launch(pr, candidate, variants[r % count], stream));
  }
  BL_CUDA(cudaEventRecord(ev.stop, stream), "cudaEventRecord");
  BL_CUDA(cudaEventSynchronize(ev.stop), "cudaEventSynchronize (a cuBLASLt candidate)");
  float ms = 0.0f;
  BL_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime");
  *us = 1000.0f * ms / static_cast<float>(reps);
  return Status::ok();
}

Status CublasLtGemm::tune(const CublasLtGemmArgs* variants, int count, cudaStream_t stream,
                          int reps) {
  if (!variants || count <= 0) {
    return Status(StatusCode::kInvalidArgument, "CublasLtGemm::tune: no argument sets");
  }
  for (int i = 1; i < count; ++i) {
    if (key_of(variants[i]) != key_of(variants[0])) {
      return Status(StatusCode::kInvalidArgument,
                    "CublasLtGemm::tune: all argument sets must describe the same problem");
    }
  }
  Problem* pr = nullptr;
  FP4KIT_RETURN_IF_ERROR(get_problem(variants[0], &pr));
  reps = std::max(reps, 1);

  int best = -1;
  float best_us = 0.0f, first_us = 0.0f;
  std::string first_error;
  for (int c = 0; c < static_cast<int>(pr->candidates.size()); ++c) {
    float us = 0.0f;
    const Status s = time_candidate(*pr, c, variants, count, reps, stream, &us);
    if (!s.is_ok()) {
      // A launch the heuristic offered but that fails is skipped; a sticky CUDA error is not.
      if (first_error.empty()) first_error = s.message();
      BL_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize after a failed candidate");
      continue;
    }
    if (c == 0) first_us = us;
    if (best < 0 || us < best_us) {
      best = c;
      best_us = us;
    }
  }
  if (best < 0) {
    return Status(StatusCode::kNotSupported,
                  std::string("CublasLtGemm(") + cublaslt_precision_name(variants[0].precision) +
                      "): none of the heuristic's " + std::to_string(pr->candidates.size()) +
                      " candidates ran; first error: " + first_error);
  }
  pr->choice.candidate = best;
  pr->choice.candidates = static_cast<int>(pr->candidates.size());
  pr->choice.us = best_us;
  pr->choice.heuristic_us = first_us;
  pr->choice.workspace_bytes = pr->candidates[best].workspace_bytes;
  pr->choice.description = describe_algo(pr->candidates[best].algo);
  pr->tuned = true;
  return Status::ok();
}

Status CublasLtGemm::run(const CublasLtGemmArgs& args, cudaStream_t stream) {
  Problem* pr = nullptr;
  FP4KIT_RETURN_IF_ERROR(get_problem(args, &pr));
  if (!pr->tuned) FP4KIT_RETURN_IF_ERROR(tune(&args, 1, stream));
  return launch(*pr, pr->choice.candidate, args, stream);
}

Status CublasLtGemm::run_heuristic(const CublasLtGemmArgs& args, cudaStream_t stream) {
  Problem* pr = nullptr;
  FP4KIT_RETURN_IF_ERROR(get_problem(args, &pr));
  return launch(*pr, 0, args, stream);
}

}  // namespace fp4kit::bench
