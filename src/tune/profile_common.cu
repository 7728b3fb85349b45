// Shared profiler pieces (tune/profile_common.h).
#include "tune/profile_common.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "common/gpu_timing.h"
#include "fp4kit/gemm.h"
#include "gemm/prepacked_layout.h"

namespace fp4kit::tune_impl {
namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ uint8_t random_byte(uint64_t seed, int64_t i, int lo, int hi) {
  return uint8_t(lo + int(mix64(seed ^ uint64_t(i) * 0x100000001b3ull) % uint64_t(hi - lo + 1)));
}

__global__ void fill_bytes_kernel(uint8_t* p, int64_t n, uint64_t seed, int lo, int hi) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = random_byte(seed, i, lo, hi);
}

// `count` matrices of `bytes` bytes each: the first code_bytes of each are codes, the rest scales.
__global__ void fill_prepacked_kernel(uint8_t* p, int64_t total, int64_t bytes, int64_t code_bytes, uint64_t seed) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride)
    p[i] = i % bytes < code_bytes ? random_byte(seed, i, 0, 255) : random_byte(seed, i, 0x98, 0xB8);
}

template <class T>
__global__ void fill_half_kernel(T* p, int64_t n, uint64_t seed) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float u = float(mix64(seed ^ uint64_t(i) * 0x100000001b3ull) >> 40) * (1.0f / 16777216.0f);
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
      p[i] = __float2bfloat16(2.0f * u - 1.0f);
    else
      p[i] = __float2half(2.0f * u - 1.0f);
  }
}

}  // namespace

Status cuda_status(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(StatusCode::kCudaError, "tune: " + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

Status DeviceBuffer::alloc(size_t bytes, const char* what) {
  reset();
  return cuda_status(cudaMalloc(&ptr, std::max<size_t>(bytes, 16)),
                     std::string("cudaMalloc ") + what + " (" + std::to_string(bytes) + " bytes)");
}

Status fill_bytes(void* p, int64_t n, uint64_t seed, int lo, int hi, cudaStream_t s) {
  if (n <= 0) return Status::ok();
  fill_bytes_kernel<<<1024, 256, 0, s>>>(static_cast<uint8_t*>(p), n, seed, lo, hi);
  return cuda_status(cudaGetLastError(), "fill kernel");
}

Status fill_half(void* p, int64_t count, DType dtype, uint64_t seed, cudaStream_t s) {
  if (count <= 0) return Status::ok();
  if (dtype == DType::kFP16)
    fill_half_kernel<<<1024, 256, 0, s>>>(static_cast<__half*>(p), count, seed);
  else
    fill_half_kernel<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), count, seed);
  return cuda_status(cudaGetLastError(), "fill 16-bit");
}

Status fill_prepacked(void* p, int64_t count, int64_t n, int64_t k, uint64_t seed, cudaStream_t s) {
  const int64_t bytes = prepacked_weight_bytes(n, k);
  if (count <= 0 || bytes <= 0) return Status::ok();
  const int64_t code_bytes = gemm_impl::prepacked_shape(n, k).code_bytes();
  fill_prepacked_kernel<<<2048, 256, 0, s>>>(static_cast<uint8_t*>(p), count * bytes, bytes, code_bytes, seed);
  return cuda_status(cudaGetLastError(), "fill prepacked weights");
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

Status time_calls(const CallFn& call, int sets, const ProfileOptions& opt, cudaStream_t stream, double* us,
                  double prune_us) {
  int index = 0;
  auto one = [&]() { return call(index++); };
  for (int i = 0; i < std::max(1, opt.warmup); ++i) FP4KIT_RETURN_IF_ERROR(one());
  TUNE_CUDA(cudaStreamSynchronize(stream), "warm-up");
  if (prune_us > 0) {
    detail::CudaEvents e;
    TUNE_CUDA(e.create(2), "cudaEventCreate");
    TUNE_CUDA(cudaEventRecord(e[0], stream), "cudaEventRecord");
    FP4KIT_RETURN_IF_ERROR(one());
    TUNE_CUDA(cudaEventRecord(e[1], stream), "cudaEventRecord");
    TUNE_CUDA(cudaEventSynchronize(e[1]), "pruning call");
    float ms = 0;
    TUNE_CUDA(cudaEventElapsedTime(&ms, e[0], e[1]), "cudaEventElapsedTime");
    if (1000.0 * ms > prune_us)
      return Status(StatusCode::kNotSupported, "pruned: one call took " + std::to_string(int64_t(1000.0 * ms)) +
                                                   " us, more than " + std::to_string(int64_t(prune_us)) + " us");
  }

  // Every input set is used once per replay, so each replay's working set exceeds the L2 target.
  const int batch = std::max({1, opt.graph_batch, sets});
  cudaGraph_t graph = nullptr;
  TUNE_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  const Status cs = [&]() -> Status {
    for (int i = 0; i < batch; ++i) FP4KIT_RETURN_IF_ERROR(one());
    return Status::ok();
  }();
  const cudaError_t ec = cudaStreamEndCapture(stream, &graph);
  if (!cs.is_ok()) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return cs;
  }
  TUNE_CUDA(ec, "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ei = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  TUNE_CUDA(ei, "cudaGraphInstantiate");
  const int reps = std::max(1, opt.repeats);
  std::vector<double> per_call;
  const Status rs = [&]() -> Status {
    detail::CudaEvents e;
    TUNE_CUDA(e.create(size_t(reps) + 1), "cudaEventCreate");
    TUNE_CUDA(cudaGraphLaunch(exec, stream), "cudaGraphLaunch (warm-up)");
    detail::launch_delay(200000ull, stream);  // queue every replay before the first runs
    TUNE_CUDA(cudaGetLastError(), "delay kernel");
    for (int i = 0; i < reps; ++i) {
      TUNE_CUDA(cudaEventRecord(e[size_t(i)], stream), "cudaEventRecord");
      TUNE_CUDA(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    }
    TUNE_CUDA(cudaEventRecord(e[size_t(reps)], stream), "cudaEventRecord");
    TUNE_CUDA(cudaStreamSynchronize(stream), "graph replays");
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      TUNE_CUDA(cudaEventElapsedTime(&ms, e[size_t(i)], e[size_t(i) + 1]), "cudaEventElapsedTime");
      per_call.push_back(1000.0 * ms / batch);
    }
    return Status::ok();
  }();
  cudaGraphExecDestroy(exec);
  FP4KIT_RETURN_IF_ERROR(rs);
  *us = median_of(per_call);
  return Status::ok();
}

}  // namespace fp4kit::tune_impl
