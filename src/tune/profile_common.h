// What the GEMM and grouped GEMM profilers share: owning CUDA handles, random fills, and the timer
// (warm-up, CUDA-graph replay of a batch of calls behind a device-side delay, CUDA events, median).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fp4kit/status.h"
#include "fp4kit/tune.h"
#include "fp4kit/types.h"

namespace fp4kit::tune_impl {

Status cuda_status(cudaError_t e, const std::string& what);
#define TUNE_CUDA(expr, what) FP4KIT_RETURN_IF_ERROR(::fp4kit::tune_impl::cuda_status((expr), (what)))

struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset() {
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
  }
  Status alloc(size_t bytes, const char* what);
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

// Bytes uniformly in [lo, hi].
Status fill_bytes(void* p, int64_t n, uint64_t seed, int lo, int hi, cudaStream_t s);
// 16-bit floats (kBF16 or kFP16) uniform in [-1, 1).
Status fill_half(void* p, int64_t count, DType dtype, uint64_t seed, cudaStream_t s);
// Random prepacked NVFP4 weights of `count` consecutive [n, k] matrices: any code bytes, valid
// encoded block scales (0.125..2, src/gemm/prepacked_layout.h).
Status fill_prepacked(void* p, int64_t count, int64_t n, int64_t k, uint64_t seed, cudaStream_t s);

double median_of(std::vector<double> v);

// One call of the operation under test; `call` counts from 0 (call i uses input set i % sets).
using CallFn = std::function<Status(int call)>;

// opt.warmup eager calls, then one CUDA graph of max(opt.graph_batch, sets) calls (every set once
// per replay) replayed opt.repeats times back to back, each replay timed with events; *us = median
// replay time / batch. prune_us > 0: one more eager call is timed after the warm-up, and when it
// took longer than prune_us the tactic is skipped (kNotSupported, "pruned ...") without graph timing.
Status time_calls(const CallFn& call, int sets, const ProfileOptions& opt, cudaStream_t stream, double* us,
                  double prune_us = 0);

}  // namespace fp4kit::tune_impl
